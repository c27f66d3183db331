package unreachable_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/unreachabletest"
	"github.com/waldur/waldur-gitops/internal/unreachable"
)

// TestIsConnection tells the failures that make a host unreachable from the
// answers of a host that is up, with errors real clients produce.
func TestIsConnection(t *testing.T) {
	refused := unreachabletest.Refused(t)
	_, refusedErr := net.Dial("tcp", refused)
	silent := unreachabletest.NewSilent(t)
	_, timeoutErr := (&http.Client{Timeout: 50 * time.Millisecond}).Get(silent.URL())
	for _, tc := range []struct {
		name    string
		err     error
		conn    bool
		timeout bool
	}{
		{"refused", refusedErr, true, false},
		{"no answer within the client's timeout", timeoutErr, true, true},
		{"wrapped refusal", fmt.Errorf("waldur GET x: %w", refusedErr), true, false},
		{"an HTTP status", errors.New("503 Service Unavailable"), false, false},
		{"nil", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unreachable.IsConnection(tc.err); got != tc.conn {
				t.Errorf("IsConnection(%v) = %v, want %v", tc.err, got, tc.conn)
			}
			if got := unreachable.IsTimeout(tc.err); got != tc.timeout {
				t.Errorf("IsTimeout(%v) = %v, want %v", tc.err, got, tc.timeout)
			}
		})
	}
}

// TestMarkAndCheck: a host marked in a run is refused for the rest of it,
// naming the first failure; other hosts, other runs, an HTTP status and a
// failure after the run was cancelled are not.
func TestMarkAndCheck(t *testing.T) {
	_, refusedErr := net.Dial("tcp", unreachabletest.Refused(t))
	ctx := unreachable.Track(context.Background())
	if unreachable.Mark(ctx, "a:1", errors.New("404 Not Found")) {
		t.Error("an HTTP answer marked the host")
	}
	if !unreachable.Mark(ctx, "a:1", refusedErr) {
		t.Fatal("a refused connection did not mark the host")
	}
	unreachable.Mark(ctx, "a:1", fmt.Errorf("later: %w", refusedErr))
	err := unreachable.Check(ctx, "a:1")
	var ue *unreachable.Error
	if !errors.As(err, &ue) || ue.Host != "a:1" || !errors.Is(err, refusedErr) || errors.Is(err, context.Canceled) {
		t.Fatalf("Check = %v, want the first failure of a:1", err)
	}
	if err := unreachable.Check(ctx, "b:1"); err != nil {
		t.Errorf("another host is refused: %v", err)
	}
	if err := unreachable.Check(unreachable.Track(context.Background()), "a:1"); err != nil {
		t.Errorf("another run remembers the host: %v", err)
	}
	if err := unreachable.Check(context.Background(), "a:1"); err != nil {
		t.Errorf("a context without a memory refuses: %v", err)
	}
	cancelled, cancel := context.WithCancel(unreachable.Track(context.Background()))
	cancel()
	if unreachable.Mark(cancelled, "c:1", refusedErr) {
		t.Error("a failure of a cancelled run marked the host")
	}
}
