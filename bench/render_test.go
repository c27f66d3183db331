package bench

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/synth"
	"github.com/waldur/waldur-gitops/localtree"
	"github.com/waldur/waldur-gitops/render"
)

// BenchmarkRender measures render.Renderer.Render alone on prebuilt state: the
// default k8s-ut-namespace offering with Keycloak groups and users synced into
// the CR, the heaviest path. The 10k case also reports its per-tenant cost
// relative to the 1k case of the same run (1.0 means linear scaling).
func BenchmarkRender(b *testing.B) {
	perTenant := map[int]float64{}
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			f := newFixture(b, synth.Options{Tenants: n})
			r := f.renderer()
			base := liveHeap()
			b.ReportAllocs()
			var res *render.Result
			for b.Loop() {
				var err error
				if res, err = r.Render(f.state); err != nil {
					b.Fatal(err)
				}
			}
			f.check(b, res)
			sec := b.Elapsed().Seconds() / float64(b.N)
			perTenant[n] = sec / float64(n)
			b.ReportMetric(float64(n)/sec, "tenants/s")
			b.ReportMetric(perTenant[n]*1e6, "us/tenant")
			if first, ok := perTenant[1000]; ok && n != 1000 {
				b.ReportMetric(perTenant[n]/first, "cost/tenant-vs-1k")
			}
			// What holding one result costs, the floor of the CLI's memory.
			if after := liveHeap(); after > base {
				b.ReportMetric(mib(after-base), "result-MiB")
			}
			runtime.KeepAlive(res)
		})
	}
}

// BenchmarkRenderBackends renders 2,500 tenants of one offering of each backend
// type with the default settings of internal/synth, and reports the per-tenant
// cost relative to k8s-ut-namespace (rendered first).
func BenchmarkRenderBackends(b *testing.B) {
	const n = 2500
	var first float64
	for _, typ := range config.BackendTypes {
		b.Run(typ, func(b *testing.B) {
			f := newFixture(b, synth.Options{Tenants: n, BackendTypes: []string{typ}})
			r := f.renderer()
			b.ReportAllocs()
			var res *render.Result
			for b.Loop() {
				var err error
				if res, err = r.Render(f.state); err != nil {
					b.Fatal(err)
				}
			}
			f.check(b, res)
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(n)/sec, "tenants/s")
			objects := 0
			for _, t := range res.Tenants {
				objects += len(t.Objects)
			}
			b.ReportMetric(float64(objects)/n, "objects/tenant")
			if typ == config.BackendK8sUTNamespace {
				first = sec
			} else if first > 0 {
				b.ReportMetric(sec/first, "cost-vs-k8s-ut")
			}
		})
	}
}

// BenchmarkRenderToDisk measures what `render --out DIR` does into an empty
// directory, minus reading the snapshot: Render, Tree and localtree.Write. It
// reports each phase and the share of the total that rendering takes.
func BenchmarkRenderToDisk(b *testing.B) {
	const n = 10000
	b.Run(strconv.Itoa(n), func(b *testing.B) {
		f := newFixture(b, synth.Options{Tenants: n})
		r := f.renderer()
		root := b.TempDir()
		var ph phases
		var files, bytes int
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			out := filepath.Join(root, "out"+strconv.Itoa(i))
			i++
			t := ph.start()
			res, err := r.Render(f.state)
			if err != nil {
				b.Fatal(err)
			}
			t = ph.lap("render", t)
			tree := res.Tree(nil)
			t = ph.lap("tree", t)
			if err := localtree.Write(out, tree); err != nil {
				b.Fatal(err)
			}
			ph.lap("write", t)

			b.StopTimer()
			f.check(b, res)
			files, bytes = len(tree), 0
			for _, d := range tree {
				bytes += len(d)
			}
			if err := os.RemoveAll(out); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		ph.report(b)
		b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "tenants/s")
		b.ReportMetric(float64(files), "files")
		b.ReportMetric(mib(uint64(bytes)), "tree-MiB")
	})
}

// BenchmarkRerenderToDisk measures the steady state of a periodic `render --out
// DIR`: the directory holds the previous run's tree, which is read back,
// compared with the new render (nothing changed) and replaced.
func BenchmarkRerenderToDisk(b *testing.B) {
	const n = 10000
	b.Run(strconv.Itoa(n), func(b *testing.B) {
		f := newFixture(b, synth.Options{Tenants: n})
		r := f.renderer()
		out := filepath.Join(b.TempDir(), "out")
		res, err := r.Render(f.state)
		if err != nil {
			b.Fatal(err)
		}
		if err := localtree.Write(out, res.Tree(nil)); err != nil {
			b.Fatal(err)
		}
		res = nil
		var ph phases
		b.ReportAllocs()
		for b.Loop() {
			t := ph.start()
			prev, err := localtree.Read(out)
			if err != nil {
				b.Fatal(err)
			}
			t = ph.lap("read", t)
			res, err := r.Render(f.state)
			if err != nil {
				b.Fatal(err)
			}
			t = ph.lap("render", t)
			tree := res.Tree(prev)
			t = ph.lap("tree", t)
			cs := res.Compare(prev, tree)
			t = ph.lap("compare", t)
			if err := localtree.Write(out, tree); err != nil {
				b.Fatal(err)
			}
			ph.lap("write", t)

			b.StopTimer()
			if c := cs.Counts(); c[changeset.Unchanged] != len(cs.Entries) {
				b.Fatalf("a re-render of the same state changed tenants: %v", c)
			}
			b.StartTimer()
		}
		ph.report(b)
		b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "tenants/s")
	})
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
		b.ReportMetric(float64(p.total[name].Milliseconds())/float64(b.N), name+"-ms")
	}
	if all > 0 {
		b.ReportMetric(float64(p.total["render"])/float64(all), "render-share")
	}
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
