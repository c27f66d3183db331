package engine_test

// The publish of an event run at 10,000 tenants: one engine kept across runs
// (as serve keeps it), its render remembering the last one and its Git
// publisher keeping the fetched tree, one tenant changed per run:
//
//	go test ./engine -run '^$' -bench EventPublish10k -benchtime 20x

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
)

func BenchmarkEventPublish10k(b *testing.B) {
	s := newSyncBench(b)
	tpls, err := render.LoadTemplates(s.cfg.Config)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(b.TempDir(), "tenants.git")
	gittest.InitBare(b, dir, "main")
	cfg := *s.cfg.Config
	cfg.Git.URL = dir
	rdr := render.New(&cfg, tpls).Remembering(render.NewMemory(nil)).Render
	e := engine.New(engine.Seams{Source: memSource{s.state}, Publisher: &publish.Git{Config: &cfg}}, rdr, guard.DefaultOptions(), nil)
	run := func() string {
		out := e.Run(context.Background(), engine.Request{Command: "sync"})
		if out.Err != nil {
			b.Fatal(out.Err)
		}
		return out.Report.Commit
	}
	run()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		s.setLimit(3000 + i)
		b.StartTimer()
		if run() == "" {
			b.Fatal("no commit")
		}
	}
}
