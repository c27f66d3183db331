package flux_test

import (
	"cmp"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

// BenchmarkFluxOneTenantChange measures what one changed tenant costs the
// real Flux with this repository layout (one GitRepository, shard
// Kustomizations), the reconcile requested right after the push: the time
// from the end of the push until the tenant's quota changes in the cluster
// (s-to-quota), until every shard is Ready at the commit (s-to-ready), and the
// CPU the two controllers spend on it. $WALDUR_GITOPS_FLUX_BENCH sets
// "tenants/shards" or "tenants/shards/parts" (git.flux_shard_parts; default
// 1000/4; 100/4 takes seconds, 1000/4 about two minutes for the first sync
// on two cores).
//
//	go test ./e2e/flux -run '^$' -bench FluxOneTenantChange -benchtime 3x
func BenchmarkFluxOneTenantChange(b *testing.B) {
	tenants, shards, keys := benchSize(b)
	s := startWith(b, tenants, shards, true, keys...)
	first := time.Now()
	commit := s.sync()
	s.trigger()
	s.limit = 30 * time.Minute // the first sync of a big site on a loaded machine
	s.waitApplied(commit)
	s.limit = 0
	b.Logf("first sync of %d tenants in %d shards: every shard Ready %.1fs after the push", tenants, shards, time.Since(first).Seconds())
	r := s.firstResource()
	ns := s.namespaceOf(r.UUID)
	cpu := 0
	if v, err := strconv.Atoi(string(r.Limits["cpu"])); err == nil {
		cpu = v
	}
	var toQuota, toReady time.Duration
	cpu0 := s.flux.CPU()
	n := 0
	// b.Loop runs the function once, so the stack starts once.
	for b.Loop() {
		n++
		cpu++
		r.Limits["cpu"] = waldur.Amount(strconv.Itoa(cpu))
		commit := s.sync()
		pushed := time.Now()
		s.trigger()
		s.waitFor("quota changed", func() (bool, string) { return quotaIs(s, ns, strconv.Itoa(cpu)) })
		toQuota += time.Since(pushed)
		s.waitApplied(commit)
		toReady += time.Since(pushed)
	}
	cpu1 := s.flux.CPU()
	per := func(d time.Duration) float64 { return d.Seconds() / float64(n) }
	b.ReportMetric(per(toQuota), "s-to-quota")
	b.ReportMetric(per(toReady), "s-to-ready")
	b.ReportMetric(per(cpu1["kustomize-controller"]-cpu0["kustomize-controller"]), "kustomize-cpu-s/op")
	b.ReportMetric(per(cpu1["source-controller"]-cpu0["source-controller"]), "source-cpu-s/op")
}

// profile starts, when $WALDUR_GITOPS_FLUX_PPROF names a file, a CPU profile
// of kustomize-controller over the next $WALDUR_GITOPS_FLUX_PPROF_SECONDS
// (default 60) and returns a function that waits for it to be written.
func (s *site) profile(b *testing.B) (wait func()) {
	path := os.Getenv("WALDUR_GITOPS_FLUX_PPROF")
	if path == "" {
		return func() {}
	}
	secs, err := strconv.Atoi(cmp.Or(os.Getenv("WALDUR_GITOPS_FLUX_PPROF_SECONDS"), "60"))
	if err != nil {
		b.Fatalf("WALDUR_GITOPS_FLUX_PPROF_SECONDS: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.flux.Profile(s.ctx, "kustomize-controller", time.Duration(secs)*time.Second, path) }()
	return func() {
		if err := <-done; err != nil {
			b.Errorf("kustomize-controller profile: %v", err)
		} else {
			b.Logf("kustomize-controller CPU profile in %s (go tool pprof %s)", path, path)
		}
	}
}

// benchSize reads $WALDUR_GITOPS_FLUX_BENCH, "tenants/shards[/parts]"
// (default 1000/4, each shard in one part), and returns the config keys the
// size needs besides flux_shards.
func benchSize(b *testing.B) (tenants, shards int, keys []string) {
	tenants, shards, parts := 1000, 4, 1
	if v := os.Getenv("WALDUR_GITOPS_FLUX_BENCH"); v != "" {
		fields := strings.Split(v, "/")
		var err error
		if len(fields) < 2 || len(fields) > 3 {
			b.Fatalf("WALDUR_GITOPS_FLUX_BENCH=%q: want tenants/shards or tenants/shards/parts", v)
		}
		if tenants, err = strconv.Atoi(fields[0]); err == nil {
			shards, err = strconv.Atoi(fields[1])
		}
		if err == nil && len(fields) == 3 {
			parts, err = strconv.Atoi(fields[2])
		}
		if err != nil {
			b.Fatalf("WALDUR_GITOPS_FLUX_BENCH=%q: want tenants/shards or tenants/shards/parts", v)
		}
	}
	if parts > 1 {
		keys = append(keys, "flux_shard_parts: "+strconv.Itoa(parts))
		b.Logf("every shard in %d parts", parts)
	}
	return tenants, shards, keys
}
