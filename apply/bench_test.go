package apply_test

import (
	"context"
	"testing"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
)

// benchSeed is the synthetic state the apply benchmarks use; change it only
// together with the results in BENCHMARKS.md.
const benchSeed = 20261121

// BenchmarkApply1000 applies 1,000 synthetic tenants, 250 of each backend
// type, to a real API server: "initial" into an empty cluster (a fresh one per
// iteration, started outside the timer) at the default client-side rate limit,
// "initial-unthrottled" the same without it, "noop" again into a cluster that
// has them all, where every object is unchanged.
//
//	go test ./apply -run '^$' -bench Apply1000 -benchtime 3x -count 1 -timeout 30m
func BenchmarkApply1000(b *testing.B) {
	opts := synth.Options{Tenants: 1000, Seed: benchSeed, BackendTypes: config.BackendTypes}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		b.Fatal(err)
	}
	// One cluster takes all four offerings here, so their namespaces must not
	// collide: each gets its own prefix.
	for i := range cfg.Offerings {
		switch s := cfg.Offerings[i].Settings; {
		case s.OKD != nil:
			s.OKD.NamespacePrefix = "okd-"
		case s.Rancher != nil:
			s.Rancher.ProjectPrefix = "rch-"
		}
	}
	res := renderState(b, cfg.Config, synth.Generate(opts))
	if len(res.Skipped) > 0 {
		b.Fatalf("%d resources skipped", len(res.Skipped))
	}
	objects := objectCount(res)
	crds := []string{crdManagedNamespace, crdRancher}
	run := func(b *testing.B, c *testCluster, want changeset.Action, qps float32) *apply.Result {
		got, err := apply.Apply(context.Background(), cfg.Config, res,
			apply.Options{Kubeconfig: c.KubeconfigPath(kubetest.Admin), Guard: guard.DefaultOptions(), QPS: qps})
		if err != nil {
			b.Fatal(err)
		}
		if n := got.Changes.Counts()[want]; n != objects {
			b.Fatalf("%d of %d objects %s: %s", n, objects, want, got.Changes.Summary())
		}
		return got
	}
	report := func(b *testing.B, got *apply.Result) {
		b.ReportMetric(float64(objects), "objects/op")
		b.ReportMetric(float64(got.Calls["apply"]), "applies/op")
		b.ReportMetric(float64(got.Calls["list"]), "lists/op")
		b.ReportMetric(float64(objects)/(b.Elapsed().Seconds()/float64(b.N)), "objects/s")
	}

	for _, initial := range []struct {
		name string
		qps  float32
	}{{"initial", 0}, {"initial-unthrottled", -1}} {
		b.Run(initial.name, func(b *testing.B) {
			var got *apply.Result
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := startCluster(b, crds)
				c.prepareNamespaces(res)
				b.StartTimer()
				got = run(b, c, changeset.Create, initial.qps)
				b.StopTimer()
				c.Stop()
				b.StartTimer()
			}
			report(b, got)
		})
	}

	b.Run("noop", func(b *testing.B) {
		b.StopTimer()
		c := startCluster(b, crds)
		c.prepareNamespaces(res)
		run(b, c, changeset.Create, -1)
		b.StartTimer()
		var got *apply.Result
		for i := 0; i < b.N; i++ {
			got = run(b, c, changeset.Unchanged, 0)
		}
		report(b, got)
	})
}
