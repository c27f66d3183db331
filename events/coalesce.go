package events

import (
	"context"
	"sync"
	"time"
)

// DefaultWindow is the coalescing window: a trigger is ready this long
// after the first event of its burst.
const DefaultWindow = time.Second

// Coalescer gathers events into triggers. The first event of a burst opens a
// window; when it closes the trigger is ready, and every event that arrives
// until the receiver takes it joins it (a sync in progress makes the next
// one bigger, not later). Add never blocks, so a consumer acks at once. Safe
// for concurrent use.
type Coalescer struct {
	// Window is how long a burst gathers (DefaultWindow when 0).
	Window time.Duration

	mu      sync.Mutex
	pending *Trigger
	ready   chan struct{} // closed when pending's window closed
	wake    chan struct{} // 1-buffered: a new burst started
}

func (c *Coalescer) init() {
	if c.wake == nil {
		c.wake = make(chan struct{}, 1)
	}
}

// Add records an event received at at.
func (c *Coalescer) Add(e Event, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if c.pending == nil {
		c.pending = &Trigger{}
		ready := make(chan struct{})
		c.ready = ready
		w := c.Window
		if w <= 0 {
			w = DefaultWindow
		}
		time.AfterFunc(w, func() { close(ready) })
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.pending.add(e, at)
}

// Next waits for the next ready trigger; false when ctx ended first.
func (c *Coalescer) Next(ctx context.Context) (Trigger, bool) {
	for {
		c.mu.Lock()
		c.init()
		ready, wake := c.ready, c.wake
		c.mu.Unlock()
		if ready == nil {
			select {
			case <-ctx.Done():
				return Trigger{}, false
			case <-wake:
				continue
			}
		}
		select {
		case <-ctx.Done():
			return Trigger{}, false
		case <-ready:
		}
		c.mu.Lock()
		t := c.pending
		c.pending, c.ready = nil, nil
		c.mu.Unlock()
		if t != nil {
			return *t, true
		}
	}
}

// Channel returns a channel that carries the triggers until ctx ends; the
// channel is unbuffered, so a trigger is taken from the Coalescer only when
// the receiver is ready for it.
func (c *Coalescer) Channel(ctx context.Context) <-chan Trigger {
	ch := make(chan Trigger)
	go func() {
		defer close(ch)
		for {
			t, ok := c.Next(ctx)
			if !ok {
				return
			}
			select {
			case ch <- t:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}
