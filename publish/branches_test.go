package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/ociship"
	"github.com/waldur/waldur-gitops/waldur"
)

// shardBranchEntries returns the ShardBranch entries of a run by action.
func shardBranchEntries(out *engine.Outcome) map[changeset.Action][]string {
	got := map[changeset.Action][]string{}
	for _, e := range out.Report.Changes {
		if e.Kind == "ShardBranch" {
			got[e.Action] = append(got[e.Action], e.Subject)
		}
	}
	return got
}

// refuseShardBranches installs an update hook in the bare repository dir
// that declines every shard branch while the file it returns exists, and
// takes away the server's atomic pushes, so that the branch goes first.
func refuseShardBranches(t *testing.T, dir string) string {
	t.Helper()
	flag := filepath.Join(t.TempDir(), "refuse")
	hook := "#!/bin/sh\ncase \"$1\" in refs/heads/" + gitsync.ShardBranchPrefix + "*) if [ -e " + flag + " ]; then echo 'shard branches are closed'; exit 1; fi;; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, "hooks", "update"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "config", "receive.advertiseAtomic", "false")
	return flag
}

// With git.flux_shard_branches every sync moves, with the commit, the
// branches of the shards whose files changed and no other, each commit
// naming the main commit; a dry run lists the branches that would move; a
// server that takes main but refuses the shard branches leaves the commit
// in place, fails the run with a contained Git error naming it, holds the
// orders of the tenants of the shard left behind, and the next run, with
// nothing new to commit, moves what is missing.
func TestSyncMovesChangedShardBranches(t *testing.T) {
	cfg, st, dir := exampleRepo(t, 2)
	cfg.Git.FluxShardBranches = true
	flag := refuseShardBranches(t, dir)
	src := &answers{st: st, drop: map[waldur.UUID]bool{}, direct: map[waldur.UUID]confirm.Gone{}}
	e := engineOver(t, cfg, src, nil, guard.DefaultOptions())
	ctx := context.Background()
	names, dirs := gitsync.LayoutFor(cfg.Config).ShardDirs()

	out := e.Run(ctx, engine.Request{Command: "sync"})
	if out.Err != nil || out.Report.Commit == "" {
		t.Fatalf("first sync: %v", out.Err)
	}
	if got := shardBranchEntries(out); len(got[changeset.Create]) != len(names) {
		t.Fatalf("first sync moved %v, want all %d shards", got, len(names))
	}
	for i, n := range names {
		head := gittest.Head(t, dir, gitsync.ShardBranch(n))
		if out.Published.FluxRevisions[n] != gitsync.ShardBranch(n)+"@sha1:"+head {
			t.Errorf("revision of %s: %q, branch at %s", n, out.Published.FluxRevisions[n], head)
		}
		if msg := gittest.Message(t, dir, head); !strings.Contains(msg, gitsync.ShardSourceTrailer+": "+out.Report.Commit) {
			t.Errorf("%s does not name the main commit %s:\n%s", n, out.Report.Commit, msg)
		}
		want := ociship.ArtifactFiles(out.Published.After, dirs[i])
		got := gittest.Files(t, dir, gitsync.ShardBranch(n))
		if len(got) != len(want) {
			t.Errorf("%s holds %d files, want the %d of its artifact", n, len(got), len(want))
		}
		for p, c := range want {
			if got[p] != string(c) {
				t.Errorf("%s: %s differs from the shard's artifact", n, p)
			}
		}
	}
	first := out.Published.FluxRevisions

	// One tenant goes: the dry run names one branch.
	gone := st.Offerings[0].Resources[0]
	src.drop[gone.UUID] = true
	src.direct[gone.UUID] = confirm.Gone{Why: "Waldur answers 404 for it"}
	dry := e.Run(ctx, engine.Request{Command: "sync", DryRun: true})
	if got := shardBranchEntries(dry); len(got[changeset.Create]) != 1 {
		t.Fatalf("the dry run lists %v, want one shard branch", got)
	}

	// The server takes main but refuses the shard branches.
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out = e.Run(ctx, engine.Request{Command: "sync"})
	if out.Report.Commit == "" || failure.ClassOf(out.Err) != failure.ClassGit || !strings.Contains(out.Err.Error(), "flux shard branches not pushed") ||
		!strings.Contains(out.Err.Error(), "commit "+out.Report.Commit+" is on main") {
		t.Fatalf("refused shard branches: commit %q, %v (class %v)", out.Report.Commit, out.Err, failure.ClassOf(out.Err))
	}
	if gittest.Head(t, dir, "main") != out.Report.Commit {
		t.Error("main was not pushed")
	}
	held := out.Published.Held
	if _, ok := held[gone.UUID]; !ok || !strings.Contains(held[gone.UUID], "is not pushed yet") {
		t.Errorf("the removed tenant's order is not held: %v", held)
	}
	if len(held) >= len(out.Published.Before.ResourceUUIDs()) {
		t.Errorf("every tenant held, not only those of the shard: %d", len(held))
	}

	// The server takes them again: nothing to commit, the branch moves.
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	out = e.Run(ctx, engine.Request{Command: "sync"})
	if out.Err != nil || out.Report.Commit != "" {
		t.Fatalf("healing run: commit %q, %v", out.Report.Commit, out.Err)
	}
	if got := shardBranchEntries(out); len(got[changeset.Create]) != 1 {
		t.Fatalf("healing run moved %v, want one shard branch", got)
	}
	moved := 0
	for n, rev := range out.Published.FluxRevisions {
		if rev != first[n] {
			moved++
		}
	}
	if moved != 1 || len(out.Published.Held) != 0 {
		t.Errorf("%d shard revisions moved, want 1; held %v", moved, out.Published.Held)
	}

	// Nothing changed: nothing moves.
	out = e.Run(ctx, engine.Request{Command: "sync"})
	if got := shardBranchEntries(out); out.Err != nil || len(got) != 0 {
		t.Fatalf("idle run: %v, shard branches %v", out.Err, got)
	}
}

// A risky removal waiting on a review branch moves no shard branch: the
// shard branches follow main. Once a person merges the review branch, the
// next run, with nothing to commit itself, moves the branch of the removed
// tenant's shard and no other, naming the merged commit.
func TestReviewBranchMergedMovesItsShardBranch(t *testing.T) {
	cfg, st, dir := exampleRepo(t, 2)
	cfg.Git.FluxShardBranches = true
	gittest.Git(t, dir, "config", "receive.denyDeletes", "false")
	src := &answers{st: st, drop: map[waldur.UUID]bool{}, direct: map[waldur.UUID]confirm.Gone{}}
	e := engineOver(t, cfg, src, nil, guard.DefaultOptions())
	run := func(what string) *engine.Outcome {
		t.Helper()
		// The removal waiting on review is a skip: exit 3, the rest done.
		out := e.Run(context.Background(), engine.Request{Command: "sync"})
		if out.Err != nil && failure.ExitCode(out.Err) != failure.ExitPartial {
			t.Fatalf("%s: %v", what, out.Err)
		}
		return out
	}
	run("first sync")

	cfg.Review.Risky = config.ReviewBranch
	var gone waldur.UUID
	for _, o := range st.Offerings {
		if o.Name == "Plain namespaces" {
			gone = o.Resources[0].UUID
		}
	}
	src.drop[gone] = true
	src.direct[gone] = confirm.Gone{Why: "Waldur answers 404 for it"}
	out := run("the removal")
	if got := shardBranchEntries(out); len(got) != 0 {
		t.Fatalf("a removal waiting on review moved shard branches %v", got)
	}
	var review string
	for _, b := range out.Published.ReviewBranches {
		review = b.Commit
	}
	if review == "" {
		t.Fatal("no review branch")
	}

	// A person merges it (a fast-forward of main).
	gittest.Git(t, dir, "update-ref", "refs/heads/main", review)
	out = run("after the merge")
	if out.Report.Commit != "" {
		t.Errorf("the run after the merge committed %s", out.Report.Commit)
	}
	got := shardBranchEntries(out)
	if len(got[changeset.Create]) != 1 {
		t.Fatalf("after the merge shard branches moved %v, want one", got)
	}
	b, _, _ := strings.Cut(got[changeset.Create][0], " ")
	if msg := gittest.Message(t, dir, gittest.Head(t, dir, b)); !strings.Contains(msg, gitsync.ShardSourceTrailer+": "+review) {
		t.Errorf("%s does not name the merged commit %s:\n%s", b, review, msg)
	}
}

// A run the deletion guard refuses moves no shard branch: the guard is
// checked before anything is committed or cut.
func TestGuardRefusalMovesNoShardBranch(t *testing.T) {
	cfg, st, dir := exampleRepo(t, 2)
	cfg.Git.FluxShardBranches = true
	src := &answers{st: st, drop: map[waldur.UUID]bool{}, direct: map[waldur.UUID]confirm.Gone{}}
	e := engineOver(t, cfg, src, nil, guard.DefaultOptions())
	ctx := context.Background()
	if out := e.Run(ctx, engine.Request{Command: "sync"}); out.Err != nil {
		t.Fatal(out.Err)
	}
	names, _ := gitsync.LayoutFor(cfg.Config).ShardDirs()
	heads := map[string]string{}
	for _, n := range names {
		heads[n] = gittest.Head(t, dir, gitsync.ShardBranch(n))
	}
	// Every tenant answers 404: the guard refuses.
	for _, o := range st.Offerings {
		for _, r := range o.Resources {
			src.drop[r.UUID] = true
			src.direct[r.UUID] = confirm.Gone{Why: "Waldur answers 404 for it"}
		}
	}
	out := e.Run(ctx, engine.Request{Command: "sync"})
	if failure.ClassOf(out.Err) != failure.ClassGuard {
		t.Fatalf("mass removal: %v, want the guard's refusal", out.Err)
	}
	if got := shardBranchEntries(out); len(got) != 0 {
		t.Errorf("a refused run reports shard branches %v", got)
	}
	for _, n := range names {
		if h := gittest.Head(t, dir, gitsync.ShardBranch(n)); h != heads[n] {
			t.Errorf("%s moved to %s on a refused run", n, h)
		}
	}
}

// A shard branch of this site that no shard directory accounts for any
// more (a run that lowered the count failed before its shard branches went
// out) is emptied, so that its Kustomization stops applying; a branch of
// another installation sharing the repository is left alone.
func TestStaleShardBranchIsEmptied(t *testing.T) {
	cfg, st, dir := exampleRepo(t, 2)
	cfg.Git.FluxShardBranches = true
	e := engineOver(t, cfg, &answers{st: st}, nil, guard.DefaultOptions())
	ctx := context.Background()
	if out := e.Run(ctx, engine.Request{Command: "sync"}); out.Err != nil {
		t.Fatal(out.Err)
	}
	names, _ := gitsync.LayoutFor(cfg.Config).ShardDirs()
	tip := gittest.Head(t, dir, gitsync.ShardBranch(names[0]))
	stale := strings.TrimSuffix(names[0], "00") + "07"
	other := "site-b-" + strings.TrimPrefix(names[0], "waldur-")
	for _, n := range []string{stale, other} {
		gittest.Git(t, dir, "update-ref", "refs/heads/"+gitsync.ShardBranch(n), tip)
	}
	out := e.Run(ctx, engine.Request{Command: "sync"})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if got := shardBranchEntries(out); len(got[changeset.Create]) != 1 || !strings.Contains(got[changeset.Create][0], stale) {
		t.Fatalf("moved %v, want only the stale %s", got, stale)
	}
	if files := gittest.Files(t, dir, gitsync.ShardBranch(stale)); len(files) != 0 {
		t.Errorf("the stale shard branch still holds %d files", len(files))
	}
	if gittest.Head(t, dir, gitsync.ShardBranch(other)) != tip {
		t.Error("another installation's shard branch was moved")
	}
}
