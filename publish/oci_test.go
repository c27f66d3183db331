package publish_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/registrytest"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// artifacts returns the OCIArtifact entries of a run by action.
func artifacts(out *engine.Outcome) map[changeset.Action][]string {
	got := map[changeset.Action][]string{}
	for _, e := range out.Report.Changes {
		if e.Kind == "OCIArtifact" {
			got[e.Action] = append(got[e.Action], e.Subject)
		}
	}
	return got
}

// With git.flux_oci_repository every sync pushes, after the commit, the
// artifacts of the shards whose content changed and no other; a push the
// registry refuses leaves the commit in place, fails the run with a contained
// Git error naming it, holds the orders of the tenants of that shard, and the
// next run, with nothing new to commit, pushes what is missing.
func TestSyncShipsChangedShardArtifacts(t *testing.T) {
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	dir := filepath.Join(t.TempDir(), "tenants.git")
	gittest.InitBare(t, dir, "main")
	var refuseWrites atomic.Bool
	host := registrytest.Start(t, func(reg http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refuseWrites.Load() && r.Method != http.MethodGet && r.Method != http.MethodHead {
				http.Error(w, "read-only", http.StatusServiceUnavailable)
				return
			}
			reg.ServeHTTP(w, r)
		})
	})
	cfg.Git.URL, cfg.Git.FluxShards = dir, 2
	cfg.Git.FluxOCIRepository, cfg.Git.FluxOCIInsecure = host+"/site/tenants", true
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	src := &answers{st: st, drop: map[waldur.UUID]bool{}, direct: map[waldur.UUID]confirm.Gone{}}
	e := engine.New(engine.Seams{Source: src, Publisher: &publish.Git{Config: cfg.Config}}, render.New(cfg.Config, tpls).Render, guard.DefaultOptions(), nil)
	ctx := context.Background()
	names, _ := gitsync.LayoutFor(cfg.Config).ShardDirs()

	out := e.Run(ctx, engine.Request{Command: "sync"})
	if out.Err != nil || out.Report.Commit == "" {
		t.Fatalf("first sync: %v", out.Err)
	}
	if got := artifacts(out); len(got[changeset.Create]) != len(names) || len(got[changeset.Unchanged]) != 0 {
		t.Fatalf("first sync pushed %v, want all %d shards", got, len(names))
	}
	if len(out.Published.FluxRevisions) != len(names) {
		t.Errorf("revisions %v", out.Published.FluxRevisions)
	}
	first := out.Published.FluxRevisions

	// One tenant goes, while the registry refuses writes.
	gone := st.Offerings[0].Resources[0]
	src.drop[gone.UUID] = true
	src.direct[gone.UUID] = confirm.Gone{Why: "Waldur answers 404 for it"}
	refuseWrites.Store(true)
	out = e.Run(ctx, engine.Request{Command: "sync"})
	if out.Report.Commit == "" || failure.ClassOf(out.Err) != failure.ClassGit || !strings.Contains(out.Err.Error(), "1 flux shard artifact(s) not pushed") ||
		!strings.Contains(out.Err.Error(), "commit "+out.Report.Commit+" was pushed") {
		t.Fatalf("refused push: commit %q, %v (class %v)", out.Report.Commit, out.Err, failure.ClassOf(out.Err))
	}
	got := artifacts(out)
	if len(got[changeset.Skip]) != 1 || len(got[changeset.Unchanged]) != len(names)-1 {
		t.Fatalf("refused push: artifacts %v", got)
	}
	held := out.Published.Held
	if _, ok := held[gone.UUID]; !ok || !strings.Contains(held[gone.UUID], "is not pushed yet") {
		t.Errorf("the removed tenant's order is not held: %v", held)
	}
	if len(held) >= len(out.Published.Before.ResourceUUIDs()) {
		t.Errorf("every tenant held, not only those of the shard: %d", len(held))
	}

	// The registry is back: nothing to commit, the missing artifact is pushed.
	refuseWrites.Store(false)
	out = e.Run(ctx, engine.Request{Command: "sync"})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	got = artifacts(out)
	if len(got[changeset.Create]) != 1 || len(got[changeset.Unchanged]) != len(names)-1 {
		t.Fatalf("healing run: artifacts %v", got)
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

	// Nothing changed: nothing is pushed.
	out = e.Run(ctx, engine.Request{Command: "sync"})
	if got := artifacts(out); out.Err != nil || len(got[changeset.Create]) != 0 || len(got[changeset.Unchanged]) != len(names) {
		t.Fatalf("idle run: %v, artifacts %v", out.Err, got)
	}
}

// The registry password of git.flux_oci_password_file authenticates the
// pushes; when it cannot be read, or the registry refuses it, the commit
// stands, the orders wait, and neither the run's error, its report nor its
// log carries the password.
func TestSyncOCICredentials(t *testing.T) {
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	dir := filepath.Join(t.TempDir(), "tenants.git")
	gittest.InitBare(t, dir, "main")
	const user, pw = "pusher", "registry-pass-9f3e1c7a"
	host := registrytest.Start(t, registrytest.BasicAuth(user, pw))
	pwFile := filepath.Join(t.TempDir(), "registry-password")
	if err := os.WriteFile(pwFile, []byte("wrong-"+pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Git.URL, cfg.Git.FluxShards = dir, 2
	cfg.Git.FluxOCIRepository, cfg.Git.FluxOCIInsecure = host+"/site/tenants", true
	cfg.Git.FluxOCIUsername, cfg.Git.FluxOCIPasswordFile = user, pwFile
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	lg := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: redact.ReplaceAttr}))
	e := engine.New(engine.Seams{Source: &answers{st: st}, Publisher: &publish.Git{Config: cfg.Config, Log: lg}}, render.New(cfg.Config, tpls).Render, guard.DefaultOptions(), lg)
	// The password file cannot be read: the commit is pushed, no artifact,
	// every tenant's order held, a config error naming the key.
	cfg.Git.FluxOCIPasswordFile = pwFile + ".missing"
	out := e.Run(context.Background(), engine.Request{Command: "sync"})
	if failure.ClassOf(out.Err) != failure.ClassConfig || !strings.Contains(out.Err.Error(), "git.flux_oci_password_file") || out.Report.Commit == "" ||
		len(out.Published.Held) != len(out.Published.After.ResourceUUIDs()) {
		t.Fatalf("unreadable password: %v (commit %q, %d of %d held)", out.Err, out.Report.Commit, len(out.Published.Held), len(out.Published.After.ResourceUUIDs()))
	}
	cfg.Git.FluxOCIPasswordFile = pwFile
	out = e.Run(context.Background(), engine.Request{Command: "sync"})
	if failure.ClassOf(out.Err) != failure.ClassGit || !strings.Contains(out.Err.Error(), "UNAUTHORIZED") {
		t.Fatalf("a refused login: %v", out.Err)
	}
	js, err := json.Marshal(out.Report)
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"error": out.Err.Error(), "report": string(js), "log": logs.String()} {
		if strings.Contains(text, pw) {
			t.Errorf("the %s carries the registry password", what)
		}
	}

	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = e.Run(context.Background(), engine.Request{Command: "sync"})
	names, _ := gitsync.LayoutFor(cfg.Config).ShardDirs()
	if got := artifacts(out); out.Err != nil || len(got[changeset.Create]) != len(names) {
		t.Fatalf("with the right password: %v, artifacts %v", out.Err, got)
	}
}
