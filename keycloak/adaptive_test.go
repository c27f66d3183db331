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
)

// adaptiveConfig is one namespace offering on url with the default
// requests_per_second (no fixed rate) and concurrency ceiling.
func adaptiveConfig(t *testing.T, url string) *config.Config {
	t.Helper()
	text := fmt.Sprintf(`offerings:
- name: Bench
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: %s
  backend_type: namespace
  backend_settings:
    keycloak_enabled: true
    keycloak: {keycloak_url: %q, keycloak_username: admin, keycloak_password: admin}
`, nsOffering, url)
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return l.Config
}

// TestAdaptiveConcurrency: with the defaults, the calls in flight follow
// what Keycloak can take. A Keycloak that serves 3 requests at a time and
// queues 4 more (answering 503 beyond) is kept below its refusals — a
// fixed 16 in flight, the ceiling, would be refused on every burst — and
// one that answers quickly gets more than the 4 calls the window starts at.
func TestAdaptiveConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("a first pass of 100 tenants, twice")
	}
	if config.DefaultKeycloakRequestsPerSecond != 0 || config.DefaultKeycloakConcurrency != 16 {
		t.Fatalf("defaults: requests_per_second %v, concurrency %d; want no fixed rate and a ceiling of 16",
			config.DefaultKeycloakRequestsPerSecond, config.DefaultKeycloakConcurrency)
	}
	for _, tc := range []struct {
		name                   string
		workers, queue         int
		service                time.Duration
		maxRefusedPct, minPeak int
	}{
		{name: "slowing", workers: 3, queue: 4, service: 5 * time.Millisecond, maxRefusedPct: 2},
		{name: "quick", workers: 64, service: time.Millisecond, maxRefusedPct: 0, minPeak: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := kctest.NewServer()
			defer s.Close()
			res := benchWorld(s, 100)
			s.SetCapacity(tc.workers, tc.service, tc.queue)
			r, err := keycloak.Reconcile(context.Background(), adaptiveConfig(t, s.URL), res, keycloak.Options{})
			if err != nil {
				t.Fatal(err)
			}
			peak, refused, requests := s.CapacityStats()
			t.Logf("%d requests, %d refused, at most %d in the server at once; calls %v", requests, refused, peak, r.Calls)
			if refused*100 > tc.maxRefusedPct*requests {
				t.Errorf("Keycloak refused %d of %d requests (over %d%%): the client did not back off", refused, requests, tc.maxRefusedPct)
			}
			if peak < tc.minPeak {
				t.Errorf("at most %d requests in flight against a quick Keycloak, want at least %d: the window did not grow", peak, tc.minPeak)
			}
		})
	}
}
