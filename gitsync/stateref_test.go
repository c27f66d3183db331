package gitsync

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
)

// TestStateRef: a state ref is read alone, written as one file in a commit
// of its own, replaced only from where it was read, and never moves the
// branch; an absent ref or an empty repository reads as no state.
func TestStateRef(t *testing.T) {
	srv, url, dir := httpRepo(t)
	r := open(t, url, "waldur", auth(srv))

	t.Run("empty repository", func(t *testing.T) {
		st, err := r.ReadState(t.Context(), "keycloak")
		if err != nil || st.Data != nil || st.Commit != "" {
			t.Fatalf("ReadState on an empty repository = %+v, %v; want no state", st, err)
		}
	})
	seed := gittest.Commit(t, dir, "main", map[string]string{"waldur/big.yaml": strings.Repeat("x", 1<<20)}, "seed")

	t.Run("absent ref", func(t *testing.T) {
		before := srv.Fetches()
		st, err := r.ReadState(t.Context(), "keycloak")
		if err != nil || st.Data != nil || st.Commit != "" {
			t.Fatalf("ReadState of an absent ref = %+v, %v; want no state", st, err)
		}
		if n := srv.Fetches() - before; n != 0 {
			t.Errorf("an absent ref downloaded %d pack(s); want none", n)
		}
	})

	var first string
	t.Run("create and read back", func(t *testing.T) {
		var err error
		first, err = r.WriteState(t.Context(), "keycloak", []byte("one"), "")
		if err != nil {
			t.Fatal(err)
		}
		if got := gittest.Git(t, dir, "show", StateRef("keycloak")+":keycloak"); got != "one" {
			t.Errorf("the server's state file = %q, want %q", got, "one")
		}
		if parents := gittest.Git(t, dir, "log", "--format=%P", "-1", first); strings.TrimSpace(parents) != "" {
			t.Errorf("the state commit has parents %q; want none", parents)
		}
		st, err := r.ReadState(t.Context(), "keycloak")
		if err != nil || string(st.Data) != "one" || st.Commit != first {
			t.Fatalf("ReadState = %q at %s, %v; want %q at %s", st.Data, st.Commit, err, "one", first)
		}
	})

	t.Run("a stale old value is a race and changes nothing", func(t *testing.T) {
		_, err := r.WriteState(t.Context(), "keycloak", []byte("two"), seed)
		if !errors.Is(err, ErrRaced) {
			t.Fatalf("WriteState from a stale commit: %v; want ErrRaced", err)
		}
		_, err = r.WriteState(t.Context(), "keycloak", []byte("two"), "")
		if !errors.Is(err, ErrRaced) {
			t.Fatalf("WriteState creating an existing ref: %v; want ErrRaced", err)
		}
		if got := refAt(t, dir, StateRef("keycloak")); got != first {
			t.Errorf("the state ref moved to %s", got)
		}
	})

	t.Run("replace without history", func(t *testing.T) {
		second, err := r.WriteState(t.Context(), "keycloak", []byte("two"), first)
		if err != nil {
			t.Fatal(err)
		}
		if parents := strings.TrimSpace(gittest.Git(t, dir, "log", "--format=%P", "-1", second)); parents != "" {
			t.Errorf("the replacing commit has parents %q; want none", parents)
		}
		first = second
	})

	t.Run("replace on a server that refuses to go back", func(t *testing.T) {
		// A hook as hosting services have: no ref may move to a commit
		// that does not descend from where it was.
		refuseNonFastForward(t, dir)
		second, err := r.WriteState(t.Context(), "keycloak", []byte("three"), first)
		if err != nil {
			t.Fatal(err)
		}
		if parents := strings.TrimSpace(gittest.Git(t, dir, "log", "--format=%P", "-1", second)); parents != first {
			t.Errorf("the replacing commit's parents = %q, want %s", parents, first)
		}
		st, err := r.ReadState(t.Context(), "keycloak")
		if err != nil || string(st.Data) != "three" || st.Commit != second {
			t.Fatalf("ReadState = %q at %s, %v; want %q at %s", st.Data, st.Commit, err, "three", second)
		}
	})

	t.Run("the branch never moves", func(t *testing.T) {
		if got := gittest.Head(t, dir, "main"); got != seed {
			t.Errorf("main moved from %s to %s", seed, got)
		}
	})

	t.Run("a ref without the file is an error naming it", func(t *testing.T) {
		gittest.Git(t, dir, "update-ref", StateRef("orders"), seed)
		_, err := r.ReadState(t.Context(), "orders")
		if err == nil || !strings.Contains(err.Error(), `no file "orders"`) {
			t.Fatalf("ReadState of a foreign commit: %v; want an error naming the file", err)
		}
	})

	for _, bad := range []string{"", "../x", "A", "a/b", "a b"} {
		t.Run("invalid name "+bad, func(t *testing.T) {
			if _, err := r.ReadState(t.Context(), bad); err == nil {
				t.Errorf("ReadState(%q) took an invalid name", bad)
			}
			if _, err := r.WriteState(t.Context(), bad, nil, ""); err == nil {
				t.Errorf("WriteState(%q) took an invalid name", bad)
			}
		})
	}
}

// refAt is the commit ref points at in the bare repository dir.
func refAt(t *testing.T, dir, ref string) string {
	t.Helper()
	return strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "--verify", ref))
}

// refuseNonFastForward installs a pre-receive hook in the bare repository
// dir that declines every update of an existing ref to a commit that does
// not descend from it.
func refuseNonFastForward(t *testing.T, dir string) {
	t.Helper()
	hook := `#!/bin/sh
while read old new ref; do
  case "$old$new" in *0000000000000000000000000000000000000000*) continue ;; esac
  if ! git merge-base --is-ancestor "$old" "$new"; then
    echo "refusing a non-fast-forward update of $ref" >&2
    exit 1
  fi
done
`
	if err := os.WriteFile(filepath.Join(dir, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestReadStates: several states and the branch tip in one look: one pack
// holds every state that exists, an absent one reads as no state, and an
// empty repository as no tip and no states; a bad name is refused before
// anything is asked.
func TestReadStates(t *testing.T) {
	srv, url, dir := httpRepo(t)
	r := open(t, url, "waldur", auth(srv))
	tip, states, err := r.ReadStates(t.Context(), "a", "b")
	if err != nil || tip != "" || len(states) != 0 {
		t.Fatalf("an empty repository: tip %q, states %v, %v; want none", tip, states, err)
	}
	seed := gittest.Commit(t, dir, "main", map[string]string{"waldur/x.yaml": "x: 1\n"}, "seed")
	ca, err := r.WriteState(t.Context(), "a", []byte("state a"), "")
	if err != nil {
		t.Fatal(err)
	}
	cc, err := r.WriteState(t.Context(), "c", []byte("state c"), "")
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Fetches()
	tip, states, err = r.ReadStates(t.Context(), "a", "b", "c")
	if err != nil || tip != seed {
		t.Fatalf("tip %q, %v; want %s", tip, err, seed)
	}
	want := map[string]State{"a": {Data: []byte("state a"), Commit: ca}, "c": {Data: []byte("state c"), Commit: cc}}
	for _, n := range []string{"a", "b", "c"} {
		if got := states[n]; string(got.Data) != string(want[n].Data) || got.Commit != want[n].Commit {
			t.Errorf("state %s = %q at %q; want %q at %q", n, got.Data, got.Commit, want[n].Data, want[n].Commit)
		}
	}
	if n := srv.Fetches() - before; n != 1 {
		t.Errorf("%d packs for two states; want one", n)
	}
	if _, _, err := r.ReadStates(t.Context(), "a", "../b"); err == nil || !strings.Contains(err.Error(), `"../b"`) {
		t.Errorf("a bad state name: %v", err)
	}
}
