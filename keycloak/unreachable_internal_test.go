package keycloak

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/unreachabletest"
	"github.com/waldur/waldur-gitops/internal/unreachable"
)

// deadEndClient is a client of the Keycloak at url with a one-second
// timeout, five retries and millisecond backoff.
func deadEndClient(t *testing.T, url string) *Client {
	t.Helper()
	one, five := 1, 5
	c, err := NewClient(Target{URL: url, Realm: "r", Settings: config.KeycloakSettings{
		ClientID: "admin-cli", Username: "admin", Password: "dead-end-password", TimeoutSeconds: &one, MaxRetries: &five,
	}}, ClientOptions{Backoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSilentKeycloakCostsTwoTimeouts: a Keycloak that accepts connections
// and never answers is tried twice, not max_retries+1 times, and later calls
// of the run fail at once without a connection.
func TestSilentKeycloakCostsTwoTimeouts(t *testing.T) {
	srv := unreachabletest.NewSilent(t)
	c := deadEndClient(t, srv.URL())
	ctx := unreachable.Track(context.Background())
	if _, err := c.topGroups(ctx); err == nil || !IsUnavailable(err) {
		t.Fatalf("the first call: %v, want Keycloak unavailable", err)
	}
	if n := srv.Accepted(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	start := time.Now()
	_, err := c.topGroups(ctx)
	if !errors.As(err, new(*unreachable.Error)) || !IsUnavailable(err) {
		t.Fatalf("the second call: %v, want it refused as unreachable", err)
	}
	if n := srv.Accepted(); n != 2 || time.Since(start) > 100*time.Millisecond {
		t.Errorf("the second call connected (%d connections) or waited (%s)", n, time.Since(start))
	}
}

// TestRefusedKeycloakIsRemembered: a refused port is retried as configured,
// then remembered for the rest of the run.
func TestRefusedKeycloakIsRemembered(t *testing.T) {
	c := deadEndClient(t, "http://"+unreachabletest.Refused(t))
	ctx := unreachable.Track(context.Background())
	if _, err := c.topGroups(ctx); err == nil || errors.As(err, new(*unreachable.Error)) {
		t.Fatalf("the first call: %v, want the refusal itself", err)
	}
	if got := c.Calls()[CallLogin]; got != 6 {
		t.Errorf("%d login attempts, want 6 (max_retries 5)", got)
	}
	if _, err := c.topGroups(ctx); !errors.As(err, new(*unreachable.Error)) {
		t.Errorf("the second call: %v, want it refused as unreachable", err)
	}
	if got := c.Calls()[CallLogin]; got != 6 {
		t.Errorf("the refused call made attempts: %d logins", got)
	}
}
