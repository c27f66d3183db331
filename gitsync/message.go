package gitsync

import (
	"fmt"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
)

// Trailer keys linking a commit to Waldur.
const (
	TrailerResource = "Waldur-Resource"
	TrailerOrder    = "Waldur-Order"
)

// Message writes the commit message for a change set: a subject line counting
// the added, updated and removed tenants (`waldur: +2 ~1 -1 tenants`), a body
// listing each of them and the resources left as they were because they could
// not be rendered, and git trailers naming the Waldur resource of every
// changed tenant and every order the change fulfils.
func Message(cs changeset.Set) string {
	tenants := changeset.Set{Entries: cs.Filter(func(e changeset.Entry) bool { return e.Kind == "Tenant" })}
	c := tenants.Counts()
	var counts []string
	for _, a := range []struct {
		action changeset.Action
		sign   string
	}{{changeset.Create, "+"}, {changeset.Update, "~"}, {changeset.Delete, "-"}} {
		if c[a.action] > 0 {
			counts = append(counts, fmt.Sprintf("%s%d", a.sign, c[a.action]))
		}
	}
	var b strings.Builder
	if len(counts) == 0 {
		b.WriteString("waldur: update generated files\n")
	} else {
		fmt.Fprintf(&b, "waldur: %s tenants\n", strings.Join(counts, " "))
	}
	sections := []struct {
		title  string
		action changeset.Action
	}{{"Added", changeset.Create}, {"Updated", changeset.Update}, {"Removed", changeset.Delete}}
	var resources, orders []string
	for _, s := range sections {
		list := tenants.ByAction(s.action)
		if len(list) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s (%d):\n", s.title, len(list))
		for _, e := range list {
			b.WriteString("  " + e.Subject)
			if s.action == changeset.Delete && len(e.Orders) == 0 {
				b.WriteString(" (no Terminate order)")
			}
			b.WriteString("\n")
			if e.Resource != "" {
				resources = append(resources, e.Resource)
			}
			orders = append(orders, e.Orders...)
		}
	}
	if skipped := cs.ByAction(changeset.Skip); len(skipped) > 0 {
		fmt.Fprintf(&b, "\nNot rendered, kept as they were (%d):\n", len(skipped))
		for _, e := range skipped {
			fmt.Fprintf(&b, "  %s: %s\n", e.Subject, oneLine(e.Reason))
		}
	}
	slices.Sort(resources)
	slices.Sort(orders)
	resources, orders = slices.Compact(resources), slices.Compact(orders)
	if len(resources)+len(orders) > 0 {
		b.WriteString("\n")
		for _, r := range resources {
			fmt.Fprintf(&b, "%s: %s\n", TrailerResource, r)
		}
		for _, o := range orders {
			fmt.Fprintf(&b, "%s: %s\n", TrailerOrder, o)
		}
	}
	return b.String()
}

// oneLine keeps a reason on one line of the message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
