package bench

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strconv"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
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
			cpu := cpuTime()
			for b.Loop() {
				var err error
				if res, err = r.Render(f.state); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpuTime()-cpu)
			f.check(b, res)
			sec := b.Elapsed().Seconds() / float64(b.N)
			perTenant[n] = sec / float64(n)
			b.ReportMetric(float64(n)/sec, "tenants/s")
			b.ReportMetric(perTenant[n]*1e6, "us/tenant")
			if first, ok := perTenant[1000]; ok && n != 1000 {
				b.ReportMetric(perTenant[n]/first, "cost/tenant-vs-1k")
			}
			// What holding one result costs: a floor of the CLI's memory.
			if after := liveHeap(); after > base {
				b.ReportMetric(mib(after-base), "result-MiB")
			}
			runtime.KeepAlive(res)
		})
	}
}

// BenchmarkRenderBackends renders 2,500 tenants of one offering of each backend
// type with the settings of internal/testenv/synth, and reports the per-tenant
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
			cpu := cpuTime()
			for b.Loop() {
				var err error
				if res, err = r.Render(f.state); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpuTime()-cpu)
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

// BenchmarkLoadSnapshot decodes the 10,000-tenant snapshot the CLI benchmark
// renders, from memory: the CLI's step before rendering. "read" is
// waldur.ReadSnapshot (the CLI's path, a json.Decoder); "unmarshal" is
// json.Unmarshal of the same bytes, for comparison: the Decoder buffers a second
// copy of the input.
func BenchmarkLoadSnapshot(b *testing.B) {
	const n = 10000
	var buf bytes.Buffer
	if err := waldur.WriteSnapshot(&buf, synth.Snapshot(synth.Options{Tenants: n, Seed: seed})); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	var readBytes float64
	b.Run(strconv.Itoa(n)+"/read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		base := liveHeap()
		var s *waldur.Snapshot
		alloc := totalAlloc()
		for b.Loop() {
			var err error
			if s, err = waldur.ReadSnapshot(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
		readBytes = float64(totalAlloc()-alloc) / float64(b.N)
		if after := liveHeap(); after > base {
			b.ReportMetric(mib(after-base), "state-MiB")
		}
		runtime.KeepAlive(s)
	})
	b.Run(strconv.Itoa(n)+"/unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		alloc := totalAlloc()
		for b.Loop() {
			var s waldur.Snapshot
			if err := json.Unmarshal(data, &s); err != nil {
				b.Fatal(err)
			}
		}
		if readBytes > 0 {
			b.ReportMetric(float64(totalAlloc()-alloc)/float64(b.N)/readBytes, "alloc-vs-read")
		}
	})
}
