package waldur_test

import (
	"context"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestOfferingUserDeletion drives offering users through the test server's
// deletion state machine with the client: a claim is allowed from Requested
// deletion and Error deleting only, set_deleted and set_error_deleting from
// Deleting only; a refusal is a 400 that IsRefusedClaim recognises, and the
// team listing follows the user's state.
func TestOfferingUserDeletion(t *testing.T) {
	ctx := context.Background()
	claim := func(c *waldur.Client, id waldur.UUID) error { return c.SetOfferingUserDeleting(ctx, id) }
	deleted := func(c *waldur.Client, id waldur.UUID) error { return c.SetOfferingUserDeleted(ctx, id) }
	failed := func(c *waldur.Client, id waldur.UUID) error { return c.SetOfferingUserErrorDeleting(ctx, id) }
	tests := []struct {
		name, from  string
		run         func(*waldur.Client, waldur.UUID) error
		wantRefused bool
		want        string
	}{
		{"claim a request", waldur.OfferingUserRequestedDeletion, claim, false, waldur.OfferingUserDeleting},
		{"claim again after an error", waldur.OfferingUserErrorDeleting, claim, false, waldur.OfferingUserDeleting},
		{"claim refused: granted again", "OK", claim, true, "OK"},
		{"claim refused: claimed already", waldur.OfferingUserDeleting, claim, true, waldur.OfferingUserDeleting},
		{"claim refused: deleted", waldur.OfferingUserDeleted, claim, true, waldur.OfferingUserDeleted},
		{"deleted from deleting", waldur.OfferingUserDeleting, deleted, false, waldur.OfferingUserDeleted},
		{"deleted refused before a claim", waldur.OfferingUserRequestedDeletion, deleted, true, waldur.OfferingUserRequestedDeletion},
		{"error from deleting", waldur.OfferingUserDeleting, failed, false, waldur.OfferingUserErrorDeleting},
		{"error refused when OK", "OK", failed, true, "OK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t)
			res := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA, State: waldur.ResourceOK})
			id := srv.AddOfferingUser(offering, waldur.OfferingUser{Username: "alice", State: tt.from})
			srv.SetTeam(projectA, []waldur.TeamMember{{Username: "alice@example.org", Role: "PROJECT.MEMBER", OfferingUserUsername: "alice", OfferingUserState: tt.from}})
			c := clientFor(t, srv)
			err := tt.run(c, id)
			if got := waldur.IsRefusedClaim(err); got != tt.wantRefused || (err != nil && !got) {
				t.Fatalf("err = %v, refused %v, want refused %v", err, got, tt.wantRefused)
			}
			if got := srv.OfferingUserState(id); got != tt.want {
				t.Errorf("state = %q, want %q", got, tt.want)
			}
			team, err := c.Team(ctx, res)
			if err != nil {
				t.Fatal(err)
			}
			if len(team) != 1 || team[0].OfferingUserState != tt.want {
				t.Errorf("team = %+v, want offering_user_state %q", team, tt.want)
			}
			if v := srv.Violations(); len(v) > 0 {
				t.Errorf("contract violations: %v", v)
			}
		})
	}
}
