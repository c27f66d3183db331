package bench

import (
	"runtime"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
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
	for uuid, why := range res.Skipped {
		tb.Fatalf("%d resources skipped, e.g. %s: %s", len(res.Skipped), uuid, why)
	}
	seen := map[waldur.UUID]bool{}
	for _, t := range res.Tenants {
		seen[t.Resource] = true
	}
	if len(seen) != f.opts.Tenants {
		tb.Fatalf("rendered %d resources, want %d", len(seen), f.opts.Tenants)
	}
}

// phases adds up the time spent in named phases of a benchmark loop.
type phases struct {
	names []string
	total map[string]time.Duration
}

func (p *phases) start() time.Time { return time.Now() }

// lap books the time since t to phase name and returns now.
func (p *phases) lap(name string, t time.Time) time.Time {
	now := time.Now()
	if p.total == nil {
		p.total = map[string]time.Duration{}
	}
	if _, ok := p.total[name]; !ok {
		p.names = append(p.names, name)
	}
	p.total[name] += now.Sub(t)
	return now
}

// report writes each phase's mean in ms and the render phase's share of all.
func (p *phases) report(b *testing.B) {
	var all time.Duration
	for _, name := range p.names {
		all += p.total[name]
		b.ReportMetric(float64(p.total[name].Microseconds())/1e3/float64(b.N), name+"-ms")
	}
	if all > 0 {
		b.ReportMetric(float64(p.total["render"])/float64(all), "render-share")
	}
}

// reportCPU reports the CPU time (all threads, GC included) per iteration and
// how many cores that kept busy on average. CPU time is steadier than wall time
// on a shared machine, and says what a render costs whatever the core count.
func reportCPU(b *testing.B, cpu time.Duration) {
	if cpu <= 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	if e := b.Elapsed(); e > 0 {
		b.ReportMetric(float64(cpu)/float64(e), "cores")
	}
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// totalAlloc returns the bytes allocated by the process so far.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }
