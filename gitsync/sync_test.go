package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/render"
)

// fakeWriter is an in-memory Writer: a branch that other writers can move.
type fakeWriter struct {
	remote   []render.Tree // commits of the branch, oldest first
	fetched  int           // index of the fetched tip, -1 for none
	pending  render.Tree
	fetches  int
	fetchErr error
	// beforePush runs at the start of every Push.
	beforePush func()
}

func (f *fakeWriter) Fetch(context.Context) error {
	f.fetches++
	if f.fetchErr != nil {
		return f.fetchErr
	}
	f.fetched, f.pending = len(f.remote)-1, nil
	return nil
}

func (f *fakeWriter) Tip() string {
	if f.fetched < 0 {
		return ""
	}
	return fmt.Sprint("c", f.fetched)
}

func (f *fakeWriter) Current(context.Context) (render.Tree, error) {
	if f.fetched < 0 {
		return render.Tree{}, nil
	}
	return f.remote[f.fetched], nil
}

func (f *fakeWriter) Commit(_ context.Context, t render.Tree, _ string) (string, error) {
	if f.fetched >= 0 && sameTree(f.remote[f.fetched], t) {
		return "", nil
	}
	f.pending = t
	return fmt.Sprint("c", f.fetched+1), nil
}

func (f *fakeWriter) Push(context.Context) error {
	if f.beforePush != nil {
		f.beforePush()
	}
	if len(f.remote)-1 != f.fetched {
		return fmt.Errorf("push: %w", ErrRaced)
	}
	f.remote = append(f.remote, f.pending)
	return nil
}

// Sync's loop against a fake: the plan sees every new tip, a lost race is
// retried a bounded number of times, failures stop it.
func TestSyncLoop(t *testing.T) {
	mine := render.Tree{"a": []byte("mine")}
	theirs := func(i int) render.Tree { return render.Tree{"a": []byte(fmt.Sprint("theirs ", i))} }
	tests := []struct {
		name       string
		races      int
		retries    int
		fetchErr   error
		wantErr    error
		attempts   int
		wantCommit bool
	}{
		{"no race", 0, 3, nil, nil, 1, true},
		{"two races", 2, 3, nil, nil, 3, true},
		{"more races than retries", 5, 2, nil, ErrRaced, 3, false},
		{"fetch fails", 0, 3, errors.New("offline"), nil, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeWriter{remote: []render.Tree{theirs(0)}, fetchErr: tc.fetchErr}
			moved := 0
			f.beforePush = func() {
				if moved < tc.races {
					moved++
					f.remote = append(f.remote, theirs(moved))
				}
			}
			var seen []string
			plan := func(cur render.Tree) (render.Tree, string, error) {
				seen = append(seen, string(cur["a"]))
				return mine, "m", nil
			}
			res, err := Sync(t.Context(), f, plan, tc.retries)
			if tc.fetchErr != nil {
				if !errors.Is(err, tc.fetchErr) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if res.Attempts != tc.attempts || (res.Commit != "") != tc.wantCommit {
				t.Errorf("attempts %d commit %q", res.Attempts, res.Commit)
			}
			if len(seen) != tc.attempts || seen[len(seen)-1] != fmt.Sprint("theirs ", tc.attempts-1) {
				t.Errorf("the plan saw %q", seen)
			}
			if tc.wantCommit && string(f.remote[len(f.remote)-1]["a"]) != "mine" {
				t.Error("the commit did not land on top")
			}
		})
	}
}

// Prefetch fetches once in the background; Sync's first Fetch takes that
// result, later ones fetch again.
func TestPrefetch(t *testing.T) {
	f := &fakeWriter{remote: []render.Tree{{"a": []byte("x")}}}
	w, wait := Prefetch(t.Context(), f)
	wait()
	if f.fetches != 1 {
		t.Fatalf("%d fetches in the background", f.fetches)
	}
	if err := w.Fetch(t.Context()); err != nil || f.fetches != 1 {
		t.Errorf("first Fetch: %v, %d fetches", err, f.fetches)
	}
	if err := w.Fetch(t.Context()); err != nil || f.fetches != 2 {
		t.Errorf("second Fetch: %v, %d fetches", err, f.fetches)
	}

	failing := &fakeWriter{fetchErr: errors.New("offline")}
	w, wait = Prefetch(t.Context(), failing)
	defer wait()
	if _, err := Sync(t.Context(), w, planOf(render.Tree{}, "m"), 0); err == nil || err.Error() != "offline" {
		t.Errorf("Sync after a failed prefetch: %v", err)
	}
}

// writePack's packs are what git accepts: index-pack --strict checks every
// object, across batches and with sizes that need several header bytes.
func TestWritePackIsValid(t *testing.T) {
	st := memory.NewStorage()
	o := &objects{s: st}
	tree := render.Tree{render.MarkerFile: []byte("m\n"), "big.bin": bytes.Repeat([]byte("0123456789"), 100000)}
	for i := range packBatch + 100 {
		tree[fmt.Sprintf("d%03d/f%d.yaml", i%300, i)] = []byte(fmt.Sprintf("kind: ConfigMap\nmetadata:\n  name: cm-%d\n", i))
	}
	if _, err := o.buildTree(tree, nil, nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writePack(&b, st, o.added); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "r.git")
	gittest.InitBare(t, dir, "main")
	if _, err := gittest.GitErr(dir, b.Bytes(), "index-pack", "--stdin", "--strict"); err != nil {
		t.Fatal(err)
	}
	for _, h := range o.added {
		gittest.Git(t, dir, "cat-file", "-e", h.String())
	}
	if got := gittest.Git(t, dir, "count-objects", "-v"); !strings.Contains(got, "in-pack: "+fmt.Sprint(len(o.added))) {
		t.Errorf("count-objects:\n%s", got)
	}
}
