package render

import (
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
)

// BenchmarkRenderRemembered renders 10,000 tenants after one resource
// changed: from scratch, and with a Memory of the render before
// (go test ./render -run '^$' -bench BenchmarkRenderRemembered).
func BenchmarkRenderRemembered(b *testing.B) {
	opts := synth.Options{Tenants: 10000, Seed: 20261124, BackendTypes: []string{config.BackendK8sUTNamespace}, DisableKeycloak: true}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		b.Fatal(err)
	}
	tpls, err := LoadTemplates(cfg.Config)
	if err != nil {
		b.Fatal(err)
	}
	st := synth.Generate(opts)
	rs := &st.Offerings[0].Resources[0]
	for _, c := range []struct {
		name string
		r    *Renderer
	}{
		{"full", New(cfg.Config, tpls).WithoutObjects()},
		{"memory", New(cfg.Config, tpls).WithoutObjects().Remembering(NewMemory(nil))},
	} {
		b.Run(c.name, func(b *testing.B) {
			if _, err := c.r.Render(st); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				rs.Paused = !rs.Paused
				if _, err := c.r.Render(st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
