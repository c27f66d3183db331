package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/waldur/waldur-gitops/report"
)

// StopKind says why a run was stopped before its end.
type StopKind int

// The reasons a run stops early.
const (
	// StopDeadline: the run's deadline (--timeout, run_timeout) expired.
	StopDeadline StopKind = iota + 1
	// StopInterrupt: the process got SIGINT or SIGTERM.
	StopInterrupt
	// StopLease: serve's replica lost its leader Lease, or the time left on
	// it fell below the renew deadline (the write permit).
	StopLease
)

// Stopped is the cause a run's context carries when the run was stopped
// from outside its stages: by its deadline or by a signal. The engine reads
// it (context.Cause) to tell a stop from a stage's own failure.
type Stopped struct {
	Kind StopKind
	// Timeout is the deadline's length (StopDeadline).
	Timeout time.Duration
	// Signal is the signal received (StopInterrupt).
	Signal os.Signal
}

func (s *Stopped) Error() string {
	switch s.Kind {
	case StopInterrupt:
		return fmt.Sprintf("interrupted by %s", signalName(s.Signal))
	case StopLease:
		return "this replica lost the leader lease"
	}
	return fmt.Sprintf("the run's deadline of %s expired", s.Timeout)
}

// Word is the report's name of the stop: "deadline", "interrupt" or "lease".
func (s *Stopped) Word() string {
	switch s.Kind {
	case StopInterrupt:
		return "interrupt"
	case StopLease:
		return "lease"
	}
	return "deadline"
}

// exitCode is the process exit code of the stop: ExitDeadline, or 128 plus
// the signal's number as shells report a death by signal (130 for SIGINT,
// 143 for SIGTERM, and for a lost lease, a stop from outside as SIGTERM is).
func (s *Stopped) exitCode() int {
	if s.Kind == StopDeadline {
		return ExitDeadline
	}
	if s.Signal == syscall.SIGTERM || s.Kind == StopLease {
		return ExitTerminated
	}
	return ExitInterrupted
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
	return context.WithTimeoutCause(ctx, d, &Stopped{Kind: StopDeadline, Timeout: d})
}

// Interrupt cancels a run's context (made with context.WithCancelCause) for
// the signal sig.
func Interrupt(cancel context.CancelCauseFunc, sig os.Signal) {
	cancel(&Stopped{Kind: StopInterrupt, Signal: sig})
}

// StopOf returns the stop ctx ended with, nil while it runs or when it
// ended for another reason.
func StopOf(ctx context.Context) *Stopped {
	if ctx.Err() == nil {
		return nil
	}
	var s *Stopped
	if errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}

// StopOfErr returns the stop err carries, nil when it carries none.
func StopOfErr(err error) *Stopped {
	var s *Stopped
	if errors.As(err, &s) {
		return s
	}
	return nil
}

// Cut follows a run that may be stopped between or during its stages: the
// stop, the stage it came in, and the stages it left undone. The engine's
// cycle uses one; a verb that runs stages of its own (report) does too.
type Cut struct {
	stop    *Stopped
	during  string
	pending []string
}

// Before is asked before a stage: true to run it; false when the run was
// stopped, the stage then counted as not run.
func (c *Cut) Before(ctx context.Context, stage string) bool {
	if c.stopped(ctx) {
		c.pending = append(c.pending, stage)
		return false
	}
	return true
}

// After is told after a stage: a stop that came while it ran leaves it
// unfinished, whatever it returned. It reports whether the run was stopped.
func (c *Cut) After(ctx context.Context, stage string) bool {
	if c.stop == nil && c.stopped(ctx) {
		c.during = stage
		c.pending = append(c.pending, stage)
	}
	return c.stop != nil
}

// stopped reports whether the run's context has been stopped, keeping the
// stop the first time it sees it.
func (c *Cut) stopped(ctx context.Context) bool {
	if c.stop == nil {
		c.stop = StopOf(ctx)
	}
	return c.stop != nil
}

// Err is nil for a run that was not stopped. For a stopped one it puts the
// stop in rep (pub says what had taken effect) and returns a ClassStopped
// error whose text is the report's one line.
func (c *Cut) Err(rep *report.Run, pub *Published) error {
	if c.stop == nil {
		return nil
	}
	rs := &report.Stop{By: c.stop.Word(), During: c.during, Done: doneSoFar(pub), Pending: c.pending}
	if c.stop.Kind == StopInterrupt {
		rs.Signal = signalName(c.stop.Signal)
	} else if c.stop.Kind == StopDeadline {
		rs.TimeoutSeconds = c.stop.Timeout.Seconds()
	}
	if rs.Pending == nil {
		rs.Pending = []string{}
	}
	rep.Stopped = rs
	return &Error{Stage: c.during, Class: ClassStopped, Err: &stopError{stop: c.stop, line: rs.Line()}}
}

// stopError is a stopped run's failure: it reads as the report's line and
// unwraps to the *Stopped.
type stopError struct {
	stop *Stopped
	line string
}

func (e *stopError) Error() string { return e.line }
func (e *stopError) Unwrap() error { return e.stop }

// doneSoFar says what a stopped run had made take effect.
func doneSoFar(p *Published) string {
	switch {
	case p == nil || !p.Wrote:
		return "nothing pushed or applied"
	case p.Ref != "":
		return "commit " + p.Ref + " pushed"
	}
	return "the apply went through"
}
