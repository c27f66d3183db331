package gitsync

import (
	"context"
	"maps"
	"path/filepath"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/render"
)

// TestChangedCommitsTheSameTree: a commit told which paths changed
// (Changed) makes the tree a whole-tree commit makes — files changed,
// added and removed, a directory emptied, a file turned into a
// directory — and a hint for another tree, or for a tip that moved, is
// not used. After a scoped push the Repo's current files are the pushed
// tree, not read again.
func TestChangedCommitsTheSameTree(t *testing.T) {
	base := tenantTree("v1", "o/c/a", "o/c/b", "o/d/x")
	for _, tc := range []struct {
		name   string
		change func(render.Tree) []string
		other  bool // the hint is given for a copy, not the tree committed
		scoped bool // the commit patches the hinted paths in
	}{
		{"a file changes", func(t render.Tree) []string {
			t["o/c/a/namespace.yaml"] = []byte("changed\n")
			return []string{"o/c/a/namespace.yaml"}
		}, false, true},
		{"a tenant comes and one goes", func(t render.Tree) []string {
			t["o/c/n/kustomization.yaml"] = []byte("new\n")
			delete(t, "o/c/b/kustomization.yaml")
			delete(t, "o/c/b/namespace.yaml")
			return []string{"o/c/n/kustomization.yaml", "o/c/b/kustomization.yaml", "o/c/b/namespace.yaml"}
		}, false, true},
		{"a directory empties", func(t render.Tree) []string {
			delete(t, "o/d/x/kustomization.yaml")
			delete(t, "o/d/x/namespace.yaml")
			return []string{"o/d/x/kustomization.yaml", "o/d/x/namespace.yaml"}
		}, false, true},
		{"a file becomes a directory", func(t render.Tree) []string {
			delete(t, "o/c/a/namespace.yaml")
			t["o/c/a/namespace.yaml/x"] = []byte("deeper\n")
			return []string{"o/c/a/namespace.yaml", "o/c/a/namespace.yaml/x"}
		}, false, true},
		{"a directory becomes a file: built whole", func(t render.Tree) []string {
			delete(t, "o/d/x/kustomization.yaml")
			delete(t, "o/d/x/namespace.yaml")
			t["o/d/x"] = []byte("flat\n")
			return []string{"o/d/x", "o/d/x/kustomization.yaml", "o/d/x/namespace.yaml"}
		}, false, false},
		{"a hint for another tree", func(t render.Tree) []string {
			t["o/c/a/namespace.yaml"] = []byte("changed\n")
			return nil // nothing changed, says the hint: ignored
		}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "r.git")
			gittest.InitBare(t, dir, "main")
			scopedRepo, whole := open(t, dir, "waldur", nil), open(t, filepath.Join(t.TempDir(), "w.git"), "waldur", nil)
			gittest.InitBare(t, whole.opts.URL, "main")
			for _, r := range []*Repo{scopedRepo, whole} {
				if _, err := Sync(ctx, r, planOf(base, "first"), 0); err != nil {
					t.Fatal(err)
				}
			}
			next := maps.Clone(base)
			paths := tc.change(next)
			hinted := func(render.Tree) (render.Tree, string, error) {
				if tc.other {
					scopedRepo.Changed(maps.Clone(next), paths)
				} else {
					scopedRepo.Changed(next, paths)
				}
				return next, "second", nil
			}
			if _, err := Sync(ctx, scopedRepo, hinted, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := Sync(ctx, whole, planOf(next, "second"), 0); err != nil {
				t.Fatal(err)
			}
			if a, b := gittest.Git(t, dir, "rev-parse", "main^{tree}"), gittest.Git(t, whole.opts.URL, "rev-parse", "main^{tree}"); a != b {
				t.Fatalf("tree %s, the whole-tree commit's %s", a, b)
			}
			if kept := scopedRepo.cur != nil && sameMap(scopedRepo.cur, next); kept != tc.scoped {
				t.Fatalf("the Repo holds the pushed tree after the push: %v, want %v (a scoped commit)", kept, tc.scoped)
			}
		})
	}
}

// TestChangedIgnoredWhenTheTipMoved: a hint given on one tip is not used
// on another, whose files it does not describe.
func TestChangedIgnoredWhenTheTipMoved(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "r.git")
	gittest.InitBare(t, dir, "main")
	r := open(t, dir, "waldur", nil)
	base := tenantTree("v1", "o/c/a", "o/c/b")
	if _, err := Sync(ctx, r, planOf(base, "first"), 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	next := maps.Clone(base)
	next["o/c/a/namespace.yaml"] = []byte("changed\n")
	r.Changed(next, nil) // claims nothing changed, on the tip fetched
	gittest.Commit(t, dir, "main", map[string]string{"waldur/o/c/b/namespace.yaml": "by hand\n"}, "hand edit")
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, next, "second"); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	files := gittest.Files(t, dir, "main")
	if files["waldur/o/c/a/namespace.yaml"] != "changed\n" || files["waldur/o/c/b/namespace.yaml"] != string(base["o/c/b/namespace.yaml"]) {
		t.Fatalf("the commit used a hint made for another tip: %v", files)
	}
}
