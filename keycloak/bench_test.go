package keycloak_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// The Keycloak benchmark (BENCHMARKS.md, "Keycloak"): tenants × 3 namespace
// role groups × 5 members each, drawn from a pool of users, against the fake
// with 2 ms of latency on every call. "first" reconciles an empty realm,
// "noop" a realm that is already right.
//
//	go test ./keycloak -run '^$' -bench BenchmarkKeycloak -benchtime 1x -timeout 30m
const (
	benchLatency    = 2 * time.Millisecond
	benchMembers    = 5
	benchUserPool   = 20000
	benchConcurrent = config.DefaultKeycloakConcurrency
)

// benchWorld builds the fake's users and the render result of n tenants.
// Offering usernames are Keycloak user ids, as keycloak_use_user_id (the
// default) expects, so each new user costs one lookup.
func benchWorld(s *kctest.Server, n int) *render.Result {
	ids := make([]string, benchUserPool)
	for i := range ids {
		ids[i] = s.AddUser(kctest.Realm, fmt.Sprintf("user%05d", i))
	}
	res := &render.Result{Skipped: map[waldur.UUID]string{}, Terminations: map[waldur.UUID][]waldur.UUID{}}
	for t := range n {
		r := waldur.UUID(fmt.Sprintf("a0000000000040008000%012d", t))
		res.Tenants = append(res.Tenants, &render.Tenant{Offering: "Bench", Resource: r})
		for j, role := range config.NamespaceRoles {
			g := render.Group{Name: fmt.Sprintf("ns_t%05d_%s", t, role), Offering: "Bench", Resources: []waldur.UUID{r},
				Description: "Namespace t" + fmt.Sprint(t) + " " + role + " access"}
			for m := range benchMembers {
				g.Members = append(g.Members, ids[(t*3*benchMembers+j*benchMembers+m)%benchUserPool])
			}
			res.Groups = append(res.Groups, g)
		}
	}
	return res
}

func benchConfig(b *testing.B, url string) *config.Config {
	b.Helper()
	text := fmt.Sprintf(`offerings:
- name: Bench
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: %s
  backend_type: namespace
  backend_settings:
    keycloak_enabled: true
    keycloak: {keycloak_url: %q, keycloak_username: admin, keycloak_password: admin, requests_per_second: 0, concurrency: %d}
`, nsOffering, url, benchConcurrent)
	l, err := config.Parse([]byte(text), filepath.Join(b.TempDir(), "config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	return l.Config
}

func BenchmarkKeycloak(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, phase := range []string{"first", "noop"} {
			b.Run(fmt.Sprintf("tenants=%d/%s", n, phase), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					s := kctest.NewServer()
					res := benchWorld(s, n)
					cfg := benchConfig(b, s.URL)
					ctx := context.Background()
					if phase == "noop" {
						if _, err := keycloak.Reconcile(ctx, cfg, res, keycloak.Options{}); err != nil {
							b.Fatal(err)
						}
					}
					s.SetLatency(benchLatency)
					s.ResetCounts()
					b.StartTimer()
					start := time.Now()
					r, err := keycloak.Reconcile(ctx, cfg, res, keycloak.Options{})
					wall := time.Since(start)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					groups := 3 * n
					b.ReportMetric(float64(keycloak.Total(r.Calls)), "calls")
					b.ReportMetric(float64(keycloak.Writes(r.Calls)), "writes")
					b.ReportMetric(float64(keycloak.Total(r.Calls)-keycloak.Writes(r.Calls)), "reads")
					b.ReportMetric(float64(keycloak.Total(r.Calls)-keycloak.Writes(r.Calls))/float64(groups), "reads/group")
					b.ReportMetric(wall.Seconds(), "wall-s")
					if phase == "noop" && keycloak.Writes(r.Calls) != 0 {
						b.Errorf("the no-op run wrote: %v", r.Calls)
					}
					b.Logf("%d tenants, %s run: %s, calls %v, server requests %d", n, phase, wall.Round(time.Millisecond), r.Calls, s.Requests())
					s.Close()
				}
			})
		}
	}
}
