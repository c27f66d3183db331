// Package guard is the mass-deletion circuit breaker shared by every stage that
// deletes tenants (the Git commit and the direct cluster apply): a run that would
// remove too many tenants without a Waldur Terminate order behind them is refused.
// It protects against an empty, partial or wrong Waldur answer wiping a site.
package guard

import (
	"fmt"
	"math"
	"slices"
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
	// Explained maps resources that Waldur positively reports gone (listed
	// as Terminated, or answering 404 to a direct read) to why: removing their
	// tenants counts like removing those with a Terminate order.
	Explained map[string]string
}

// DefaultOptions returns the defaults: refuse more than 10% and at least 5.
func DefaultOptions() Options { return Options{MaxFraction: 0.10, MinCount: 5} }

// Error is a refused run: the deletions that have no Terminate order behind them.
type Error struct {
	Unexplained []changeset.Entry
	Existing    int
	Options     Options
	// Scope names the part of the site the refusal counted in (an offering,
	// a target); empty for the whole site.
	Scope string
}

func (e *Error) Error() string {
	if e.Scope != "" {
		return "in " + e.Scope + ": " + e.message()
	}
	return e.message()
}

func (e *Error) message() string {
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
		if _, gone := o.Explained[e.Resource]; e.Kind == "Tenant" && e.Action == changeset.Delete && len(e.Orders) == 0 && !gone {
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

// CheckScoped is Check over the whole change set and then within every scope
// scopeOf names (an offering, a target cluster): a wipe or mass deletion of
// one offering is refused even when it is a small share of the site. The
// tenants in place are counted from cs itself: every entry that is not a
// creation. The first refusal is returned, the site's before any scope's.
func CheckScoped(cs changeset.Set, scopeOf func(changeset.Entry) []string, o Options) error {
	return CheckScopedIn(cs, scopeOf, nil, o)
}

// CheckScopedIn is CheckScoped for a change set that lists only the
// removals: existing gives the tenants in place per scope, and the site's
// count under the key "".
func CheckScopedIn(cs changeset.Set, scopeOf func(changeset.Entry) []string, existing map[string]int, o Options) error {
	tenants := changeset.Set{Entries: cs.Filter(func(e changeset.Entry) bool { return e.Kind == "Tenant" })}
	count := func(scope string, entries []changeset.Entry) int {
		if existing != nil {
			return existing[scope]
		}
		return existingOf(entries)
	}
	if err := Check(tenants, count("", tenants.Entries), o); err != nil || o.Allow || scopeOf == nil {
		return err
	}
	byScope := map[string][]changeset.Entry{}
	var scopes []string
	for _, e := range tenants.Entries {
		for _, sc := range scopeOf(e) {
			if _, seen := byScope[sc]; !seen {
				scopes = append(scopes, sc)
			}
			byScope[sc] = append(byScope[sc], e)
		}
	}
	slices.Sort(scopes)
	for _, sc := range scopes {
		entries := byScope[sc]
		if err := Check(changeset.Set{Entries: entries}, count(sc, entries), o); err != nil {
			ge := err.(*Error)
			ge.Scope = sc
			return ge
		}
	}
	return nil
}

func existingOf(entries []changeset.Entry) int {
	n := 0
	for _, e := range entries {
		if e.Action != changeset.Create {
			n++
		}
	}
	return n
}

// AccessError is a refused run that would take away too much access at
// once: RoleBinding subjects or users in the manifests, or Keycloak
// memberships. Every team answering empty looks like this.
type AccessError struct {
	// What names the grants: "RoleBinding subjects and ManagedNamespace users", "Keycloak memberships".
	What     string
	Removed  int
	Existing int
	// Where lists the tenants or groups that lose grants, sorted.
	Where   []string
	Options Options
}

func (e *AccessError) Error() string {
	where := e.Where
	if len(where) > 20 {
		where = append(slices.Clone(where[:20]), fmt.Sprintf("… and %d more", len(e.Where)-20))
	}
	return fmt.Sprintf("refusing to remove %d of %d %s at once (the limit is %.0f%% and at least %d; empty teams in Waldur look like this): %s; rerun with --allow-mass-prune if this is intended",
		e.Removed, e.Existing, e.What, e.Options.MaxFraction*100, e.Options.MinCount, strings.Join(where, ", "))
}

// CheckAccess refuses removing removed of existing grants when that is too
// many by the same limits as tenants: all of them (when there are any), or
// at least MinCount and more than MaxFraction.
func CheckAccess(what string, removed, existing int, where []string, o Options) error {
	if o.Allow || removed == 0 {
		return nil
	}
	wipe := removed == existing
	tooMany := removed >= o.MinCount && float64(removed) > math.Floor(o.MaxFraction*float64(existing)+1e-9)
	if !wipe && !tooMany {
		return nil
	}
	slices.Sort(where)
	return &AccessError{What: what, Removed: removed, Existing: existing, Where: where, Options: o}
}
