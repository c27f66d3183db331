package stop

import (
	"context"

	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/report"
)

// Cut follows a run that may be stopped between or during its stages: the
// stop, the stage it came in, and the stages it left undone. The engine's
// cycle uses one.
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
		c.stop = Of(ctx)
	}
	return c.stop != nil
}

// Err is nil for a run that was not stopped. For a stopped one it puts the
// stop in rep (done says what had taken effect) and returns a
// failure.ClassStopped error whose text is the report's one line.
func (c *Cut) Err(rep *report.Run, done string) error {
	if c.stop == nil {
		return nil
	}
	rs := &report.Stop{By: c.stop.Word(), During: c.during, Done: done, Pending: c.pending}
	if c.stop.Kind == BySignal {
		rs.Signal = signalName(c.stop.Signal)
	} else if c.stop.Kind == ByDeadline {
		rs.TimeoutSeconds = c.stop.Timeout.Seconds()
	}
	if rs.Pending == nil {
		rs.Pending = []string{}
	}
	rep.Stopped = rs
	return &failure.Error{Stage: c.during, Class: failure.ClassStopped, Err: &stopError{stop: c.stop, line: rs.Line()}}
}

// stopError is a stopped run's failure: it reads as the report's line and
// unwraps to the *Stopped.
type stopError struct {
	stop *Stopped
	line string
}

func (e *stopError) Error() string { return e.line }
func (e *stopError) Unwrap() error { return e.stop }
