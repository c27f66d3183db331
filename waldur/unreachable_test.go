package waldur_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/unreachabletest"
	"github.com/waldur/waldur-gitops/internal/unreachable"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestSilentServerCostsTwoTimeouts: a Waldur that accepts connections and
// never answers is tried twice, not RetryMax+1 times, and once it has given
// up, every later request of the run fails at once without a connection.
func TestSilentServerCostsTwoTimeouts(t *testing.T) {
	srv := unreachabletest.NewSilent(t)
	c := newClient(t, srv.URL(), "token-for-the-silent-server", func(o *waldur.ClientOptions) {
		o.Timeout, o.RetryMax, o.RetryWaitMin, o.RetryWaitMax = 200*time.Millisecond, 5, time.Millisecond, time.Millisecond
	})
	ctx := unreachable.Track(context.Background())
	start := time.Now()
	_, err := c.ListResources(ctx, offering)
	if err == nil {
		t.Fatal("a silent server answered")
	}
	if n := srv.Accepted(); n != 2 {
		t.Errorf("%d connections for the first request, want 2 (one retry of a request that timed out)", n)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the first request took %s", d)
	}
	start = time.Now()
	_, err = c.ListOrders(ctx, offering)
	var ue *unreachable.Error
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "unreachable earlier in this run") {
		t.Fatalf("the second request: %v, want it refused as unreachable", err)
	}
	if n := srv.Accepted(); n != 2 {
		t.Errorf("the second request connected: %d connections", n)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("the second request took %s, want an immediate failure", d)
	}
}

// TestRefusedHostFailsFastAfterRetries: a refused port is retried as
// configured, then remembered for the run, and only for the run.
func TestRefusedHostFailsFastAfterRetries(t *testing.T) {
	addr := unreachabletest.Refused(t)
	c := newClient(t, "http://"+addr, "token-for-the-refused-server", func(o *waldur.ClientOptions) {
		o.RetryMax, o.RetryWaitMin, o.RetryWaitMax = 3, time.Millisecond, time.Millisecond
	})
	ctx := unreachable.Track(context.Background())
	if _, err := c.ListResources(ctx, offering); err == nil || errors.As(err, new(*unreachable.Error)) {
		t.Fatalf("the first request: %v, want the refusal itself", err)
	}
	if got := c.Stats().Requests[waldur.KindResourcesList]; got != 4 {
		t.Errorf("%d attempts, want 4 (RetryMax 3)", got)
	}
	if _, err := c.ListOrders(ctx, offering); !errors.As(err, new(*unreachable.Error)) {
		t.Errorf("the second request of the run: %v, want it refused as unreachable", err)
	}
	if got := c.Stats().Requests[waldur.KindOrdersList]; got != 0 {
		t.Errorf("the refused request made %d attempts", got)
	}
	if _, err := c.ListOrders(unreachable.Track(context.Background()), offering); errors.As(err, new(*unreachable.Error)) {
		t.Errorf("the next run inherits the memory: %v", err)
	}
}
