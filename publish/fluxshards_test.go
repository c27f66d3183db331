package publish_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// placement reads the shard of every tenant from the branch tip of the bare
// repository at dir.
func placement(t *testing.T, dir, gitPath string) map[string]map[string]int {
	t.Helper()
	return gitsync.Placement(tipTree(t, dir, gitPath), 0)
}

// tipTree reads the owned tree (below gitPath) from the branch tip of the
// bare repository at dir.
func tipTree(t *testing.T, dir, gitPath string) render.Tree {
	t.Helper()
	tree := render.Tree{}
	for p, data := range gittest.Files(t, dir, "main") {
		if rel, ok := strings.CutPrefix(p, gitPath+"/"); ok {
			tree[rel] = []byte(data)
		}
	}
	return tree
}

// exampleRepo is the bundled example publishing, in shards Flux shards (0:
// none), to a new bare repository, whose directory it returns.
func exampleRepo(t *testing.T, shards int) (*config.Loaded, *waldur.State, string) {
	t.Helper()
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	dir := filepath.Join(t.TempDir(), "tenants.git")
	gittest.InitBare(t, dir, "main")
	cfg.Git.URL, cfg.Git.FluxShards = dir, shards
	return cfg, st, dir
}

// engineOver is an engine that renders cfg's state read from src and
// publishes it to Git under guard g, logging to log (nil: nowhere).
func engineOver(t *testing.T, cfg *config.Loaded, src engine.Source, log *slog.Logger, g guard.Options) *engine.Engine {
	t.Helper()
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Seams{Source: src, Publisher: &publish.Git{Config: cfg.Config, Log: log}}, render.New(cfg.Config, tpls).Render, g, nil)
}

// Changing git.flux_shards never moves a tenant between two shards that both
// exist, on a real repository: raising the count keeps every placed tenant
// where it is (a moved tenant is deleted by the giving shard's prune and
// created again by the receiving one), a tenant added later is placed by the
// hash over the new count, and lowering the count moves only the tenants of
// the shards no longer generated.
func TestShardCountChangeMovesNoPlacedTenant(t *testing.T) {
	cfg, st, dir := exampleRepo(t, 2)
	// The newest tenant of the plain namespace offering joins only after the
	// count is raised.
	src := &answers{st: st, drop: map[waldur.UUID]bool{}}
	var late waldur.UUID
	for _, o := range st.Offerings {
		if o.Name == "Plain namespaces" {
			late = o.Resources[len(o.Resources)-1].UUID
		}
	}
	src.drop[late] = true
	e := engineOver(t, cfg, src, nil, guard.DefaultOptions())
	ctx := context.Background()
	sync := func() map[string]map[string]int {
		t.Helper()
		if out := e.Run(ctx, engine.Request{Command: "sync"}); out.Err != nil {
			t.Fatal(out.Err)
		}
		return placement(t, dir, cfg.Git.Path)
	}
	first := sync()
	count := 0
	for _, m := range first {
		count += len(m)
	}
	if count < 10 {
		t.Fatalf("only %d tenants placed: %v", count, first)
	}

	cfg.Git.FluxShards = 7
	delete(src.drop, late)
	raised := sync()
	wantLate := ""
	for key, m := range raised {
		for tenant, s := range m {
			if was, ok := first[key][tenant]; ok {
				if s != was {
					t.Errorf("raising 2→7 moved %s/%s from shard %d to %d", key, tenant, was, s)
				}
			} else {
				wantLate = key + "/" + tenant
				if s != gitsync.ShardOf(tenant, 7) {
					t.Errorf("the new tenant %s is in shard %d, the hash over 7 says %d", wantLate, s, gitsync.ShardOf(tenant, 7))
				}
			}
		}
	}
	if wantLate == "" {
		t.Fatal("the tenant added after raising the count is in no shard")
	}
	for p := range gittest.Files(t, dir, "main") {
		if strings.HasSuffix(p, ".06/kustomization.yaml") {
			goto lower
		}
	}
	t.Fatal("raising to 7 generated no shard 06")
lower:
	// Lowering, on a new repository whose tenants are spread over 7 shards.
	dir = filepath.Join(t.TempDir(), "lower.git")
	gittest.InitBare(t, dir, "main")
	cfg.Git.URL = dir
	e = engineOver(t, cfg, src, nil, guard.DefaultOptions())
	raised = sync()
	cfg.Git.FluxShards = 3
	lowered := sync()
	moved := 0
	for key, m := range lowered {
		for tenant, s := range m {
			was := raised[key][tenant]
			switch {
			case was < 3 && s != was:
				t.Errorf("lowering 7→3 moved %s/%s from the remaining shard %d to %d", key, tenant, was, s)
			case was >= 3 && s != gitsync.ShardOf(tenant, 3):
				t.Errorf("%s/%s left shard %d for %d, the hash over 3 says %d", key, tenant, was, s, gitsync.ShardOf(tenant, 3))
			case was >= 3:
				moved++
			}
		}
	}
	if moved == 0 {
		t.Error("no tenant was in a shard above 2 before lowering: the test proves nothing")
	}
	for p := range gittest.Files(t, dir, "main") {
		if strings.Contains(p, "/_flux/") && (strings.Contains(p, ".03/") || strings.Contains(p, ".06/")) {
			t.Errorf("%s is still generated after lowering to 3", p)
		}
	}
}

// A new git.flux_shard_generation, on a real repository: the commit holds
// only the new generation's shard directories, with every tenant placed by
// the hash over the count, and the run warns what to do with the old shards.
func TestShardGenerationPlacesEveryTenantAfresh(t *testing.T) {
	cfg, st, dir := exampleRepo(t, 2)
	var logs strings.Builder
	e := engineOver(t, cfg, &answers{st: st}, slog.New(slog.NewTextHandler(&logs, nil)), guard.DefaultOptions())
	sync := func() {
		t.Helper()
		if out := e.Run(context.Background(), engine.Request{Command: "sync"}); out.Err != nil {
			t.Fatal(out.Err)
		}
	}
	sync()
	before := placement(t, dir, cfg.Git.Path)
	cfg.Git.FluxShards, cfg.Git.FluxShardGeneration = 5, 1
	sync()
	tree := tipTree(t, dir, cfg.Git.Path)
	if g := gitsync.Generations(tree); len(g) != 1 || g[0] != 1 {
		t.Errorf("the tip holds shard generations %v, want only 1", g)
	}
	after := gitsync.Placement(tree, 1)
	n := 0
	for key, m := range before {
		for tenant := range m {
			n++
			if s, ok := after[key][tenant]; !ok || s != gitsync.ShardOf(tenant, 5) {
				t.Errorf("%s/%s is in shard %d (placed %v) of generation 1, the hash over 5 says %d", key, tenant, s, ok, gitsync.ShardOf(tenant, 5))
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d tenants placed", n)
	}
	if !strings.Contains(logs.String(), "git.flux_shard_generation changed") || !strings.Contains(logs.String(), "to_generation=1") {
		t.Errorf("no warning about the new generation:\n%s", logs.String())
	}
}

// git.flux_reconcile asking a cluster that cannot be reached costs only a
// warning: the commit is pushed and the run succeeds (Flux's poll still
// comes).
func TestFluxReconcileFailureIsAWarning(t *testing.T) {
	cfg, st, _ := exampleRepo(t, 2)
	cfg.Git.FluxReconcile = true
	cfg.Git.FluxKubeconfigPath = filepath.Join(t.TempDir(), "missing-kubeconfig")
	var logs strings.Builder
	e := engineOver(t, cfg, &answers{st: st}, slog.New(slog.NewTextHandler(&logs, nil)), guard.DefaultOptions())
	out := e.Run(context.Background(), engine.Request{Command: "sync"})
	if out.Err != nil || out.Report.Commit == "" {
		t.Fatalf("sync: %v, commit %q", out.Err, out.Report.Commit)
	}
	if !strings.Contains(logs.String(), "cannot ask Flux to fetch the commit now") || !strings.Contains(logs.String(), "missing-kubeconfig") {
		t.Errorf("no warning naming the kubeconfig:\n%s", logs.String())
	}
}

// A risky change routed to a review branch leaves main with the same shard
// placement as a direct publish: raising the count while a removal waits on
// review moves no placed tenant, the removed one included.
func TestReviewRoutingKeepsShardPlacement(t *testing.T) {
	cfg, st, dir := exampleRepo(t, 2)
	src := &answers{st: st, drop: map[waldur.UUID]bool{}}
	e := engineOver(t, cfg, src, nil, guard.DefaultOptions())
	sync := func() map[string]map[string]int {
		t.Helper()
		// The removal waiting on review is a skip: exit 3, the rest done.
		if out := e.Run(context.Background(), engine.Request{Command: "sync"}); out.Err != nil && failure.ExitCode(out.Err) != failure.ExitPartial {
			t.Fatal(out.Err)
		}
		return placement(t, dir, cfg.Git.Path)
	}
	first := sync()

	cfg.Git.FluxShards, cfg.Review.Risky = 7, config.ReviewBranch
	var gone waldur.UUID
	for _, o := range st.Offerings {
		if o.Name == "Plain namespaces" {
			gone = o.Resources[0].UUID
		}
	}
	src.drop[gone] = true
	raised := sync()
	n := 0
	for key, m := range first {
		for tenant, was := range m {
			n++
			if s, ok := raised[key][tenant]; !ok || s != was {
				t.Errorf("%s/%s: shard %d (present %v) after the raise with a removal under review, was %d", key, tenant, s, ok, was)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d tenants placed: %v", n, first)
	}
}

// In the shard-branch layout, a commit that changes the shard objects but
// moves no shard branch (a switch back from another layout, a new secret
// name) still asks Flux to fetch the site's GitRepository, which holds
// them; a run that changes nothing asks nothing. The cluster cannot be
// reached here, so asking shows as the warning.
func TestShardBranchesReconcileTheRoot(t *testing.T) {
	cfg, st, _ := exampleRepo(t, 2)
	g := &cfg.Git
	g.FluxShardBranches, g.FluxReconcile = true, true
	g.FluxKubeconfigPath = filepath.Join(t.TempDir(), "missing-kubeconfig")
	var logs strings.Builder
	e := engineOver(t, cfg, &answers{st: st}, slog.New(slog.NewTextHandler(&logs, nil)), guard.DefaultOptions())
	run := func(what string, wantAsk bool) {
		t.Helper()
		logs.Reset()
		out := e.Run(context.Background(), engine.Request{Command: "sync"})
		if out.Err != nil {
			t.Fatalf("%s: %v", what, out.Err)
		}
		asked := strings.Contains(logs.String(), "cannot ask Flux to fetch the commit now")
		if asked != wantAsk {
			t.Errorf("%s: asked Flux to fetch the site's GitRepository: %v, want %v\n%s", what, asked, wantAsk, logs.String())
		}
		for _, e := range out.Report.Changes {
			if e.Kind == "ShardBranch" && what != "first run" {
				t.Errorf("%s moved %s", what, e.Subject)
			}
		}
	}
	run("first run", true)
	g.FluxShardBranchesSecretName = "another-secret" // the shard objects change, no shard's files
	run("a run changing only the shard objects", true)
	run("a run changing nothing", false)
}
