// Package stop holds what stops a run from outside its stages — its
// deadline (--timeout, run_timeout), SIGINT and SIGTERM, serve's lost
// leader lease — as the cause its
// context carries (Stopped), and the bookkeeping of a run cut short (Cut):
// the stage the stop came in, the stages it left undone, and the report's
// line for it.
package stop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/waldur/waldur-gitops/failure"
)

// Kind says why a run was stopped before its end.
type Kind int

// The reasons a run stops early.
const (
	// ByDeadline: the run's deadline (--timeout, run_timeout) expired.
	ByDeadline Kind = iota + 1
	// BySignal: the process got SIGINT or SIGTERM.
	BySignal
	// ByLease: serve's replica lost its leader Lease, or the time left on
	// it fell below the renew deadline (the write permit).
	ByLease
)

// Stopped is the cause a run's context carries when the run was stopped
// from outside its stages: by its deadline or by a signal. The engine reads
// it (context.Cause) to tell a stop from a stage's own failure.
type Stopped struct {
	Kind Kind
	// Timeout is the deadline's length (ByDeadline).
	Timeout time.Duration
	// Signal is the signal received (BySignal).
	Signal os.Signal
}

func (s *Stopped) Error() string {
	switch s.Kind {
	case BySignal:
		return fmt.Sprintf("interrupted by %s", signalName(s.Signal))
	case ByLease:
		return "this replica lost the leader lease"
	}
	return fmt.Sprintf("the run's deadline of %s expired", s.Timeout)
}

// Word is the report's name of the stop: "deadline", "interrupt" or "lease".
func (s *Stopped) Word() string {
	switch s.Kind {
	case BySignal:
		return "interrupt"
	case ByLease:
		return "lease"
	}
	return "deadline"
}

// StopExitCode is the process exit code of the stop (failure.ExitCode
// reads it): failure.ExitDeadline, or 128 plus the signal's number as
// shells report a death by signal (130 for SIGINT, 143 for SIGTERM, and
// for a lost lease, a stop from outside as SIGTERM is).
func (s *Stopped) StopExitCode() int {
	if s.Kind == ByDeadline {
		return failure.ExitDeadline
	}
	if s.Signal == syscall.SIGTERM || s.Kind == ByLease {
		return failure.ExitTerminated
	}
	return failure.ExitInterrupted
}

func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt:
		return "SIGINT"
	case nil:
		return "a signal"
	}
	return s.String()
}

// WithDeadline bounds a run: after d its context is cancelled with a
// *Stopped cause, so the stage in progress ends at its next request and the
// engine reports the run as cut by its deadline. d ≤ 0 sets no deadline.
func WithDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, &Stopped{Kind: ByDeadline, Timeout: d})
}

// Interrupt cancels a run's context (made with context.WithCancelCause) for
// the signal sig.
func Interrupt(cancel context.CancelCauseFunc, sig os.Signal) {
	cancel(&Stopped{Kind: BySignal, Signal: sig})
}

// Of returns the stop ctx ended with, nil while it runs or when it ended
// for another reason.
func Of(ctx context.Context) *Stopped {
	if ctx.Err() == nil {
		return nil
	}
	var s *Stopped
	if errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}

// OfErr returns the stop err carries, nil when it carries none.
func OfErr(err error) *Stopped {
	var s *Stopped
	if errors.As(err, &s) {
		return s
	}
	return nil
}

// Deadline is the flag value of a run's deadline (--timeout): a duration
// that is not negative, refused as the flags are parsed.
type Deadline struct{ D *time.Duration }

func (v Deadline) String() string { return v.D.String() }

// Set parses s; a negative duration is refused.
func (v Deadline) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = fmt.Errorf("must not be negative (0 takes the config's run_timeout)")
	}
	if err == nil {
		*v.D = d
	}
	return err
}

// Type names the value for the flag's help.
func (Deadline) Type() string { return "duration" }
