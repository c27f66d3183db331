// Package guard is the mass-deletion circuit breaker shared by every stage that
// deletes tenants (the Git commit and the direct cluster apply): a run that would
// remove too many tenants without a Waldur Terminate order behind them is refused.
// It protects against an empty, partial or wrong Waldur answer wiping a site.
package guard

import (
	"fmt"
	"math"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
)

// Options sets how many unexplained deletions a run may make.
type Options struct {
	// MaxFraction is the share of existing tenants that may disappear without a
	// Terminate order (default 0.10).
	MaxFraction float64
	// MinCount is the number of such deletions below which the share is not
	// checked (default 5): a small site may lose a few tenants at once.
	MinCount int
	// Allow turns the guard off for one run (--allow-mass-prune).
	Allow bool
}

// DefaultOptions returns the defaults: refuse more than 10% and at least 5.
func DefaultOptions() Options { return Options{MaxFraction: 0.10, MinCount: 5} }

// Error is a refused run: the deletions that have no Terminate order behind them.
type Error struct {
	Unexplained []changeset.Entry
	Existing    int
	Options     Options
}

func (e *Error) Error() string {
	var names []string
	for i, d := range e.Unexplained {
		if i == 20 {
			names = append(names, fmt.Sprintf("… and %d more", len(e.Unexplained)-i))
			break
		}
		names = append(names, d.Subject)
	}
	return fmt.Sprintf("refusing to remove %d of %d tenants that have no Terminate order in Waldur (the limit is %.0f%% and at least %d; an empty or partial Waldur answer looks like this): %s; rerun with --allow-mass-prune if this is intended",
		len(e.Unexplained), e.Existing, e.Options.MaxFraction*100, e.Options.MinCount, strings.Join(names, ", "))
}

// Check refuses a change set that deletes too many tenants without Terminate
// orders. existing is the number of tenants in place before the change. Removing
// every existing tenant is always refused unless allowed, whatever the counts.
func Check(cs changeset.Set, existing int, o Options) error {
	if o.Allow {
		return nil
	}
	var unexplained []changeset.Entry
	for _, e := range cs.Entries {
		if e.Kind == "Tenant" && e.Action == changeset.Delete && len(e.Orders) == 0 {
			unexplained = append(unexplained, e)
		}
	}
	n := len(unexplained)
	if n == 0 {
		return nil
	}
	wipe := n == existing
	tooMany := n >= o.MinCount && float64(n) > math.Floor(o.MaxFraction*float64(existing)+1e-9)
	if !wipe && !tooMany {
		return nil
	}
	return &Error{Unexplained: unexplained, Existing: existing, Options: o}
}
