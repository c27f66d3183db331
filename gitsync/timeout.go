package gitsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/unreachable"
)

// TimeoutError is a fetch or a push that did not finish within git.timeout.
type TimeoutError struct {
	Op, URL string
	After   time.Duration
	err     error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("git %s %s: no answer within %s (git.timeout)", e.Op, e.URL, e.After)
}

func (e *TimeoutError) Unwrap() error { return e.err }

// Unreachable marks the server that never answered for the rest of the run
// (internal/unreachable).
func (e *TimeoutError) Unreachable() bool { return true }

// bounded runs one fetch or push (op) with its own time limit, within the
// run's: a server that accepts the connection and never answers costs
// git.timeout, not the run. A host that could not be reached earlier in the
// run is not tried again (internal/unreachable), and one that cannot be
// reached now is remembered.
func (r *Repo) bounded(ctx context.Context, op string, fn func(context.Context) error) error {
	host := r.ep.Host
	if r.ep.Port > 0 {
		host = fmt.Sprintf("%s:%d", host, r.ep.Port)
	}
	if host != "" {
		if err := unreachable.Check(ctx, host); err != nil {
			return r.wrap(op, err)
		}
	}
	d := r.opts.Timeout
	if d <= 0 {
		d = config.DefaultGitTimeout
	}
	// The cause is a sentinel of its own: the transport may return the
	// context's cause inside err, which the TimeoutError then wraps.
	expired := errors.New("git.timeout expired")
	opCtx, cancel := context.WithTimeoutCause(ctx, d, expired)
	defer cancel()
	err := fn(opCtx)
	if err != nil && ctx.Err() == nil && context.Cause(opCtx) == expired {
		err = &TimeoutError{Op: op, URL: r.url, After: d, err: err}
	}
	if err != nil && host != "" && ctx.Err() == nil {
		unreachable.Mark(ctx, host, err)
	}
	return err
}
