package serve

import (
	"fmt"
	"time"
)

// Timing is how serve paces its runs and judges its health (the flags
// --interval, --jitter, --shutdown-grace, --stale-after, --events-window).
type Timing struct {
	Interval, Grace, StaleAfter, EventsWindow time.Duration
	Jitter                                    float64
}

// Check refuses a timing that cannot work, naming the flag.
func (t Timing) Check() error {
	switch {
	case t.Interval <= 0:
		return fmt.Errorf("--interval must be above 0, got %s", t.Interval)
	case t.Jitter < 0 || t.Jitter >= 1:
		return fmt.Errorf("--jitter must be at least 0 and below 1, got %v", t.Jitter)
	case t.Grace < 0:
		return fmt.Errorf("--shutdown-grace must not be negative, got %s", t.Grace)
	case t.StaleAfter < 0:
		return fmt.Errorf("--stale-after must not be negative, got %s", t.StaleAfter)
	case t.EventsWindow <= 0:
		return fmt.Errorf("--events-window must be above 0, got %s", t.EventsWindow)
	case t.StaleAfter > 0 && t.StaleAfter <= t.longestWait():
		// Health would fail between two healthy runs, and a liveness probe
		// on /livez would restart the pod forever.
		return fmt.Errorf("--stale-after %s must be longer than the longest wait between two runs, --interval × (1 + --jitter) = %s",
			t.StaleAfter, t.longestWait())
	}
	return nil
}

// longestWait is the longest time between two runs.
func (t Timing) longestWait() time.Duration {
	return time.Duration(float64(t.Interval) * (1 + t.Jitter))
}

// Stale is how long health waits for a run to end before it fails:
// --stale-after, else two of the longest waits plus the shutdown grace.
func (t Timing) Stale() time.Duration {
	if t.StaleAfter > 0 {
		return t.StaleAfter
	}
	return 2*t.longestWait() + t.Grace
}
