package offboard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

func testConfig() *config.Config {
	return &config.Config{Offerings: []config.Offering{{Name: "ns", Settings: config.Settings{Namespace: &config.NamespaceSettings{UserPrefix: "oidc:"}}}}}
}

// testState is one offering with a project of two members, ann and bob,
// bob in state.
func testState(state string) *waldur.State {
	return &waldur.State{Offerings: []waldur.OfferingState{{
		Name: "ns",
		Teams: map[waldur.UUID][]waldur.TeamMember{"p1": {
			{Username: "ann@idp", OfferingUserUsername: "ann", OfferingUserState: "OK"},
			{Username: "bob@idp", OfferingUserUsername: "bob", OfferingUserState: state},
		}},
		OfferingUsers: []waldur.OfferingUser{
			{UUID: "a1", Username: "ann", State: "OK"},
			{UUID: "b1", Username: "bob", State: state, UserEmail: "Bob@example.org"},
		},
	}}}
}

// TestClaimWithoutWaldur: a run that sends nothing (a snapshot, a dry run)
// makes the claims in its state only, so that the render leaves the users
// out, and gives the guard the names they have in grants; other states are
// left as they are.
func TestClaimWithoutWaldur(t *testing.T) {
	for _, tt := range []struct {
		state       string
		wantEntries int
		wantState   string
		leaving     bool
	}{
		{waldur.OfferingUserRequestedDeletion, 1, waldur.OfferingUserDeleting, true},
		{waldur.OfferingUserErrorDeleting, 1, waldur.OfferingUserDeleting, true},
		{waldur.OfferingUserDeleting, 0, waldur.OfferingUserDeleting, true},
		{waldur.OfferingUserDeleted, 0, waldur.OfferingUserDeleted, false},
		{"OK", 0, "OK", false},
	} {
		t.Run(tt.state, func(t *testing.T) {
			w := &Workflow{Config: testConfig()}
			st := testState(tt.state)
			r, leaving, err := w.Claim(context.Background(), st, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Changes.Entries) != tt.wantEntries {
				t.Errorf("entries %v, want %d", r.Changes.Entries, tt.wantEntries)
			}
			ost := st.Offerings[0]
			if got := ost.OfferingUsers[1].State; got != tt.wantState {
				t.Errorf("bob is %q, want %q", got, tt.wantState)
			}
			if got := ost.Teams["p1"][1].OfferingUserState; got != tt.wantState {
				t.Errorf("bob's team entry is %q, want %q", got, tt.wantState)
			}
			if ost.Teams["p1"][0].OfferingUserState != "OK" {
				t.Error("ann's team entry changed")
			}
			for _, name := range []string{"bob", "oidc:bob", "Bob@example.org", "oidc:bob@example.org"} {
				if _, ok := leaving[name]; ok != tt.leaving {
					t.Errorf("guard name %q leaving %v, want %v (%v)", name, ok, tt.leaving, leaving)
				}
			}
			if _, ok := leaving["ann"]; ok {
				t.Error("ann is leaving")
			}
		})
	}
}

// TestBlocked: the removal is in effect when the destination holds every
// tenant of the offering that named the user as rendered.
func TestBlocked(t *testing.T) {
	o := &testConfig().Offerings[0]
	x := &user{o: o, u: &waldur.OfferingUser{UUID: "b1", Username: "bob"}}
	rb := func(names ...string) []byte {
		s := "kind: RoleBinding\nsubjects:\n"
		for _, n := range names {
			s += "- kind: User\n  name: " + n + "\n"
		}
		return []byte(s)
	}
	res := &render.Result{Tenants: []*render.Tenant{{Offering: "ns", Dir: "ns/cluster/t1", Files: []render.File{{Name: "rolebinding-edit.yaml", Data: rb("oidc:ann")}}}}}
	for _, tt := range []struct {
		name string
		pub  *Published
		want string
	}{
		{"nothing published", nil, "nothing was published"},
		{"incomplete", &Published{Incomplete: true}, "did not complete"},
		{"as rendered", &Published{After: render.Tree{"ns/cluster/t1/rolebinding-edit.yaml": rb("oidc:ann")}}, ""},
		{"still bound", &Published{After: render.Tree{"ns/cluster/t1/rolebinding-edit.yaml": rb("oidc:ann", "oidc:bob")}}, "tenant ns/cluster/t1 still grants the user access"},
		{"a kept tenant names him", &Published{After: render.Tree{
			"ns/cluster/t1/rolebinding-edit.yaml": rb("oidc:ann"), "ns/cluster/t2/rolebinding-edit.yaml": rb("oidc:bob"),
		}}, "tenant ns/cluster/t2 still grants"},
		{"a kept tenant without him", &Published{After: render.Tree{
			"ns/cluster/t1/rolebinding-edit.yaml": rb("oidc:ann"), "ns/cluster/t2/rolebinding-edit.yaml": rb("oidc:bobby"),
		}}, ""},
		{"not applied", &Published{Applied: true, After: render.Tree{}}, "tenant ns/cluster/t1 was not applied"},
		{"another offering", &Published{After: render.Tree{"ns/cluster/t1/rolebinding-edit.yaml": rb("oidc:ann"), "other/cluster/t1/rolebinding-edit.yaml": rb("oidc:bob")}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := blocked(x, res, tt.pub, nil)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("blocked() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestProveWithoutKeycloak: an offering without Keycloak is proved by the
// destination alone; the record names the commit and says the cluster was
// not read; a dry run sends nothing.
func TestProveWithoutKeycloak(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name       string
		pub        *Published
		wantState  string
		wantCause  changeset.Cause
		wantCommit string
	}{
		{"committed", &Published{Ref: "c2", Base: "c1", After: render.Tree{}}, waldur.OfferingUserDeleted, "", "c2"},
		{"on the branch already", &Published{Base: "c1", After: render.Tree{}}, waldur.OfferingUserDeleted, "", "c1"},
		{"still bound", &Published{Base: "c1", After: render.Tree{"ns/cluster/t1/rolebinding-x.yaml": []byte("subjects:\n- kind: User\n  name: oidc:bob\n")}}, waldur.OfferingUserDeleting, changeset.CauseRemovalPending, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &Workflow{Config: testConfig(), Now: func() time.Time { return now }}
			if _, _, err := w.Claim(context.Background(), testState(waldur.OfferingUserRequestedDeletion), true); err != nil {
				t.Fatal(err)
			}
			r, recs, err := w.Prove(context.Background(), &render.Result{}, tt.pub, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || len(r.Changes.Entries) != 1 {
				t.Fatalf("records %+v, entries %v", recs, r.Changes.Entries)
			}
			rec := recs[0]
			if rec.State != tt.wantState || rec.Cause != tt.wantCause || rec.Commit != tt.wantCommit {
				t.Errorf("record %+v, want %s %q commit %q", rec, tt.wantState, tt.wantCause, tt.wantCommit)
			}
			if tt.wantState == waldur.OfferingUserDeleted && (rec.Verified != VerifiedBranch || !rec.AccessEndedAt.Equal(now)) {
				t.Errorf("record %+v: want verified on the branch, access ended at %v", rec, now)
			}
			if e := r.Changes.Entries[0]; tt.wantCause == "" && !strings.HasPrefix(e.Reason, "would move") {
				t.Errorf("a dry run's entry %v does not say would", e)
			}
		})
	}
}

func TestMentions(t *testing.T) {
	ids := map[string]bool{"bob": true}
	for _, tt := range []struct {
		data string
		want bool
	}{
		{"subjects:\n- kind: User\n  name: bob\n", true},
		{"spec:\n  rwUsers:\n  - bob\n", true},
		{"spec:\n  rwUsers:\n  - \"bob\"\n", true},
		{"spec:\n  rwUsers:\n  - bobby\n", false},
		{"metadata:\n  name: waldur-bob\n", false},
	} {
		if got := mentions([]byte(tt.data), ids); got != tt.want {
			t.Errorf("mentions(%q) = %v, want %v", tt.data, got, tt.want)
		}
	}
}

// fakeCluster answers Get from objects by "Kind namespace/name".
type fakeCluster struct {
	objects map[string]string
	gets    int
}

func (f *fakeCluster) Get(_ context.Context, _ *config.Offering, _ string, ref ObjectRef) ([]byte, bool, error) {
	f.gets++
	d, ok := f.objects[ref.String()]
	return []byte(d), ok, nil
}

// TestAtCluster: the objects granting access in the offering's tenants, as
// committed and as before, are read from the cluster once each; the
// removal is in effect when none of them names the user any more.
func TestAtCluster(t *testing.T) {
	o := &testConfig().Offerings[0]
	x := &user{o: o, u: &waldur.OfferingUser{UUID: "b1", Username: "bob"}}
	rb := "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: waldur-edit\n  namespace: t1\nsubjects:\n- kind: User\n  name: oidc:ann\n"
	pub := &Published{
		Before: render.Tree{"ns/cluster/t1/rolebinding-waldur-edit.yaml": []byte(rb + "- kind: User\n  name: oidc:bob\n")},
		After:  render.Tree{"ns/cluster/t1/rolebinding-waldur-edit.yaml": []byte(rb), "ns/cluster/t1/namespace-t1.yaml": []byte("kind: Namespace\n")},
	}
	for _, tt := range []struct {
		name    string
		objects map[string]string
		want    string
	}{
		{"not applied yet", map[string]string{"RoleBinding t1/waldur-edit": rb + "- kind: User\n  name: oidc:bob\n"}, "the cluster's RoleBinding t1/waldur-edit still names the user"},
		{"applied", map[string]string{"RoleBinding t1/waldur-edit": rb}, ""},
		{"gone", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCluster{objects: tt.objects}
			seen := map[string][]byte{}
			got, err := atCluster(context.Background(), c, x, pub, seen)
			if err != nil || !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("atCluster() = %q, %v, want %q", got, err, tt.want)
			}
			if _, err := atCluster(context.Background(), c, x, pub, seen); err != nil || c.gets != 1 {
				t.Errorf("%d reads for one binding over two users (%v), want 1", c.gets, err)
			}
		})
	}
}
