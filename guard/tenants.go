package guard

import (
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
)

// TenantRemovals lists the tenant deletions of cs (entries of kind "Tenant"
// deleted) as removals of kind k. One with a Terminate order, or whose
// resource terminated maps to why Waldur reports it gone, is explained.
// scopeOf, when set, names the scopes each is also counted in.
func TenantRemovals(k Kind, cs changeset.Set, terminated map[string]string, scopeOf func(changeset.Entry) []string) []Removal {
	var out []Removal
	for _, e := range cs.Entries {
		if e.Kind != "Tenant" || e.Action != changeset.Delete {
			continue
		}
		r := Removal{Kind: k, Subject: e.Subject}
		if scopeOf != nil {
			r.Scopes = scopeOf(e)
		}
		if why, gone := terminated[e.Resource]; len(e.Orders) > 0 {
			r.Because = &Explanation{Cause: TerminateOrder, Why: "Terminate order " + strings.Join(e.Orders, ", ")}
		} else if gone && e.Resource != "" {
			r.Because = &Explanation{Cause: Terminated, Why: why}
		}
		out = append(out, r)
	}
	return out
}

// TenantsInPlace counts the tenants of cs in place before it (every tenant
// entry that is not a creation), for the site and each scope scopeOf names.
func TenantsInPlace(cs changeset.Set, scopeOf func(changeset.Entry) []string) Population {
	in := Population{"": 0}
	for _, e := range cs.Entries {
		if e.Kind != "Tenant" || e.Action == changeset.Create {
			continue
		}
		in[""]++
		if scopeOf != nil {
			for _, sc := range scopeOf(e) {
				in[sc]++
			}
		}
	}
	return in
}
