package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestFromConfigDropsObjectsOnlyForFiles: a run that publishes files to a
// directory keeps the generic objects only of the tenants that fulfil an
// order; one that shows the render (and would print them) keeps them all.
func TestFromConfigDropsObjectsOnlyForFiles(t *testing.T) {
	opts := synth.Options{Tenants: 200, Seed: 3, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := waldur.WriteSnapshot(&snap, synth.Snapshot(opts)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snapshot.json")
	if err := os.WriteFile(path, snap.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		publish engine.Destination
		dropped bool
	}{{"directory", engine.Directory, true}, {"nowhere", engine.Nowhere, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := engine.FromConfig(cfg.Config, engine.Options{Snapshot: path, Publish: tc.publish, Dir: filepath.Join(t.TempDir(), "out")})
			if err != nil {
				t.Fatal(err)
			}
			out := e.Run(context.Background(), engine.Request{Command: "render"})
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			withOrders, without := 0, 0
			for _, tn := range out.Result.Tenants {
				if len(tn.Files) == 0 {
					t.Fatalf("%s has no files", tn.Dir)
				}
				switch {
				case len(tn.Orders) > 0:
					withOrders++
					if len(tn.Objects) == 0 {
						t.Fatalf("%s fulfils an order but lost its objects", tn.Dir)
					}
				default:
					without++
					if (tn.Objects == nil) != tc.dropped {
						t.Fatalf("%s: %d objects, want them dropped: %t", tn.Dir, len(tn.Objects), tc.dropped)
					}
				}
			}
			if withOrders == 0 || without == 0 {
				t.Fatalf("%d tenants with orders, %d without: want both", withOrders, without)
			}
		})
	}
}
