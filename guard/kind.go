package guard

import (
	"fmt"
	"math"
	"strings"
)

// Kind is a kind of removal: what a run takes away. A new kind is a
// constant here and a row in kinds; the limits are the same for all.
type Kind int

const (
	// Tenants leave Git or a cluster (their directory, their objects).
	Tenants Kind = iota + 1
	// TenantGroups are the Keycloak groups of tenants no longer rendered,
	// counted per tenant.
	TenantGroups
	// Access is a (subject, tenant) pair losing all access a tenant's
	// RoleBinding subjects and ManagedNamespace users gave it, in Git or in
	// a cluster; a subject that keeps any role in the tenant loses nothing.
	Access
	// Memberships is a (user, tenant) pair losing every Keycloak membership
	// that gave the user access to the tenant.
	Memberships
	// Erred is a resource the feedback stage would set erred in Waldur.
	Erred
)

// kinds says how a refusal of each kind reads.
var kinds = map[Kind]struct {
	name    string
	message func(e *Error) string
}{
	Tenants:      {"tenants", tenantMessage},
	TenantGroups: {"Keycloak groups", func(e *Error) string { return "refusing to delete their Keycloak groups: " + tenantMessage(e) }},
	Access:       {"access", func(e *Error) string { return accessMessage(e, "RoleBinding subjects and ManagedNamespace users") }},
	Memberships:  {"Keycloak memberships", func(e *Error) string { return accessMessage(e, "Keycloak memberships") }},
	Erred:        {"erred resources", erredMessage},
}

// String names the kind, as the report and logs show it.
func (k Kind) String() string {
	if d, ok := kinds[k]; ok {
		return d.name
	}
	return fmt.Sprintf("kind %d", int(k))
}

func tenantMessage(e *Error) string {
	var names []string
	for _, r := range e.Unexplained {
		names = append(names, r.Subject)
	}
	return fmt.Sprintf("refusing to remove %d of %d tenants that have no Terminate order in Waldur (the limit is %.0f%% and at least %d; an empty or partial Waldur answer looks like this): %s%s; rerun with --allow-mass-prune if this is intended",
		e.Removed, e.Existing, e.Options.MaxFraction*100, e.Options.MinCount, list(names), e.explainedNote())
}

func accessMessage(e *Error, what string) string {
	return fmt.Sprintf("refusing to remove %d of %d %s at once (the limit is %.0f%% and at least %d; empty teams in Waldur look like this): %s%s; rerun with --allow-mass-prune if this is intended",
		e.Removed, e.Existing, "(subject, tenant) pairs of "+what, e.Options.MaxFraction*100, e.Options.MinCount, list(e.Where), e.explainedNote())
}

func erredMessage(e *Error) string {
	return fmt.Sprintf("refused: %d of %d resources cannot be rendered, more than the deletion guard's share (max_fraction %g); none is set erred, as this looks like an outage or a config error",
		e.Removed, e.Existing, e.Options.MaxFraction)
}

// list joins names, the first 20 of them.
func list(names []string) string {
	if len(names) > 20 {
		names = append(names[:20:20], fmt.Sprintf("… and %d more", len(names)-20))
	}
	return strings.Join(names, ", ")
}

// Error is a refused run: the removals of one kind that nothing explains,
// against what is in place.
type Error struct {
	Kind Kind
	// Unexplained are the removals counted against the limit; Explained
	// those listed but not counted.
	Unexplained, Explained []Removal
	// Removed is len(Unexplained); Existing what is in place, in Scope.
	Removed, Existing int
	// Scope names the part of the site the refusal counted in (an offering,
	// a target); empty for the whole site.
	Scope string
	// Where lists the tenants the unexplained removals belong to, sorted.
	Where []string
	// Limit is the most unexplained removals Options allow in Scope.
	Limit   int
	Options Options
}

// AccessError is the name access refusals had; every refusal is an Error.
type AccessError = Error

func (e *Error) Error() string {
	msg := tenantMessage
	if d, ok := kinds[e.Kind]; ok {
		msg = d.message
	}
	if e.Scope != "" {
		return "in " + e.Scope + ": " + msg(e)
	}
	return msg(e)
}

// limit is the most unexplained removals of existing the options allow at
// once: never all of them.
func (o Options) limit(existing int) int {
	n := max(o.MinCount-1, int(math.Floor(o.MaxFraction*float64(existing)+1e-9)))
	if n >= existing {
		n = max(existing-1, 0)
	}
	return n
}

func (e *Error) explainedNote() string {
	if len(e.Explained) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d more are explained and not counted)", len(e.Explained))
}
