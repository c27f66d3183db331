package gitsync

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
)

// A review branch on the smart-HTTP server: created on the pushed tip with
// the risky tree, seen (with its age) by the next fetch, moved when its tree
// changes, left alone when it does not, and deleted.
func TestReviewBranchLifecycle(t *testing.T) {
	srv, url, dir := httpRepo(t)
	// Like a hosting service: main may not be rewritten, other branches
	// may be deleted.
	gittest.Git(t, dir, "config", "receive.denyDeletes", "false")
	ctx := context.Background()
	r := open(t, url, "waldur", auth(srv))
	base := tenantTree("v1", "o/cluster/a", "o/cluster/b")
	if _, err := Sync(ctx, r, planOf(base, "base"), 0); err != nil {
		t.Fatal(err)
	}
	mainTip := gittest.Head(t, dir, "main")

	// b removed, for review.
	risky := tenantTree("v1", "o/cluster/a")
	name := ReviewPrefix + "0123abcd"
	h, err := r.PushReview(ctx, name, risky, "remove b")
	if err != nil || h == "" {
		t.Fatalf("push review: %q %v", h, err)
	}
	if got := gittest.Head(t, dir, name); got != h {
		t.Errorf("branch at %s, pushed %s", got, h)
	}
	if log := gittest.Log(t, dir, name); len(log) < 2 || !strings.HasPrefix(log[1], mainTip) {
		t.Errorf("the review commit is not on the main tip %s: %v", mainTip, log)
	}
	files := under(gittest.Files(t, dir, name), "waldur")
	if _, ok := files["o/cluster/b/namespace.yaml"]; ok || files["o/cluster/a/namespace.yaml"] == "" {
		t.Errorf("review tree %v", files)
	}
	if gittest.Head(t, dir, "main") != mainTip {
		t.Error("main moved")
	}

	// The next fetch sees it, with its commit time.
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	bs := r.ReviewBranches()
	if len(bs) != 1 || bs[0].Name != name || bs[0].Commit != h || bs[0].Time.IsZero() {
		t.Fatalf("branches %+v", bs)
	}
	// The same tree again on the same tip: nothing to push.
	if h2, err := r.PushReview(ctx, name, base, "nothing"); err != nil || h2 != "" {
		t.Errorf("unchanged: %q %v", h2, err)
	}
	// Another tree: the branch moves from what the fetch saw.
	h3, err := r.PushReview(ctx, name, tenantTree("v2", "o/cluster/a"), "remove b, a changed")
	if err != nil || h3 == "" || gittest.Head(t, dir, name) != h3 {
		t.Fatalf("move: %q %v", h3, err)
	}
	// Deleted.
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteReview(ctx, name); err != nil {
		t.Fatal(err)
	}
	if out, err := gittest.GitErr(dir, nil, "rev-parse", "--verify", "refs/heads/"+name); err == nil {
		t.Errorf("the branch is still there: %s", out)
	}
	if err := r.Fetch(ctx); err != nil || len(r.ReviewBranches()) != 0 {
		t.Errorf("after delete: %v %+v", err, r.ReviewBranches())
	}
}

// A review branch a server hook declines fails with ErrDeclined and what the
// hook printed, over the smart-HTTP transport, as a declined push to main
// does (TestDeclinedPushSaysWhy); main is untouched.
func TestDeclinedReviewBranchSaysWhy(t *testing.T) {
	srv, url, dir := httpRepo(t)
	r := open(t, url, "waldur", auth(srv))
	if _, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a", "o/cluster/b"), "base"), 0); err != nil {
		t.Fatal(err)
	}
	mainTip := gittest.Head(t, dir, "main")
	installHook(t, dir, "#!/bin/sh\necho 'review branches must be opened by a person' >&2\nexit 1\n")
	_, err := r.PushReview(t.Context(), ReviewPrefix+"0123abcd", tenantTree("v1", "o/cluster/a"), "remove b")
	if !errors.Is(err, ErrDeclined) || errors.Is(err, ErrRaced) {
		t.Fatalf("err = %v: want ErrDeclined, not ErrRaced", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "declined the push to "+ReviewPrefix+"0123abcd") || !strings.Contains(msg, "review branches must be opened by a person") {
		t.Errorf("error does not say why:\n%s", msg)
	}
	if gittest.Head(t, dir, "main") != mainTip {
		t.Error("main moved")
	}
}
