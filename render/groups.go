package render

import (
	"fmt"
	"maps"
	"slices"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// groupVars returns the values of the group-name pattern variables for one
// resource (see config.GroupVars); role is filled in per group.
func groupVars(o *config.Offering, d *TenantData) map[string]string {
	v := map[string]string{
		"slug":          d.Resource.Slug,
		"resource_uuid": d.Resource.UUID,
		"namespace":     d.Name,
		"project_slug":  d.Project.Slug,
		"project_uuid":  d.Project.UUID,
		"customer_slug": d.Customer.Slug,
		"customer_uuid": d.Customer.UUID,
		"offering_uuid": o.WaldurOfferingUUID,
	}
	maps.Copy(v, o.Settings.GroupVars())
	return v
}

// nsGroupNames names the three namespace-role groups of a tenant with the
// offering's keycloak_groups.namespace pattern.
func nsGroupNames(o *config.Offering, d *TenantData) (*RoleLists, error) {
	pattern := config.GroupPattern(o.Settings.Common().KeycloakGroups.Namespace)
	vars := groupVars(o, d)
	l := &RoleLists{}
	for _, role := range config.NamespaceRoles {
		vars["role"] = role
		name, err := pattern.Expand(vars)
		if err != nil {
			return nil, err
		}
		*l.forRole(role) = []string{name}
	}
	return l, nil
}

// rancherGroupNames names a rancher tenant's cluster parent group and the
// project child group under it.
func rancherGroupNames(o *config.Offering, d *TenantData) (parent, child string, err error) {
	g := o.Settings.Common().KeycloakGroups
	vars := groupVars(o, d)
	if parent, err = config.GroupPattern(g.Parent).Expand(vars); err != nil {
		return "", "", err
	}
	if child, err = config.GroupPattern(g.Child).Expand(vars); err != nil {
		return "", "", err
	}
	if parent == child {
		return "", "", fmt.Errorf("the parent and child group names are both %q", parent)
	}
	return parent, child, nil
}

// ResourceUUIDs returns the resources that have a tenant in the tree (read from
// the kustomizations' resource-uuid annotation). The Keycloak stage keeps the
// groups of a resource while it still has manifests in Git.
func (t Tree) ResourceUUIDs() map[waldur.UUID]bool {
	out := map[waldur.UUID]bool{}
	for u := range t.TenantDirs() {
		out[u] = true
	}
	return out
}

// TenantDirs maps every resource that has a tenant in the tree to its tenant
// directories, sorted.
func (t Tree) TenantDirs() map[waldur.UUID][]string {
	out := map[waldur.UUID][]string{}
	for dir := range t.tenants() {
		if u := tenantResource(t, dir); u != "" {
			out[u] = append(out[u], dir)
		}
	}
	for _, dirs := range out {
		slices.Sort(dirs)
	}
	return out
}
