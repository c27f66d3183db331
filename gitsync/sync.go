package gitsync

import (
	"context"
	"errors"
	"fmt"

	"github.com/waldur/waldur-gitops/render"
)

// Writer is the Git side of a run. Repo implements it with go-git; tests and
// later stages can put a fake in its place.
type Writer interface {
	// Fetch reads the tip of the branch from the remote, forgetting any commit
	// made since the last fetch. A remote without the branch (or without any
	// commit) is not an error: the first commit creates the branch.
	Fetch(ctx context.Context) error
	// Tip is the fetched commit, "" when the branch does not exist yet.
	Tip() string
	// Current returns the files below the owned directory at the fetched tip.
	// It refuses a directory that holds files but not render.MarkerFile: that
	// directory is not ours to replace.
	Current(ctx context.Context) (render.Tree, error)
	// Commit makes a commit on top of the fetched tip in which the owned
	// directory holds exactly tree, everything else unchanged. It returns ""
	// and makes no commit when that is what the tip already holds.
	Commit(ctx context.Context, tree render.Tree, message string) (string, error)
	// Push moves the branch from the fetched tip to the commit. It fails with
	// an error matching ErrRaced when the branch no longer points at the
	// fetched tip, and ErrDeclined when a hook of the server refused it; it
	// never overwrites another writer's commit.
	Push(ctx context.Context) error
}

// ErrRaced is matched by a push refused because the branch moved, or may
// have moved, since the fetch: another writer got there first.
var ErrRaced = errors.New("another writer may have moved the branch")

// ErrDeclined is matched by a push a hook of the server declined: a
// pre-receive or update hook, or a branch protection a hosting service
// implements as one. It is not a race and is not retried; the error carries
// the server's status and what the hook printed.
var ErrDeclined = errors.New("the server's hook declined the push")

// Plan turns the files currently in the owned directory into the files to
// commit and the commit message. Sync calls it once per attempt, on the tip it
// is about to commit on, so every check it makes (such as the mass-deletion
// guard) sees what the commit really changes. An error stops the run before
// anything is committed.
type Plan func(current render.Tree) (next render.Tree, message string, err error)

// Result is the outcome of a Sync.
type Result struct {
	// Commit is the pushed commit, "" when the tree was unchanged.
	Commit string
	// Parent is the tip the commit was made on ("" for the branch's first commit,
	// or the unchanged tip when nothing was committed).
	Parent string
	// Attempts counts the fetch-commit-push cycles run (1 without a race).
	Attempts int
}

// Sync fetches the branch, plans the new tree on its tip, commits and pushes.
// When the push loses a race with another writer it starts over on the new tip,
// at most retries more times.
func Sync(ctx context.Context, w Writer, plan Plan, retries int) (Result, error) {
	var res Result
	var lost error
	for {
		res.Attempts++
		before := res.Parent
		if err := w.Fetch(ctx); err != nil {
			return res, err
		}
		res.Parent = w.Tip()
		if lost != nil && res.Parent == before {
			// The push was refused but the branch has not moved: retrying the
			// same push cannot help (the server refused it for another reason).
			return res, fmt.Errorf("the push was refused although the branch did not move: %w", lost)
		}
		cur, err := w.Current(ctx)
		if err != nil {
			return res, err
		}
		next, msg, err := plan(cur)
		if err != nil {
			return res, err
		}
		commit, err := w.Commit(ctx, next, msg)
		if err != nil || commit == "" {
			return res, err
		}
		err = w.Push(ctx)
		if err == nil {
			res.Commit = commit
			return res, nil
		}
		if !errors.Is(err, ErrRaced) {
			return res, err
		}
		if res.Attempts > retries {
			return res, fmt.Errorf("gave up after %d attempts: %w", res.Attempts, err)
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		lost = err
	}
}

// Prefetch starts fetching the branch and reading the owned directory in the
// background, so that the Git round trip overlaps with reading Waldur and
// rendering. The returned Writer's first Fetch waits for that work instead of
// fetching again; later calls go to w. Until that first Fetch returns, w must
// not be used directly. wait blocks until the background work has ended; call
// it (after cancelling ctx, if the run ends early) before dropping w.
func Prefetch(ctx context.Context, w Writer) (pw Writer, wait func()) {
	p := &prefetched{Writer: w, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		if p.err = w.Fetch(ctx); p.err == nil {
			// Current keeps what it read; an error comes back when Sync calls it.
			_, _ = w.Current(ctx)
		}
	}()
	return p, func() { <-p.done }
}

type prefetched struct {
	Writer
	done chan struct{}
	err  error
	used bool
}

func (p *prefetched) Fetch(ctx context.Context) error {
	if p.used {
		return p.Writer.Fetch(ctx)
	}
	p.used = true
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		<-p.done
		return ctx.Err()
	}
}

// Peek returns the owned directory as the fetch that Prefetch started finds
// it, waiting for that fetch but leaving w's first Fetch to whoever syncs.
// For a Writer that does not prefetch it fetches.
func Peek(ctx context.Context, w Writer) (render.Tree, error) {
	p, ok := w.(*prefetched)
	if !ok {
		if err := w.Fetch(ctx); err != nil {
			return nil, err
		}
		return w.Current(ctx)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.Writer.Current(ctx)
}
