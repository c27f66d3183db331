package cli

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/review"
	"github.com/waldur/waldur-gitops/waldur"
)

// With review.risky: branch, a member taken out of a project's team is a
// risky change: the tenants whose manifests name the member wait on a review
// branch, and Keycloak keeps the member in those tenants' groups until a
// person merges it, so that Keycloak takes nothing away that main still
// grants. Groups of tenants whose manifests do not change lose the member at
// once; after the merge the next sync removes the rest.
func TestReviewHoldsKeycloakRemovals(t *testing.T) {
	wsrv, waldurCfg := serveExample(t)
	kc := kctest.NewServer()
	defer kc.Close()
	gsrv, repo, url := gitRepo(t)
	gittest.Git(t, repo, "config", "receive.denyDeletes", "false") // merged review branches are deleted
	cfg := withGit(t, keycloakConfigFrom(t, waldurCfg, kc.URL, "", true), gsrv, url)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, []byte("\nreview:\n  risky: branch\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	addExampleUsers(t, kc, cfg)
	sync := func(what string) report.Run {
		t.Helper()
		code, stdout, stderr := run(t, "sync", "--config", cfg, "--output", "json")
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s", what, code, stderr)
		}
		return readReport(t, []byte(stdout))
	}
	sync("first sync")

	// Ana leaves the Genome Lab project (she stays in another one).
	const project, leaver = "e28e8a742f1e7e07ad8b7dafb922cf59", "ana@idp.example.edu"
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	wsrv.SetTeam(project, slices.DeleteFunc(slices.Clone(snap.Offerings[0].Teams[project]), func(m waldur.TeamMember) bool { return m.Username == leaver }))

	rep := sync("the member leaves")
	routed := map[string]bool{}
	for _, e := range rep.Changes {
		if e.Kind == review.ChangeKind {
			routed[e.Resource] = true
		}
	}
	if len(rep.ReviewBranches) != 1 || len(routed) == 0 {
		t.Fatalf("the member removal was not routed: branches %v, routed %v", rep.ReviewBranches, routed)
	}
	held := kept(rep)
	if len(held) == 0 {
		t.Fatal("no Keycloak membership was kept for the review")
	}
	for _, e := range held {
		if !strings.Contains(e.Reason, "kept until its review is merged: waits on review branch "+rep.ReviewBranches[0].Name) {
			t.Errorf("%s: reason %q", e.Subject, e.Reason)
		}
		path, user, _ := strings.Cut(e.Subject, " ")
		if !slices.Contains(members(kc, path), user) {
			t.Errorf("%s lost %s before the review was merged", path, user)
		}
	}
	for _, e := range memberships(rep, changeset.Delete) {
		if e.Resource == "" || routed[e.Resource] {
			t.Errorf("%s removed although resource %q waits on review", e.Subject, e.Resource)
		}
	}

	// A person merges the review branch (a fast-forward).
	gittest.Git(t, repo, "update-ref", "refs/heads/main", "refs/heads/"+rep.ReviewBranches[0].Name)
	rep = sync("after the merge")
	if left := kept(rep); len(left) != 0 {
		t.Errorf("memberships still held after the merge: %v", left)
	}
	removed := memberships(rep, changeset.Delete)
	if len(removed) != len(held) {
		t.Errorf("after the merge %d memberships removed, %d were held", len(removed), len(held))
	}
	for _, e := range held {
		path, user, _ := strings.Cut(e.Subject, " ")
		if slices.Contains(members(kc, path), user) {
			t.Errorf("%s still has %s after the merge", path, user)
		}
	}
}

// members returns the members of the group at path in either realm of the
// example.
func members(kc *kctest.Server, path string) []string {
	for _, realm := range []string{"hpc", "waldur"} {
		if g, ok := kc.Group(realm, path); ok {
			return g.Members
		}
	}
	return nil
}

// kept returns the report's Keycloak memberships kept for a review.
func kept(r report.Run) []changeset.Entry {
	var out []changeset.Entry
	for _, e := range memberships(r, changeset.Unchanged) {
		if strings.HasPrefix(e.Reason, "kept until its review is merged") {
			out = append(out, e)
		}
	}
	return out
}

// memberships returns the report's Keycloak membership entries of action a.
func memberships(r report.Run, a changeset.Action) []changeset.Entry {
	var out []changeset.Entry
	for _, e := range r.Changes {
		if e.Kind == keycloak.KindMembership && e.Action == a {
			out = append(out, e)
		}
	}
	return out
}
