package keycloak_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/publish"
)

// BenchmarkKeycloakDefaultStore (BENCHMARKS.md, "Keycloak memory by
// default"): a no-op pass at the defaults, started afresh as a CronJob's
// next run is — the memory loaded from where sync keeps it by default, the
// state ref of the GitOps repository (a local bare repository here), not
// from this process — 15 minutes (the example CronJob's schedule) after the
// pass that left it. The same world as BenchmarkKeycloak: tenants × 3 groups
// × 5 members, 2 ms on every call of the fake.
//
//	go test ./keycloak -run '^$' -bench BenchmarkKeycloakDefaultStore -benchtime 1x -timeout 30m
//
// beyond-share is the requests beyond the verify_every share (two per group
// of the share: the group and its members) and the login.
func BenchmarkKeycloakDefaultStore(b *testing.B) {
	const interval = 15 * time.Minute
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				s := kctest.NewServer()
				res := benchWorld(s, n)
				cfg := storeBenchConfig(b, s.URL)
				ctx := context.Background()
				memory := func() *keycloak.Memory { return publish.KeycloakMemory(cfg, &publish.Git{Config: cfg}, false) }
				first := time.Now()
				if _, err := keycloak.Reconcile(ctx, cfg, res, keycloak.Options{Memory: memory(), Now: func() time.Time { return first }}); err != nil {
					b.Fatal(err)
				}
				state, err := memory().Store().Load(ctx)
				if err != nil {
					b.Fatal(err)
				}
				s.SetLatency(benchLatency)
				s.ResetCounts()
				later := func() time.Time { return first.Add(interval) }
				b.StartTimer()
				start := time.Now()
				r, err := keycloak.Reconcile(ctx, cfg, res, keycloak.Options{Memory: memory(), Now: later})
				wall := time.Since(start)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				groups := 3 * n
				share := int(math.Ceil(float64(groups) * float64(interval) / float64(config.DefaultKeycloakVerifyEvery)))
				calls := keycloak.Total(r.Calls)
				b.ReportMetric(float64(calls), "calls")
				b.ReportMetric(float64(calls-2*share), "beyond-share")
				b.ReportMetric(float64(keycloak.Writes(r.Calls)), "writes")
				b.ReportMetric(float64(len(state)), "state-bytes")
				b.ReportMetric(wall.Seconds(), "wall-s")
				if keycloak.Writes(r.Calls) != 0 || r.Calls[keycloak.CallListGroups] != 0 {
					b.Errorf("the no-op pass wrote or listed the realm: %v", r.Calls)
				}
				b.Logf("%d tenants (%d groups): %s, calls %v; share %d groups; state %d bytes", n, groups, wall.Round(time.Millisecond), r.Calls, share, len(state))
				s.Close()
			}
		})
	}
}

// storeBenchConfig is benchConfig with a GitOps repository, where the
// memory is kept.
func storeBenchConfig(b *testing.B, url string) *config.Config {
	b.Helper()
	repo := b.TempDir()
	gittest.InitBare(b, repo, "main")
	text := fmt.Sprintf(`git: {url: %s}
offerings:
- name: Bench
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: %s
  backend_type: namespace
  backend_settings:
    keycloak_enabled: true
    keycloak: {keycloak_url: %q, keycloak_username: admin, keycloak_password: admin}
`, repo, nsOffering, url)
	l, err := config.Parse([]byte(text), filepath.Join(b.TempDir(), "config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	return l.Config
}
