package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"time"
)

// Loop runs Run at once and then every Interval, until its context ends. It
// is the only caller of Run, so two runs never overlap: the next start is
// planned Interval (jittered) after the previous start, and a run that takes
// longer makes the next one start as soon as it ends.
type Loop struct {
	// Interval is the time between the starts of two runs, before jitter.
	Interval time.Duration
	// Jitter spreads each wait uniformly within ±Jitter×Interval (0 to 1).
	Jitter float64
	// Grace is how long a run in progress may go on after the stop before
	// its context is cancelled.
	Grace time.Duration
	// Run is one cycle. Its context is not the Loop's: it outlives the stop
	// by Grace and is then cancelled.
	Run func(ctx context.Context) Outcome
	// Health, when set, is told of every start and end.
	Health *Health
	// Log gets the scheduling and shutdown lines; nil: none.
	Log *slog.Logger
	// Rand returns a number in [0, 1) for the jitter (nil: math/rand/v2).
	Rand func() float64
	// Wake, when set, carries extra runs (event-triggered syncs) that start
	// as soon as no run is in progress, between the interval's runs; they
	// do not move the interval's schedule.
	Wake <-chan func(ctx context.Context) Outcome
}

// Wait is the jittered interval: Interval×(1 + Jitter×u) for u uniform in [-1, 1).
func (l *Loop) Wait() time.Duration {
	r := rand.Float64
	if l.Rand != nil {
		r = l.Rand
	}
	f := 1 + l.Jitter*(2*r()-1)
	return time.Duration(float64(l.Interval) * f)
}

func (l *Loop) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}

// Start runs until ctx ends. A stop while waiting returns at once; a stop
// during a run lets it finish for up to Grace, then cancels it and waits for
// it to return. The error is ctx's cause only when the Loop could not start;
// a stop is a nil error.
func (l *Loop) Start(ctx context.Context) error {
	if l.Interval <= 0 || l.Jitter < 0 || l.Jitter >= 1 || l.Run == nil {
		return fmt.Errorf("serve loop: interval %s, jitter %v: want an interval above 0, a jitter in [0, 1) and a run", l.Interval, l.Jitter)
	}
	for {
		if ctx.Err() != nil {
			return nil
		}
		start := time.Now()
		if !l.runOnce(ctx, start, l.Run) {
			return nil
		}
		next := start.Add(l.Wait())
		wait := time.Until(next)
		if wait < 0 {
			l.log().Warn("the run took longer than the interval: the next starts now", "interval", l.Interval.String(), "late", (-wait).Round(time.Millisecond).String())
			wait = 0
		}
		l.log().Debug("next run", "at", next.UTC().Format(time.RFC3339), "in", wait.Round(time.Second).String())
		t := time.NewTimer(wait)
	waiting:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				l.log().Info("stopping: no run in progress")
				return nil
			case <-t.C:
				break waiting
			case run := <-l.Wake:
				if !l.runOnce(ctx, time.Now(), run) {
					t.Stop()
					return nil
				}
			}
		}
	}
}

// runOnce runs one cycle; false when the Loop was stopped during it.
func (l *Loop) runOnce(ctx context.Context, start time.Time, run func(context.Context) Outcome) bool {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	if l.Health != nil {
		l.Health.Begin(start)
	}
	done := make(chan Outcome, 1)
	go func() { done <- run(runCtx) }()
	var o Outcome
	stopped := false
	select {
	case o = <-done:
	case <-ctx.Done():
		stopped = true
		l.log().Info("stopping: letting the run in progress finish", "grace", l.Grace.String())
		t := time.NewTimer(l.Grace)
		select {
		case o = <-done:
			t.Stop()
		case <-t.C:
			l.log().Warn("stopping: the run did not finish within the grace period: cancelling it", "grace", l.Grace.String())
			cancel()
			o = <-done
		}
	}
	if l.Health != nil {
		l.Health.End(o)
	}
	return !stopped
}

// Serve serves h on ln while the Loop runs, and shuts the server down once
// the Loop has stopped, giving open requests up to shutdown to finish. It
// returns nil after a clean stop.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, l *Loop, shutdown time.Duration) error {
	return ServeWhile(ctx, ln, h, l.Start, shutdown)
}

// ServeWhile is Serve with any run in place of a Loop's Start: an
// Election's, which starts a Loop while the replica leads.
func ServeWhile(ctx context.Context, ln net.Listener, h http.Handler, run func(context.Context) error, shutdown time.Duration) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	loopErr := run(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdown)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		err = fmt.Errorf("http server on %s: %w", ln.Addr(), err)
	}
	return errors.Join(loopErr, err)
}
