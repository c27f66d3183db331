// Package exampletest loads and renders configs and snapshots for tests, the
// bundled example above all, failing the test on any error.
package exampletest

import (
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Load loads the config at configPath and the snapshot at snapshotPath.
func Load(t testing.TB, configPath, snapshotPath string) (*config.Loaded, *waldur.State) {
	t.Helper()
	cfg, err := config.Load(configPath)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := waldur.LoadSnapshot(snapshotPath)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, &snap.State
}

// Render renders st with cfg and the templates it names.
func Render(t testing.TB, cfg *config.Config, st *waldur.State) *render.Result {
	t.Helper()
	tpls, err := render.LoadTemplates(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := render.New(cfg, tpls).Render(st)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
