package engine_test

// The sync cycle at 10,000 tenants through the engine (snapshot-like source,
// render, Git publisher on a local bare repository), beside the same work
// done by calling render and gitsync directly, as the sync command did before
// the engine existed, so that the engine's cost shows as a ratio in one run:
//
//	go test ./engine -run '^$' -bench Sync10k -benchtime 3x
//
// $WALDUR_GITOPS_BENCH_TENANTS changes the number of tenants.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// memSource answers one state, as a snapshot would.
type memSource struct{ st *waldur.State }

func (m memSource) Read(context.Context) (*waldur.State, error) { return m.st, nil }

type syncBench struct {
	cfg   *config.Loaded
	state *waldur.State
	rdr   engine.Renderer
}

func newSyncBench(b *testing.B) *syncBench {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("WALDUR_GITOPS_BENCH_TENANTS")); err == nil && v > 0 {
		n = v
	}
	opts := synth.Options{Tenants: n, Seed: 20261121, BackendTypes: config.BackendTypes}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		b.Fatal(err)
	}
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Git.Branch, cfg.Git.Path, cfg.Git.AuthorName, cfg.Git.AuthorEmail = "main", "waldur", "bench", "bench@example.org"
	return &syncBench{cfg: cfg, state: synth.Generate(opts), rdr: render.New(cfg.Config, tpls).Render}
}

// setLimit changes one resource's CPU limit: one tenant directory changes.
func (s *syncBench) setLimit(v int) {
	for i := range s.state.Offerings {
		for j := range s.state.Offerings[i].Resources {
			r := &s.state.Offerings[i].Resources[j]
			if r.State == waldur.ResourceOK && r.Limits != nil && !r.Paused && !r.Downscaled {
				r.Limits["cpu"] = waldur.Amount(strconv.Itoa(v))
				return
			}
		}
	}
}

// viaEngine syncs through an engine wired as sync wires it (no orders, no Keycloak).
func (s *syncBench) viaEngine(b *testing.B, repo string) string {
	cfg := *s.cfg.Config
	cfg.Git.URL = repo
	e := engine.New(engine.Seams{Source: memSource{s.state}, Publisher: &publish.Git{Config: &cfg}}, s.rdr, guard.DefaultOptions(), nil)
	out := e.Run(context.Background(), engine.Request{Command: "sync"})
	if out.Err != nil {
		b.Fatal(out.Err)
	}
	return out.Report.Commit
}

// direct syncs by calling render and gitsync by hand, as cli/sync.go did.
func (s *syncBench) direct(b *testing.B, repo string) string {
	g := s.cfg.Git
	g.URL = repo
	opts, err := gitsync.OptionsFromConfig(g)
	if err != nil {
		b.Fatal(err)
	}
	r, err := gitsync.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	w, wait := gitsync.Prefetch(ctx, r)
	defer wait()
	res, err := s.rdr(s.state)
	if err != nil {
		b.Fatal(err)
	}
	layout := gitsync.LayoutFor(s.cfg.Config)
	out, err := gitsync.Sync(ctx, w, func(cur render.Tree) (render.Tree, string, error) {
		next := layout.Apply(res.Tree(cur))
		cs := res.Compare(cur, next)
		if err := guard.Check(guard.Tenants, guard.TenantRemovals(guard.Tenants, cs, nil, nil), guard.TenantsInPlace(cs, nil), guard.DefaultOptions()); err != nil {
			return nil, "", err
		}
		return next, gitsync.Message(cs), nil
	}, 3)
	if err != nil {
		b.Fatal(err)
	}
	return out.Commit
}

func BenchmarkSync10k(b *testing.B) {
	s := newSyncBench(b)
	for _, way := range []struct {
		name string
		sync func(*testing.B, string) string
	}{{"engine", s.viaEngine}, {"direct", s.direct}} {
		b.Run("first/"+way.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "tenants.git")
				gittest.InitBare(b, dir, "main")
				b.StartTimer()
				if way.sync(b, dir) == "" {
					b.Fatal("no commit")
				}
			}
		})
		dir := filepath.Join(b.TempDir(), "tenants.git")
		gittest.InitBare(b, dir, "main")
		way.sync(b, dir)
		b.Run("noop/"+way.name, func(b *testing.B) {
			for b.Loop() {
				if c := way.sync(b, dir); c != "" {
					b.Fatalf("no-op made commit %s", c)
				}
			}
		})
		b.Run("one-tenant/"+way.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				s.setLimit(2000 + i)
				b.StartTimer()
				if way.sync(b, dir) == "" {
					b.Fatal("no commit")
				}
			}
		})
	}
}
