package engine_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestFromConfigRendersHollow: the engine a sync verb gets renders hollow
// (render.Renderer.HollowWhen) when, in a fresh process, the branch is
// where the last run left it with the inputs it recorded, and its feedback
// still finds every tenant in place (refresh_last_sync goes out); a dry
// run, and a run that renders to a directory, always build their files.
func TestFromConfigRendersHollow(t *testing.T) {
	opts := synth.Options{Tenants: 60, Seed: 5, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	wsrv := waldurtest.New(t, waldurtest.LogViolations())
	wsrv.Seed(synth.Generate(opts))
	var mu sync.Mutex
	refreshed := 0
	wsrv.OnRequest(func(r *http.Request, _ []byte) {
		if strings.HasSuffix(r.URL.Path, "/refresh_last_sync/") {
			mu.Lock()
			refreshed++
			mu.Unlock()
		}
	})
	text := strings.ReplaceAll(string(synth.ConfigYAML(opts)), "https://waldur.example.org/api/", wsrv.URL())
	cfg, err := config.Parse([]byte(strings.ReplaceAll(text, "synthetic-token", wsrv.Token())), filepath.Join(t.TempDir(), "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := gittest.NewServer(t)
	t.Setenv("WALDUR_GITOPS_TEST_HOLLOW_GIT_PASSWORD", srv.Password())
	cfg.Git.URL, cfg.Git.Username, cfg.Git.PasswordEnv = srv.CreateRepo(t, "tenants.git", "main"), srv.User(), "WALDUR_GITOPS_TEST_HOLLOW_GIT_PASSWORD"
	run := func(o engine.Options) (*engine.Outcome, int) {
		t.Helper()
		mu.Lock()
		refreshed = 0
		mu.Unlock()
		e, err := engine.FromConfig(cfg.Config, o) // a fresh process each time
		if err != nil {
			t.Fatal(err)
		}
		out := e.Run(context.Background(), engine.Request{Command: "sync", DryRun: o.DryRun})
		if out.Err != nil && !o.DryRun { // a dry run that would change something says so
			t.Fatal(out.Err)
		}
		mu.Lock()
		defer mu.Unlock()
		return out, refreshed
	}
	sync := engine.Options{Publish: engine.Git, Orders: true, Feedback: true}
	hollow := false
	for i := 0; i < 5 && !hollow; i++ {
		out, n := run(sync)
		if hollow = out.Result.Hollow(); hollow {
			if !out.Published.Hollow() || out.Published.Wrote {
				t.Errorf("sync %d: hollow render, hollow publish %t, wrote %t; want a hollow no-op", i+1, out.Published.Hollow(), out.Published.Wrote)
			}
			if n == 0 {
				t.Errorf("sync %d: the hollow run sent no refresh_last_sync: feedback found no tenant in place", i+1)
			}
		}
	}
	if !hollow {
		t.Fatal("no sync of an unchanged site rendered hollow")
	}
	dry := sync
	dry.DryRun = true
	if out, _ := run(dry); out.Result.Hollow() || len(out.Result.Tenants) == 0 || len(out.Result.Tenants[0].Files) == 0 {
		t.Errorf("dry run: hollow %t; want every file built", out.Result.Hollow())
	}
	if out, _ := run(engine.Options{Publish: engine.Directory, Dir: t.TempDir()}); out.Result.Hollow() {
		t.Error("a render to a directory was hollow")
	}
}
