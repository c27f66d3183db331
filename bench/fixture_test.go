package bench

import (
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/synth"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/templates"
	"github.com/waldur/waldur-gitops/waldur"
)

// seed is the synthetic state every benchmark renders; change it only together
// with the results in BENCHMARKS.md.
const seed = 20261121

// Goals of the 10,000-tenant render to a directory, from the performance issue.
const (
	goalWallSeconds = 3.0
	goalRSSMiB      = 500.0
)

// fixture is a prebuilt state with its config and templates.
type fixture struct {
	opts  synth.Options
	cfg   *config.Loaded
	tpls  map[string][]*templates.Template
	state *waldur.State
}

func newFixture(tb testing.TB, opts synth.Options) *fixture {
	tb.Helper()
	if opts.Seed == 0 {
		opts.Seed = seed
	}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		tb.Fatal(err)
	}
	return &fixture{opts: opts, cfg: cfg, tpls: tpls, state: synth.Generate(opts)}
}

// renderer returns a renderer of the fixture's offerings.
func (f *fixture) renderer() *render.Renderer { return render.New(f.cfg.Config, f.tpls) }

// check fails unless res rendered every generated tenant.
func (f *fixture) check(tb testing.TB, res *render.Result) {
	tb.Helper()
	if len(res.Skipped) > 0 {
		for uuid, why := range res.Skipped {
			tb.Fatalf("%d resources skipped, e.g. %s: %s", len(res.Skipped), uuid, why)
		}
	}
	seen := map[waldur.UUID]bool{}
	for _, t := range res.Tenants {
		seen[t.Resource] = true
	}
	if len(seen) != f.opts.Tenants {
		tb.Fatalf("rendered %d resources, want %d", len(seen), f.opts.Tenants)
	}
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }
