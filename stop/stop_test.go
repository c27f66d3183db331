package stop_test

import (
	"context"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/stop"
)

// TestWithDeadline: the deadline's context ends with a deadline stop;
// without a length there is none, and an ordinary cancel is no stop.
func TestWithDeadline(t *testing.T) {
	ctx, cancel := stop.WithDeadline(context.Background(), 10*time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if s := stop.Of(ctx); s == nil || s.Kind != stop.ByDeadline || s.Timeout != 10*time.Millisecond {
		t.Errorf("StopOf = %+v, want the 10ms deadline", s)
	}
	ctx, cancel = stop.WithDeadline(context.Background(), 0)
	if _, ok := ctx.Deadline(); ok {
		t.Error("a zero length set a deadline")
	}
	cancel()
	if s := stop.Of(ctx); s != nil {
		t.Errorf("a plain cancel reads as a stop: %+v", s)
	}
}
