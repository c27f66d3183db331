package keycloak

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// window is the adaptive bound on the calls in flight to one Keycloak. It
// starts at startWindow and, like TCP's congestion window, grows by about
// one call per window of answers that come back as fast as the fastest
// seen for their kind of call, shrinks by one when answers slow to more
// than twice that (Keycloak is queueing), and halves on a 429, a 5xx or a
// call that got no answer (Keycloak is overloaded) — at most once per round
// trip, so that one burst of failures counts once. It never leaves [1, max], max being the
// keycloak.concurrency setting.
type window struct {
	mu       sync.Mutex
	limit    float64
	max      float64
	inFlight int
	// base holds, per kind of call, how fast Keycloak answers it at best: a
	// group creation takes longer than a user lookup, so each is measured
	// against its own kind.
	base    map[string]*baseline
	lastCut time.Time
	changed chan struct{}
}

// baseline is the quickest answer of one kind of call: fastest over the
// current sample period, floor over the one before, so that it follows a
// Keycloak that got faster or slower for good.
type baseline struct {
	fastest, floor time.Duration
	samples        int
}

// startWindow is the calls in flight at first contact.
const startWindow = 4

// floorSamples is how many answers make one sample period of the baseline,
// so that the baseline follows a Keycloak that got faster or slower for
// good.
const floorSamples = 256

func newWindow(ceiling int) *window {
	ceiling = max(ceiling, 1)
	return &window{limit: float64(min(startWindow, ceiling)), max: float64(ceiling), base: map[string]*baseline{}, changed: make(chan struct{})}
}

// acquire blocks until a call may start.
func (w *window) acquire(ctx context.Context) error {
	for {
		w.mu.Lock()
		if w.inFlight < int(w.limit) {
			w.inFlight++
			w.mu.Unlock()
			return nil
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release ends a call of kind that took took and failed with err (nil:
// answered well), adjusting the window.
func (w *window) release(kind string, took time.Duration, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight--
	b := w.base[kind]
	if b == nil {
		b = &baseline{}
		w.base[kind] = b
	}
	now := time.Now()
	switch {
	case overloaded(err):
		if now.Sub(w.lastCut) >= b.roundTrip() {
			w.limit, w.lastCut = max(1, w.limit/2), now
		}
	case b.slowed(took):
		if now.Sub(w.lastCut) >= b.roundTrip() {
			w.limit, w.lastCut = max(1, w.limit-1), now
		}
	default:
		w.limit = min(w.max, w.limit+1/w.limit)
	}
	b.sample(took)
	close(w.changed)
	w.changed = make(chan struct{})
}

// slowed reports whether an answer took more than twice the baseline, and
// at least 5 ms more, so that a fast local Keycloak's jitter is no signal.
func (b *baseline) slowed(took time.Duration) bool {
	base := b.best()
	return base > 0 && took > max(2*base, base+5*time.Millisecond)
}

func (b *baseline) best() time.Duration {
	if b.floor > 0 && (b.fastest == 0 || b.floor < b.fastest) {
		return b.floor
	}
	return b.fastest
}

// roundTrip is how long one call takes at best: the least time between two
// cuts of the window.
func (b *baseline) roundTrip() time.Duration {
	return max(b.best(), time.Millisecond)
}

func (b *baseline) sample(took time.Duration) {
	if b.fastest == 0 || took < b.fastest {
		b.fastest = took
	}
	if b.samples++; b.samples >= floorSamples {
		b.floor, b.fastest, b.samples = b.fastest, 0, 0
	}
}

// Limit is the current bound (tests and the run report).
func (w *window) Limit() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int(w.limit)
}

// overloaded reports whether err says Keycloak could not take the call: a
// 429, a 5xx, or no answer at all.
func overloaded(err error) bool {
	if err == nil {
		return false
	}
	s := statusOf(err)
	return s == http.StatusTooManyRequests || s >= 500 || (s == 0 && !isContextErr(err))
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// ceiling is the most calls ever in flight: how many workers a parallel
// step starts (the window then decides how many call at once).
func (w *window) ceiling() int { return int(w.max) }
