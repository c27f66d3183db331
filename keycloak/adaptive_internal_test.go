package keycloak

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"
)

// TestWindow: the window grows on quick answers up to its ceiling, halves
// on an overload answer once per round trip, and shrinks by one on a slowed
// answer.
func TestWindow(t *testing.T) {
	ms := time.Millisecond
	unavailable := &gocloak.APIError{Code: http.StatusServiceUnavailable}
	tooMany := &gocloak.APIError{Code: http.StatusTooManyRequests}
	answers := func(w *window, n int, took time.Duration, err error) {
		for range n {
			if e := w.acquire(context.Background()); e != nil {
				t.Fatal(e)
			}
			w.release("groups.get", took, err)
		}
	}
	w := newWindow(16)
	if w.Limit() != startWindow {
		t.Fatalf("starts at %d, want %d", w.Limit(), startWindow)
	}
	answers(w, 40, 10*ms, nil)
	if w.Limit() <= startWindow {
		t.Errorf("after 40 quick answers the window is %d", w.Limit())
	}
	answers(w, 2000, 10*ms, nil)
	if w.Limit() != 16 {
		t.Errorf("after 2,000 quick answers the window is %d, want the ceiling 16", w.Limit())
	}
	w.lastCut = time.Time{}
	answers(w, 1, 10*ms, unavailable)
	if w.Limit() != 8 {
		t.Errorf("a 503 left the window at %d, want 8", w.Limit())
	}
	answers(w, 1, 10*ms, tooMany)
	if w.Limit() != 8 {
		t.Errorf("a second refusal in the same round trip cut the window again: %d", w.Limit())
	}
	w.lastCut = time.Time{}
	answers(w, 1, 50*ms, nil)
	if w.Limit() != 7 {
		t.Errorf("a slowed answer left the window at %d, want 7", w.Limit())
	}
	w.lastCut = time.Time{}
	for range 10 {
		w.lastCut = time.Time{}
		answers(w, 1, 10*ms, unavailable)
	}
	if w.Limit() != 1 {
		t.Errorf("a Keycloak refusing everything leaves %d calls in flight, want 1", w.Limit())
	}
	if overloaded(&gocloak.APIError{Code: http.StatusNotFound}) || overloaded(context.Canceled) || !overloaded(&gocloak.APIError{Code: 0}) {
		t.Error("overloaded: a 404 or a cancel is no overload; no answer at all is")
	}
}

// TestWindowBlocks: a call waits while the window is full and starts when
// one ends; a cancelled wait returns.
func TestWindowBlocks(t *testing.T) {
	w := newWindow(1)
	ctx := context.Background()
	if err := w.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		if err := w.acquire(ctx); err == nil {
			close(started)
		}
	}()
	select {
	case <-started:
		t.Fatal("a second call started in a window of 1")
	case <-time.After(50 * time.Millisecond):
	}
	w.release("groups.get", time.Millisecond, nil)
	<-started
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.acquire(cctx); err == nil {
		t.Error("a cancelled wait got a slot")
	}
}
