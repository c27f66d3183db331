// Package unreachable remembers, for one run, the hosts that could not be
// reached: a connection that was refused, reset or timed out on every try of
// one request. Later requests of the same run to such a host fail at once,
// naming the first failure, so that one dead endpoint costs one stage of a
// run, not every stage (and not every offering that shares the host).
//
// The memory travels in the run's context (Track); clients ask Check before a
// request and tell Mark when a request gave up on a connection-level error.
// An HTTP error status never marks a host: the host answered.
package unreachable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Hosts is one run's memory of unreachable hosts, keyed by host[:port].
// It is safe for concurrent use.
type Hosts struct {
	mu   sync.Mutex
	down map[string]error
}

type key struct{}

// Track returns a context that carries a fresh, empty memory. Requests made
// with a context that carries none are never refused.
func Track(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, &Hosts{down: map[string]error{}})
}

// From returns the memory ctx carries, nil when it carries none.
func From(ctx context.Context) *Hosts {
	h, _ := ctx.Value(key{}).(*Hosts)
	return h
}

// Error is the refusal of a request to a host found unreachable earlier in
// the run. It wraps the first failure.
type Error struct {
	Host  string
	First error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s was unreachable earlier in this run, not tried again: %v", e.Host, e.First)
}

func (e *Error) Unwrap() error { return e.First }

// Check returns an *Error when host was marked unreachable in ctx's run.
func Check(ctx context.Context, host string) error {
	h := From(ctx)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if first, ok := h.down[host]; ok {
		return &Error{Host: host, First: first}
	}
	return nil
}

// Mark records that a request to host gave up on err, when err is a
// connection-level failure and the run itself was not cancelled (a deadline
// or an interrupt is no fault of the host). The first failure is kept. It
// reports whether the host is now marked.
func Mark(ctx context.Context, host string, err error) bool {
	h := From(ctx)
	if h == nil || ctx.Err() != nil || !IsConnection(err) || errors.As(err, new(*Error)) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.down[host]; !ok {
		h.down[host] = err
	}
	return true
}

// Marked is implemented by a client's own error for a request that got no
// answer, where the client library keeps no network error in its chain.
type Marked interface{ Unreachable() bool }

// IsConnection reports whether err is a failure to reach or keep talking to
// a server: refused, reset, aborted, unreachable, a timeout, or a connection
// closed before the answer. Errors carrying an HTTP status are not.
func IsConnection(err error) bool {
	if err == nil {
		return false
	}
	var m Marked
	if errors.As(err, &m) && m.Unreachable() {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT, syscall.EPIPE} {
		if errors.Is(err, errno) {
			return true
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// IsTimeout reports whether err is a request that got no answer in time
// (as opposed to one refused or reset). Clients retry those fewer times:
// each try costs the whole per-request timeout.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}
