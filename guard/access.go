package guard

import (
	"maps"
	"slices"
)

// Grants is who has access to what, for the access kinds: tenant → the
// subjects holding any grant in it. A tenant present with no subject is in
// place but gives nobody access; a tenant absent is gone (its removal is a
// Tenants removal, not an access one).
type Grants map[string]map[string]bool

// Tenant records that tenant is in place.
func (g Grants) Tenant(tenant string) {
	if g[tenant] == nil {
		g[tenant] = map[string]bool{}
	}
}

// Add records that subject has some access to tenant.
func (g Grants) Add(tenant, subject string) {
	g.Tenant(tenant)
	g[tenant][subject] = true
}

// Pairs is the number of (subject, tenant) pairs with access.
func (g Grants) Pairs() int {
	n := 0
	for _, subjects := range g {
		n += len(subjects)
	}
	return n
}

// Lost lists, as removals of kind k, the (subject, tenant) pairs of before
// whose tenant is still in after but gives the subject no access any more.
// A subject that moves from one role to another keeps its pair.
func Lost(k Kind, before, after Grants) []Removal {
	var out []Removal
	for _, tenant := range slices.Sorted(maps.Keys(before)) {
		now, stays := after[tenant]
		if !stays {
			continue
		}
		for _, s := range slices.Sorted(maps.Keys(before[tenant])) {
			if !now[s] {
				out = append(out, Removal{Kind: k, Subject: s, Tenant: tenant})
			}
		}
	}
	return out
}

// CheckAccess decides whether the access lost from before to after may be
// taken away at once: Check of Lost, against every pair of before.
func CheckAccess(k Kind, before, after Grants, o Options) error {
	if o.Allow {
		return nil
	}
	return Check(k, offboarded(Lost(k, before, after), o.Offboarded), Site(before.Pairs()), o)
}

// offboarded explains the removals of subjects a claimed offboarding
// request takes away.
func offboarded(rs []Removal, leaving map[string]string) []Removal {
	if len(leaving) == 0 {
		return rs
	}
	for i := range rs {
		if why, ok := leaving[rs[i].Subject]; ok && rs[i].Because == nil {
			rs[i].Because = &Explanation{Cause: Offboarding, Why: why}
		}
	}
	return rs
}
