package gitsync

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/render"
)

// shardsByDir is a ShardSource with one shard per top-level directory
// ("a", "b") of the owned tree, holding that directory's files.
func shardsByDir(names ...string) ShardSource {
	return func(_, next render.Tree, _ []string) []ShardContent {
		out := make([]ShardContent, 0, len(names))
		for _, n := range names {
			files := map[string][]byte{}
			for p, c := range next {
				if strings.HasPrefix(p, n+"/") {
					files[p] = c
				}
			}
			out = append(out, ShardContent{Name: n, Files: files})
		}
		return out
	}
}

// flattenedByDir is shardsByDir with every file headed by a comment, so
// that the shards' blobs are not main's (as flattened tenant files are not).
func flattenedByDir(names ...string) ShardSource {
	return func(cur, next render.Tree, existing []string) []ShardContent {
		out := shardsByDir(names...)(cur, next, existing)
		for _, sc := range out {
			for p, c := range sc.Files {
				sc.Files[p] = append([]byte("# flattened\n"), c...)
			}
		}
		return out
	}
}

// syncShards runs one Sync of tree with shard branches a and b, and pushes
// the shards alone when the branch is unchanged.
func syncShards(t *testing.T, r *Repo, tree render.Tree) (Result, []ShardMove) {
	t.Helper()
	ctx := context.Background()
	res, err := Sync(ctx, r, planOf(tree, "waldur: test"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" {
		if err := r.PushShards(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.ShardErr(); err != nil {
		t.Fatal(err)
	}
	return res, r.ShardMoves()
}

func moved(moves []ShardMove) string {
	var names []string
	for _, m := range moves {
		names = append(names, m.Name)
	}
	return strings.Join(names, ",")
}

func TestShardBranches(t *testing.T) {
	for _, atomicPush := range []bool{true, false} {
		name := "atomic"
		if !atomicPush {
			name = "branch first"
		}
		t.Run(name, func(t *testing.T) {
			srv, url, dir := httpRepo(t)
			if !atomicPush {
				gittest.Git(t, dir, "config", "receive.advertiseAtomic", "false")
			}
			r := open(t, url, "waldur", auth(srv))
			r.SetShards(shardsByDir("a", "b"))

			res, moves := syncShards(t, r, tenantTree("v1", "a/x", "b/y"))
			if got := moved(moves); got != "a,b" {
				t.Fatalf("first sync moved %q, want a,b", got)
			}
			for _, s := range []string{"a", "b"} {
				head := gittest.Head(t, dir, ShardBranch(s))
				msg := gittest.Message(t, dir, head)
				if !strings.Contains(msg, ShardSourceTrailer+": "+res.Commit) {
					t.Errorf("shard %s commit message does not name %s:\n%s", s, res.Commit, msg)
				}
				files := gittest.Files(t, dir, ShardBranch(s))
				if len(files) != 2 || files[s+"/x/namespace.yaml"] == "" && files[s+"/y/namespace.yaml"] == "" {
					t.Errorf("shard %s holds %v", s, files)
				}
			}
			bBefore := gittest.Head(t, dir, ShardBranch("b"))

			// Only a changes: only a's branch moves.
			next := tenantTree("v1", "a/x", "b/y")
			next["a/x/namespace.yaml"] = []byte("kind: Namespace\nmetadata:\n  name: x\n# v2\n")
			res, moves = syncShards(t, r, next)
			if got := moved(moves); got != "a" {
				t.Fatalf("one-shard change moved %q, want a", got)
			}
			if gittest.Head(t, dir, ShardBranch("b")) != bBefore {
				t.Error("shard b moved without a change")
			}
			if got := gittest.Log(t, dir, ShardBranch("a")); len(got) != 2 {
				t.Errorf("shard a has %d commits, want 2 (one per change)", len(got))
			}

			// Nothing changes: nothing moves, nothing is pushed.
			pushes := srv.Pushes()
			res, moves = syncShards(t, r, next)
			if res.Commit != "" || len(moves) != 0 || srv.Pushes() != pushes {
				t.Errorf("an unchanged run committed %q, moved %q, pushed %d times", res.Commit, moved(moves), srv.Pushes()-pushes)
			}

			// A shard branch behind its content (a run failed after the
			// branch) is brought up to date though the branch is unchanged,
			// naming the branch's tip.
			gittest.Git(t, dir, "update-ref", "refs/heads/"+ShardBranch("b"), gittest.Log(t, dir, ShardBranch("a"))[1])
			fresh := open(t, url, "waldur", auth(srv))
			fresh.SetShards(shardsByDir("a", "b"))
			res, moves = syncShards(t, fresh, next)
			if res.Commit != "" || moved(moves) != "b" {
				t.Fatalf("repair committed %q and moved %q, want nothing and b", res.Commit, moved(moves))
			}
			tip := gittest.Head(t, dir, "main")
			if msg := gittest.Message(t, dir, gittest.Head(t, dir, ShardBranch("b"))); !strings.Contains(msg, ShardSourceTrailer+": "+tip) {
				t.Errorf("the repaired shard does not name the branch tip %s:\n%s", tip, msg)
			}
		})
	}
}

// TestShardBranchesRace checks that a shard branch moved by someone else
// fails the atomic push as a race, leaving the branch where it was.
func TestShardBranchesRace(t *testing.T) {
	srv, url, dir := httpRepo(t)
	r := open(t, url, "waldur", auth(srv))
	r.SetShards(shardsByDir("a"))
	syncShards(t, r, tenantTree("v1", "a/x"))
	mainBefore := gittest.Head(t, dir, "main")

	ctx := context.Background()
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, tenantTree("v2", "a/x"), "waldur: v2"); err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, dir, ShardBranch("a"), map[string]string{"by-hand": "x"}, "by hand")
	err := r.Push(ctx)
	if !errors.Is(err, ErrRaced) {
		t.Fatalf("push with a shard branch moved by another writer: %v, want ErrRaced", err)
	}
	if gittest.Head(t, dir, "main") != mainBefore {
		t.Error("the branch moved although its shard branch could not")
	}
}

// TestPlanShards checks that a dry run lists the shard branches that
// would move and pushes nothing.
func TestPlanShards(t *testing.T) {
	srv, url, _ := httpRepo(t)
	r := open(t, url, "waldur", auth(srv))
	r.SetShards(shardsByDir("a", "b"))
	syncShards(t, r, tenantTree("v1", "a/x", "b/y"))
	ctx := context.Background()
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	pushes := srv.Pushes()
	next := tenantTree("v1", "a/x", "b/y", "b/z")
	moves, err := r.PlanShards(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if got := moved(moves); got != "b" || moves[0].From == "" {
		t.Errorf("the plan moves %q (%+v), want b from its tip", got, moves)
	}
	if srv.Pushes() != pushes || len(r.ShardPending()) != 0 {
		t.Error("planning pushed or left a move to push")
	}
}

// A server that offers a blob:none filter gives the shard branches' tips
// without their blobs: a fresh Repo then holds the shards' trees, not
// their files, and a one-tenant change still sends only the new blob, the
// trees above it and the commit; the server's repository stays whole.
func TestShardBranchesFilteredFetch(t *testing.T) {
	srv, url, dir := httpRepo(t)
	gittest.Git(t, dir, "config", "uploadpack.allowFilter", "true")
	first := open(t, url, "waldur", auth(srv))
	first.SetShards(flattenedByDir("a", "b"))
	tenants := []string{"a/x", "a/y", "a/z", "b/u", "b/v"}
	syncShards(t, first, tenantTree("v1", tenants...))

	r := open(t, url, "waldur", auth(srv))
	r.SetShards(flattenedByDir("a", "b"))
	ctx := context.Background()
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.shard.remote) == 0 {
		t.Fatal("no blob of the shard branches is known from a filtered fetch")
	}
	for h := range r.shard.remote {
		if r.store.HasEncodedObject(h) == nil {
			t.Errorf("blob %s of a shard branch was fetched", h)
		}
	}
	next := tenantTree("v1", tenants...)
	next["a/x/namespace.yaml"] = []byte("kind: Namespace\nmetadata:\n  name: x\n# v2\n")
	if _, err := r.Commit(ctx, next, "waldur: x"); err != nil {
		t.Fatal(err)
	}
	// a/x's file, the trees a/x, a and the root, the commit.
	if n := len(r.shard.objs.added); n != 5 || len(r.shard.moves) != 1 {
		t.Errorf("the one-tenant change adds %d shard objects over %d moves, want 5 over 1", n, len(r.shard.moves))
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "fsck", "--strict")
	files := gittest.Files(t, dir, ShardBranch("a"))
	if len(files) != 6 || !strings.Contains(files["a/x/namespace.yaml"], "# flattened\nkind: Namespace\nmetadata:\n  name: x\n# v2") {
		t.Errorf("shard a holds %v", files)
	}
}
