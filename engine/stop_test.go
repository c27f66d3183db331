package engine_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/stop"
)

// TestStoppedRun: a deadline or a signal that comes during a stage ends the
// run there: the stages after it do not run (no order moves for a change
// that did not land), the report says where it stopped, what had taken
// effect and what is pending, and the exit code says what stopped it.
func TestStoppedRun(t *testing.T) {
	deadline := &stop.Stopped{Kind: stop.ByDeadline, Timeout: 9 * time.Minute}
	sigint := &stop.Stopped{Kind: stop.BySignal, Signal: os.Interrupt}
	sigterm := &stop.Stopped{Kind: stop.BySignal, Signal: syscall.SIGTERM}
	lease := &stop.Stopped{Kind: stop.ByLease}
	for _, tc := range []struct {
		name    string
		at      string // the fake call during which the stop comes
		stop    *stop.Stopped
		code    int
		calls   string
		during  string
		done    string
		pending []string
		moved   int // orders moved: the approval when it came before the stop, never a finish
	}{
		{"deadline while reading Waldur", "source.read", deadline, failure.ExitDeadline, "source.read",
			"waldur", "nothing pushed or applied", []string{"waldur", "approve", "render", "fake", "keycloak", "orders"}, 0},
		// The fake publisher finishes its write whatever the context says:
		// the report names the commit that landed.
		{"SIGINT while publishing", "publish", sigint, failure.ExitInterrupted, "source.read → orders.approve → publish",
			"fake", "commit commit-1 pushed", []string{"fake", "keycloak", "orders"}, 1},
		{"SIGTERM in Keycloak after the push", "identities.reconcile", sigterm, failure.ExitTerminated,
			"source.read → orders.approve → publish → identities.reconcile", "keycloak", "commit commit-1 pushed", []string{"keycloak", "orders"}, 1},
		// serve's replica lost its Lease (serve.Election.Bind): no later stage writes.
		{"lease lost while publishing", "publish", lease, failure.ExitTerminated, "source.read → orders.approve → publish",
			"fake", "commit commit-1 pushed", []string{"fake", "keycloak", "orders"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakes(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			f.log.OnCall = func(call string) {
				if call == tc.at {
					cancel(tc.stop)
				}
			}
			out := f.engine().Run(ctx, engine.Request{Command: "sync"})
			if got := failure.ExitCode(out.Err); got != tc.code || out.Report.ExitCode != tc.code {
				t.Errorf("exit %d (report %d), want %d: %v", got, out.Report.ExitCode, tc.code, out.Err)
			}
			if got := f.log.String(); got != tc.calls {
				t.Errorf("calls: %s\nwant:  %s", got, tc.calls)
			}
			if f.orders.Writes != tc.moved || len(f.orders.Finished) > 0 {
				t.Errorf("orders moved: %d (finished %v), want %d and no finish", f.orders.Writes, f.orders.Finished, tc.moved)
			}
			st := out.Report.Stopped
			if st == nil {
				t.Fatalf("the report does not say the run was stopped: %+v", out.Report)
			}
			if st.During != tc.during || st.Done != tc.done || !slices.Equal(st.Pending, tc.pending) || st.By != tc.stop.Word() {
				t.Errorf("stopped = %+v\nwant by %s during %s, done %q, pending %v", *st, tc.stop.Word(), tc.during, tc.done, tc.pending)
			}
			if out.Err.Error() != st.Line() {
				t.Errorf("the run's error %q is not the report's line %q", out.Err, st.Line())
			}
			if !errors.Is(out.Err, tc.stop) {
				t.Errorf("the run's error does not carry the stop: %v", out.Err)
			}
		})
	}
}
