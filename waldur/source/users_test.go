package source_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestRefreshUsersReadsOnlyTheNamedUsers: after an offering_user event, a
// refresh of the resources of the user's project and of the user reads the
// user alone (no listing of offering users) and gives the users and teams a
// full read gives; the last state is left as it was.
func TestRefreshUsersReadsOnlyTheNamedUsers(t *testing.T) {
	srv := waldurtest.New(t)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	project := waldur.UUID("0aa00000000040008000000000000001")
	res := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "alpha", ProjectUUID: project,
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Limits: waldur.Limits{"cpu": "1"}})
	alice := srv.AddOfferingUser(offeringUUID, waldur.OfferingUser{Username: "alice", UserUUID: "0bb00000000040008000000000000001", UserEmail: "alice@example.org"})
	srv.AddOfferingUser(offeringUUID, waldur.OfferingUser{Username: "bob", UserUUID: "0bb00000000040008000000000000002"})
	srv.SetTeam(project, []waldur.TeamMember{{UUID: "0bb00000000040008000000000000001", Username: "alice", Role: "PROJECT.ADMIN", OfferingUserUsername: "alice", OfferingUserState: "OK"}})
	src := &source.API{Offerings: []config.Offering{{Name: "Plain", WaldurAPIURL: srv.URL(), WaldurOfferingUUID: offeringUUID}}}
	ctx := context.Background()
	last, err := src.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := last.Offerings[0].OfferingUsers[0]

	srv.SetOfferingUserState(alice, waldur.OfferingUserRequestedDeletion)
	ctx, tally := waldur.WithTally(ctx)
	got, err := src.Refresh(ctx, last, []waldur.UUID{res})
	if err == nil {
		err = src.RefreshUsers(ctx, got, []waldur.UUID{alice})
	}
	if err != nil {
		t.Fatal(err)
	}
	if calls := tally.Stats().Requests; calls[waldur.KindOfferingUsersList] != 0 || calls[waldur.KindOfferingUserGet] != 1 {
		t.Errorf("calls %v, want one offering user read and no listing", calls)
	}
	full, err := src.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g, f := got.Offerings[0], full.Offerings[0]
	if !reflect.DeepEqual(g.OfferingUsers, f.OfferingUsers) || !reflect.DeepEqual(g.Teams, f.Teams) {
		t.Errorf("refreshed users %+v teams %+v\nfull read users %+v teams %+v", g.OfferingUsers, g.Teams, f.OfferingUsers, f.Teams)
	}
	if g.OfferingUsers[0].State != waldur.OfferingUserRequestedDeletion {
		t.Errorf("alice is %q after the refresh", g.OfferingUsers[0].State)
	}
	if last.Offerings[0].OfferingUsers[0] != before {
		t.Error("the refresh changed the last state")
	}
}
