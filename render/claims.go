package render

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// InPlace reports whether a resource has a tenant in place already (in Git,
// or in the cluster): such a resource holds the names it has.
type InPlace func(waldur.UUID) bool

// claimant is one resource's tenants and groups, with what decides ties.
type claimant struct {
	offering string
	resource waldur.UUID
	label    string
	created  string // RFC 3339, sortable
}

// ResolveClaims makes every name unique across the whole config: an object
// name on a target cluster (kind, namespace, name) and a leaf Keycloak group
// path in a realm belong to one resource only. Within one offering the
// renderer settles this already; across offerings the resource that holds
// the name (its tenant is in place, and the other's is not) keeps it,
// otherwise the one created first (then the lower uuid). The other is skipped, with an error naming
// both, so its Create order is erred and nothing of it is written. Two
// tenants' members are never merged into one group.
func (res *Result) ResolveClaims(cfg *config.Config, st *waldur.State, inPlace InPlace) {
	if len(cfg.Offerings) < 2 {
		return // within one offering the renderer settled every name
	}
	who := claimants(cfg, st)
	owner := map[string]claimant{} // claim → first claimant
	losers := map[waldur.UUID]string{}
	for _, c := range res.claimList(cfg, who) {
		prev, taken := owner[c.claim]
		switch {
		case !taken:
			owner[c.claim] = c.who
			continue
		case prev.resource == c.who.resource || prev.offering == c.who.offering:
			continue // the same resource, or one offering: the renderer's business
		}
		win, lose := prev, c.who
		held := func(c claimant) bool { return inPlace != nil && inPlace(c.resource) }
		older := cmp.Or(cmp.Compare(lose.created, win.created), cmp.Compare(lose.resource, win.resource)) < 0
		if held(lose) && !held(win) || held(lose) == held(win) && older {
			win, lose = lose, win
			owner[c.claim] = win
		}
		if _, done := losers[lose.resource]; !done {
			losers[lose.resource] = fmt.Sprintf("%s is already used by resource %s of offering %s (%s); names must be unique across offerings",
				c.claim, win.label, win.offering, win.resource)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(losers)) {
		res.skip(who[id], losers[id])
	}
}

type claimOf struct {
	claim string
	who   claimant
}

// claimList lists every claim of the result, in a stable order: by creation
// time and uuid of the claimant, so the first-created claims first.
func (res *Result) claimList(cfg *config.Config, who map[waldur.UUID]claimant) []claimOf {
	offerings := map[string]*config.Offering{}
	for i := range cfg.Offerings {
		offerings[cfg.Offerings[i].Name] = &cfg.Offerings[i]
	}
	var out []claimOf
	for _, t := range res.Tenants {
		o := offerings[t.Offering]
		if o == nil {
			continue
		}
		cluster := ClusterKey(o, tenantTarget(t.Dir))
		for _, n := range t.Names { // the objects may have been dropped (WithoutObjects)
			out = append(out, claimOf{objectClaim(n.Kind, n.Namespace, n.Name, cluster), who[t.Resource]})
		}
		if b := backend.Lookup(o.BackendType); b != nil && b.OperatorNamespaces {
			// The operator makes the namespace the ManagedNamespace names.
			out = append(out, claimOf{objectClaim("Namespace", "", t.Name, cluster), who[t.Resource]})
		}
	}
	parents := map[string]bool{}
	for _, g := range res.Groups {
		if g.Parent != "" {
			parents[g.Offering+"\x00"+g.Parent] = true
		}
	}
	for _, g := range res.Groups {
		o := offerings[g.Offering]
		if o == nil || parents[g.Offering+"\x00"+g.Name] {
			continue // a parent group (Rancher's c_<cluster>) is shared by design
		}
		kc := o.Settings.Common().Keycloak
		for _, r := range g.Resources {
			out = append(out, claimOf{fmt.Sprintf("Keycloak group %s in realm %s of %s", g.Path(), kc.Realm, strings.TrimRight(kc.URL, "/")), who[r]})
		}
	}
	slices.SortStableFunc(out, func(a, b claimOf) int {
		return cmp.Or(cmp.Compare(a.who.created, b.who.created), cmp.Compare(a.who.resource, b.who.resource))
	})
	return out
}

// objectClaim names an object on a cluster.
func objectClaim(kind, namespace, name, cluster string) string {
	return fmt.Sprintf("%s %s/%s on cluster %s", kind, namespace, name, cluster)
}

// claimants describes every resource of the state.
func claimants(cfg *config.Config, st *waldur.State) map[waldur.UUID]claimant {
	dirs := map[string]string{}
	for i := range cfg.Offerings {
		dirs[cfg.Offerings[i].Name] = cfg.Offerings[i].DirName()
	}
	out := map[waldur.UUID]claimant{}
	for _, o := range st.Offerings {
		for i := range o.Resources {
			r := &o.Resources[i]
			out[r.UUID] = claimant{offering: o.Name, resource: r.UUID, label: dirs[o.Name] + "/" + resourceLabel(r), created: r.Created.UTC().Format("2006-01-02T15:04:05.000000000Z")}
		}
	}
	return out
}

// skip takes a resource's tenants and groups out of the result and records
// it as skipped.
func (res *Result) skip(c claimant, why string) {
	res.Tenants = slices.DeleteFunc(res.Tenants, func(t *Tenant) bool { return t.Resource == c.resource })
	res.Groups = slices.DeleteFunc(res.Groups, func(g Group) bool {
		if g.Offering != c.offering || !slices.Contains(g.Resources, c.resource) {
			return false
		}
		g.Resources = slices.DeleteFunc(slices.Clone(g.Resources), func(r waldur.UUID) bool { return r == c.resource })
		return len(g.Resources) == 0
	})
	for i := range res.Groups {
		if res.Groups[i].Offering == c.offering {
			res.Groups[i].Resources = slices.DeleteFunc(res.Groups[i].Resources, func(r waldur.UUID) bool { return r == c.resource })
		}
	}
	res.Skipped[c.resource] = why
	res.Changes.Add(changeset.Entry{Stage: "render", Kind: "Resource", Action: changeset.Skip, Offering: c.offering,
		Subject: c.label, Resource: string(c.resource), Reason: why, Cause: changeset.CauseNameConflict})
	res.Changes.Sort()
}

// ClusterKey names the cluster an offering's target is applied to, as the
// apply command picks it: the kubeconfig and context of the offering (the
// management ones for Rancher's management target); empty keys are the
// default cluster.
func ClusterKey(o *config.Offering, target string) string {
	path, ctx := o.Settings.Kubeconfig(target)
	if path == "" && ctx == "" {
		return "(default)"
	}
	return path + "#" + ctx
}

// tenantTarget is the target level of a tenant directory: <offering>/<target>/<name>.
func tenantTarget(dir string) string {
	parts := strings.Split(dir, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2]
}
