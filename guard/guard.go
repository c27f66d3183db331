// Package guard is the removal policy of a run: the one place that decides
// whether a run may make the removals it plans. Every stage that takes
// something away — tenants leaving Git or a cluster, the Keycloak groups of
// tenants, the access of a subject to a tenant (RoleBinding subjects,
// ManagedNamespace users, Keycloak memberships), resources set erred in
// Waldur — names what it removes as a list of Removal and asks Check. A run
// that would remove too much that nothing explains is refused: it protects
// against an empty, partial or wrong Waldur answer wiping a site.
package guard

import (
	"maps"
	"math"
	"slices"
)

// Options sets how many unexplained removals a run may make; the same
// limits hold for every kind.
type Options struct {
	// MaxFraction is the share of what is in place that may go without an
	// explanation (deletion_guard.max_fraction, default 0.10).
	MaxFraction float64
	// MinCount is the number of such removals below which the share is not
	// checked (deletion_guard.min_count, default 5): a small site may lose a
	// few at once.
	MinCount int
	// Allow turns the guard off for one run (--allow-mass-prune).
	Allow bool
	// Offboarded names the subjects whose access a claimed offboarding
	// request removes (a user's name in each form a grant may name them:
	// offering username, bound identity, with the subject prefix), with the
	// request: their access-kind removals are explained (Offboarding), not
	// counted. Set per run by the offboarding stage.
	Offboarded map[string]string
}

// DefaultOptions returns the defaults: refuse more than 10% and at least 5.
func DefaultOptions() Options { return Options{MaxFraction: 0.10, MinCount: 5} }

// Removal is one thing a run would take away.
type Removal struct {
	Kind Kind
	// Subject names it in messages: a tenant's path, a resource, a user.
	Subject string
	// Tenant is the tenant it belongs to (for access, the tenant the subject
	// loses); "" when Subject is the tenant itself.
	Tenant string
	// Scopes are the parts of the site it is also counted in (an offering, a
	// target); see Population.
	Scopes []string
	// Because, when set, explains the removal: it is listed, not counted.
	Because *Explanation
}

// Cause is what explains a removal.
type Cause int

const (
	// TerminateOrder: a Waldur Terminate order is behind the removal.
	TerminateOrder Cause = iota + 1
	// Terminated: Waldur reports the resource Terminated (or Terminating).
	Terminated
	// Offboarding: a claimed offboarding request removes the subject.
	Offboarding
)

// Explanation is why a removal is expected.
type Explanation struct {
	Cause Cause
	// Why says it in words: the order, Waldur's answer, the request.
	Why string
}

// Population is what is in place before the run, of one kind: the count for
// the whole site under the key "", and for each scope a removal names.
type Population map[string]int

// Site is a population with only the whole site's count.
func Site(n int) Population { return Population{"": n} }

// Check decides whether a run may make removals rs of kind k, given what is
// in place. The unexplained removals are counted against the limit: removing
// all that is in place (when anything is removed at all), or at least
// MinCount and more than MaxFraction of it, is refused. The whole site is
// checked first, then each scope on its own, so that one offering answering
// empty is refused although it is a small share of the site. The refusal is
// an *Error; nil when the run may go on, always with Allow.
func Check(k Kind, rs []Removal, in Population, o Options) error {
	if o.Allow {
		return nil
	}
	var unexplained, explained []Removal
	for _, r := range rs {
		if r.Because != nil {
			explained = append(explained, r)
		} else {
			unexplained = append(unexplained, r)
		}
	}
	if len(unexplained) == 0 {
		return nil
	}
	refuse := func(scope string, un []Removal) error {
		n, existing := len(un), in[scope]
		wipe := n == existing
		tooMany := n >= o.MinCount && float64(n) > math.Floor(o.MaxFraction*float64(existing)+1e-9)
		if !wipe && !tooMany {
			return nil
		}
		return &Error{Kind: k, Unexplained: un, Explained: explained, Removed: n, Existing: existing, Scope: scope, Where: where(un), Limit: o.limit(existing), Options: o}
	}
	if err := refuse("", unexplained); err != nil {
		return err
	}
	byScope := map[string][]Removal{}
	for _, r := range unexplained {
		for _, sc := range r.Scopes {
			byScope[sc] = append(byScope[sc], r)
		}
	}
	for _, sc := range slices.Sorted(maps.Keys(byScope)) {
		if err := refuse(sc, byScope[sc]); err != nil {
			return err
		}
	}
	return nil
}

// where lists the tenants the removals belong to, sorted, once each.
func where(rs []Removal) []string {
	var w []string
	for _, r := range rs {
		if r.Tenant != "" {
			w = append(w, r.Tenant)
		}
	}
	slices.Sort(w)
	return slices.Compact(w)
}
