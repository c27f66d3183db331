// Package changeset holds the one result type every stage of the pipeline returns:
// a list of entries, each an object or an operation with the action taken (or to be
// taken) on it. The dry-run output, the commit message, the run report and the logs
// all read from it.
package changeset

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Action is what a stage did, or would do, to one subject.
type Action string

// The actions, in the order summaries print them.
const (
	Create    Action = "create"
	Update    Action = "update"
	Unchanged Action = "unchanged"
	Delete    Action = "delete"
	Skip      Action = "skip"
)

// Actions lists every action in display order.
var Actions = []Action{Create, Update, Delete, Unchanged, Skip}

// symbol is the one-character marker used in summaries.
func (a Action) symbol() string {
	switch a {
	case Create:
		return "+"
	case Update:
		return "~"
	case Delete:
		return "-"
	case Skip:
		return "!"
	}
	return "="
}

// Entry is one object or operation and its action.
type Entry struct {
	// Stage names the pipeline stage that produced the entry: render, git, apply, keycloak, waldur.
	Stage string `json:"stage"`
	// Kind is what the subject is: Tenant, a Kubernetes kind, KeycloakGroup, Order, ….
	Kind string `json:"kind"`
	// Subject identifies the object: a tenant path, kind/namespace/name, a group path, ….
	Subject string `json:"subject"`
	// Action is what happened or would happen.
	Action Action `json:"action"`
	// Offering is the config name of the offering the subject belongs to.
	Offering string `json:"offering,omitempty"`
	// Resource is the 32-hex UUID of the Waldur resource behind the subject, if any.
	Resource string `json:"resource,omitempty"`
	// Orders lists the Waldur orders (32-hex UUIDs) this change fulfils.
	Orders []string `json:"orders,omitempty"`
	// Reason explains a skip or an error; empty otherwise.
	Reason string `json:"reason,omitempty"`
	// Cause is the stable word for why a skipped, held, waiting or kept entry
	// is so; empty otherwise. Read it, not Reason, to decide anything.
	Cause Cause `json:"cause,omitempty"`
	// Since is when the subject began to wait, where the source says so (a
	// Waldur order's creation time, for an order left waiting); zero otherwise.
	Since time.Time `json:"since,omitzero"`
}

// String renders the entry on one line, e.g. `+ Tenant iris/cluster/waldur-x`.
func (e Entry) String() string {
	s := e.Action.symbol() + " " + e.Kind + " " + e.Subject
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Set is an ordered collection of entries.
type Set struct {
	Entries []Entry `json:"entries"`
}

// Add appends entries.
func (s *Set) Add(e ...Entry) { s.Entries = append(s.Entries, e...) }

// Merge appends every entry of o.
func (s *Set) Merge(o Set) { s.Entries = append(s.Entries, o.Entries...) }

// Sort orders entries by stage, subject, kind and action, so output is stable.
func (s *Set) Sort() {
	slices.SortStableFunc(s.Entries, func(a, b Entry) int {
		return cmp.Or(
			cmp.Compare(a.Stage, b.Stage),
			cmp.Compare(a.Subject, b.Subject),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Action, b.Action),
		)
	})
}

// Filter returns the entries for which keep is true.
func (s Set) Filter(keep func(Entry) bool) []Entry {
	var out []Entry
	for _, e := range s.Entries {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// ByAction returns the entries with action a.
func (s Set) ByAction(a Action) []Entry {
	return s.Filter(func(e Entry) bool { return e.Action == a })
}

// Counts returns how many entries there are per action.
func (s Set) Counts() map[Action]int {
	c := make(map[Action]int, len(Actions))
	for _, e := range s.Entries {
		c[e.Action]++
	}
	return c
}

// Changed reports whether any entry creates, updates or deletes something.
func (s Set) Changed() bool {
	for _, e := range s.Entries {
		switch e.Action {
		case Create, Update, Delete:
			return true
		}
	}
	return false
}

// Summary renders the counts as `+2 ~1 -1 =7 !1`, leaving out zero counts; "no
// changes" when nothing at all is counted.
func (s Set) Summary() string {
	c := s.Counts()
	var parts []string
	for _, a := range Actions {
		if c[a] > 0 {
			parts = append(parts, fmt.Sprintf("%s%d", a.symbol(), c[a]))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, " ")
}

// Result is what one stage of the run returns beside its error: its entries
// and the API calls it made, by kind (nil when it makes none).
type Result struct {
	Changes Set
	Calls   map[string]int
}

// Apart is Collect undone: the entries, calls and error of a stage's
// result, for a caller that looks at them one by one (tests, mostly).
func Apart(r Result, err error) (Set, map[string]int, error) {
	return r.Changes, r.Calls, err
}

// Collect makes a Result of a stage function's entries, calls and error, for
// the functions that return them apart.
func Collect(cs Set, calls map[string]int, err error) (Result, error) {
	return Result{Changes: cs, Calls: calls}, err
}
