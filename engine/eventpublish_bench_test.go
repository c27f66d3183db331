package engine_test

// The event run at 10,000 tenants: one engine kept across runs (as serve
// keeps it), its render remembering the last one and its Git publisher the
// last publish and the fetched tree, one tenant changed per run; "whole"
// gives the publisher a copy of its config before every run, so that it
// compares and commits the whole tree as every run did before
// (publish.ScopeConfigChanged):
//
//	go test ./engine -run '^$' -bench EventPublish10k -benchtime 20x
//
// git-ms/op is the publish stage alone.

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
	for _, whole := range []bool{false, true} {
		name := "scoped"
		if whole {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "tenants.git")
			gittest.InitBare(b, dir, "main")
			cfg := *s.cfg.Config
			cfg.Git.URL = dir
			pub := &publish.Git{Config: &cfg}
			rdr := render.New(&cfg, tpls).Remembering(render.NewMemory(nil)).Render
			e := engine.New(engine.Seams{Source: memSource{s.state}, Publisher: pub}, rdr, guard.DefaultOptions(), nil)
			run := func() (commit string, git float64) {
				if whole {
					c := *pub.Config
					pub.Config = &c
				}
				out := e.Run(context.Background(), engine.Request{Command: "sync"})
				if out.Err != nil {
					b.Fatal(out.Err)
				}
				for _, st := range out.Report.Stages {
					if st.Name == "git" {
						git += st.DurationSeconds
					}
				}
				return out.Report.Commit, git
			}
			run()
			i, git := 0, 0.0
			for b.Loop() {
				b.StopTimer()
				i++
				s.setLimit(3000 + i)
				b.StartTimer()
				commit, g := run()
				if commit == "" {
					b.Fatal("no commit")
				}
				git += g
			}
			b.ReportMetric(git*1000/float64(b.N), "git-ms/op")
		})
	}
}
