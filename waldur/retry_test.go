package waldur_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

func TestRetriesServerErrorsThenSucceeds(t *testing.T) {
	for _, status := range []int{500, 502, 503, 504, 429} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := waldurtest.New(t)
			srv.AddResource(waldur.Resource{OfferingUUID: offering})
			srv.FailNext(2, status)
			c := clientFor(t, srv)
			res, err := c.ListResources(context.Background(), offering)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 {
				t.Errorf("got %d resources", len(res))
			}
			if n := srv.Requests(resourcesPath); n != 3 {
				t.Errorf("%d attempts, want 3", n)
			}
			st := c.Stats()
			if st.Retries[waldur.KindResourcesList] != 2 || st.Requests[waldur.KindResourcesList] != 3 || st.TotalErrors() != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestRetriesWritesOnServerErrors(t *testing.T) {
	srv := waldurtest.New(t)
	id := srv.AddOrder(offering, waldur.Order{})
	srv.FailNext(1, 502)
	if err := clientFor(t, srv).ApproveOrder(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests("/api/marketplace-orders/"); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	if o, _ := srv.Order(id); o.State != waldur.OrderExecuting {
		t.Errorf("order state %s", o.State)
	}
}

func TestGivesUpAfterRetryMax(t *testing.T) {
	srv := waldurtest.New(t)
	srv.FailNext(10, 503)
	c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.RetryMax = 2 })
	_, err := c.ListOrders(context.Background(), offering)
	if !waldur.HasStatus(err, 503) {
		t.Fatalf("error %v, want a 503 APIError", err)
	}
	if n := srv.Requests("/api/marketplace-orders/"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	if c.Stats().Errors[waldur.KindOrdersList] != 1 {
		t.Errorf("stats %+v", c.Stats())
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 405, 409, 501} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := waldurtest.New(t)
			srv.FailNext(5, status)
			c := clientFor(t, srv)
			_, err := c.Team(context.Background(), projectA)
			if !waldur.HasStatus(err, status) {
				t.Fatalf("error %v, want status %d", err, status)
			}
			if n := srv.Requests("/api/"); n != 1 {
				t.Errorf("%d attempts, want exactly 1", n)
			}
			if c.Stats().TotalRetries() != 0 {
				t.Errorf("stats %+v", c.Stats())
			}
		})
	}
}

// TestRetryAfterIsHonoured: with a 1 ms backoff, a Retry-After of one second
// makes the client wait, up to RetryWaitMax (40 ms here).
func TestRetryAfterIsHonoured(t *testing.T) {
	const limit = 40 * time.Millisecond
	for _, status := range []int{429, 503} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := waldurtest.New(t)
			srv.InjectFault(waldurtest.Fault{Count: 1, Status: status, RetryAfter: "1"})
			c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.RetryWaitMin, o.RetryWaitMax = time.Millisecond, limit })
			start := time.Now()
			if _, err := c.Version(context.Background()); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < limit {
				t.Errorf("retried after %s; Retry-After (capped at %s) was not honoured", took, limit)
			}
		})
	}
}

// TestTransportErrorsAreRetried: the server closes the connection without an
// answer twice, then answers.
func TestTransportErrorsAreRetried(t *testing.T) {
	srv := waldurtest.New(t)
	srv.InjectFault(waldurtest.Fault{Count: 2, Drop: true})
	c := clientFor(t, srv)
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests("/api/version/"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	if c.Stats().Retries[waldur.KindVersion] != 2 {
		t.Errorf("stats %+v", c.Stats())
	}
}

func TestTransportErrorAfterRetries(t *testing.T) {
	srv := waldurtest.New(t)
	srv.InjectFault(waldurtest.Fault{Count: 10, Drop: true})
	c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.RetryMax = 1 })
	_, err := c.Version(context.Background())
	var ae *waldur.APIError
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("error %v, want a transport error", err)
	}
	if n := srv.Requests("/api/version/"); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
}

func TestContextCancellation(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*waldurtest.Server)
		mod   func(*waldur.ClientOptions)
	}{
		{"while the server is slow", func(s *waldurtest.Server) { s.SetDelay("/api/", 10*time.Second) }, nil},
		{"while waiting to retry", func(s *waldurtest.Server) { s.FailNext(100, 503) },
			func(o *waldur.ClientOptions) { o.RetryWaitMin, o.RetryWaitMax = 10*time.Second, 10*time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t)
			tt.setup(srv)
			mods := []func(*waldur.ClientOptions){}
			if tt.mod != nil {
				mods = append(mods, tt.mod)
			}
			c := clientFor(t, srv, mods...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			start := time.Now()
			st, err := c.ReadOffering(ctx, "iris", offering)
			if st != nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, %v; want context.DeadlineExceeded", st, err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("returned after %s", took)
			}
		})
	}
}

func TestCancelledContextSendsNothing(t *testing.T) {
	srv := waldurtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clientFor(t, srv).SetOrderDone(ctx, offering); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	if n := srv.Requests("/"); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
