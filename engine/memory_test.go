package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestFromConfigRemembersRenders: the engine FromConfig builds keeps its
// renders (render.Memory): the first run renders in full and says why at
// debug level, a later run renders only the resource that changed, and its
// tree is the one a new engine renders from scratch.
func TestFromConfigRemembersRenders(t *testing.T) {
	opts := synth.Options{Tenants: 120, Seed: 5, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap := synth.Snapshot(opts)
	path := filepath.Join(t.TempDir(), "snapshot.json")
	write := func() {
		var b bytes.Buffer
		if err := waldur.WriteSnapshot(&b, snap); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logged bytes.Buffer
	wire := engine.Options{Snapshot: path, Publish: engine.Directory, Dir: filepath.Join(t.TempDir(), "out"),
		Log: slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	e, err := engine.FromConfig(cfg.Config, wire)
	if err != nil {
		t.Fatal(err)
	}
	write()
	if out := e.Run(context.Background(), engine.Request{Command: "render"}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if line := scopeLine(t, logged.String()); line["msg"] != "rendered in full" || line["cause"] != "no_last_render" {
		t.Fatalf("first run: %v", line)
	}
	rs := &snap.State.Offerings[0].Resources[0]
	for k := range rs.Limits {
		rs.Limits[k] = "7"
	}
	write()
	logged.Reset()
	got := e.Run(context.Background(), engine.Request{Command: "render"})
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if line := scopeLine(t, logged.String()); line["msg"] != "rendered what changed" || line["rendered"] != float64(1) {
		t.Fatalf("second run: %v", line)
	}
	wire.Log, wire.Dir = nil, filepath.Join(t.TempDir(), "fresh")
	fresh, err := engine.FromConfig(cfg.Config, wire)
	if err != nil {
		t.Fatal(err)
	}
	want := fresh.Run(context.Background(), engine.Request{Command: "render"})
	if want.Err != nil {
		t.Fatal(want.Err)
	}
	if !got.Result.Tree(nil).Equal(want.Result.Tree(nil)) {
		t.Fatal("the remembered render's tree differs from a render from scratch")
	}
}

// scopeLine is the last log line that says how a render was scoped.
func scopeLine(t *testing.T, log string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, l := range strings.Split(log, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && strings.HasPrefix(m["msg"].(string), "rendered ") && m["level"] == "DEBUG" {
			found = m
		}
	}
	if found == nil {
		t.Fatalf("no render scope logged:\n%s", log)
	}
	return found
}
