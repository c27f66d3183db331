package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/waldur"
)

// Output targets (the directory level between offering and tenant).
const (
	TargetCluster    = backend.TargetCluster
	TargetManagement = backend.TargetManagement
	TargetDownstream = backend.TargetDownstream
)

// profile is what differs between the settings of backend types; the rest
// (targets, templates, kinds) is in the backend's registration.
type profile interface {
	// fill completes the template data, or says why the resource cannot be rendered.
	fill(in *offeringInput, r *waldur.Resource, d *TenantData) error
	// claims lists names that must be unique among the offering's resources.
	claims(d *TenantData) []string
	// projectClaims lists names that resources of one Waldur project share and
	// resources of two projects must not.
	projectClaims(d *TenantData) []string
	// groups lists the Keycloak groups the resource needs.
	groups(d *TenantData) []Group
}

// builtinProfiles are the render profiles of the built-in backends, by the
// profile their registrations name (backend/<name>.go). They stay in render
// because they fill render's template data with render's own helpers; a
// backend that brings its own profile registers it (backend.Backend.Render).
var builtinProfiles = map[string]func(o *config.Offering) profile{
	backend.K8sUTNamespace: func(o *config.Offering) profile { return &k8sUTProfile{s: o.Settings.K8sUT, o: o} },
	backend.Namespace:      func(o *config.Offering) profile { return &namespaceProfile{s: o.Settings.Namespace, o: o} },
	backend.OKD:            func(o *config.Offering) profile { return &okdProfile{s: o.Settings.OKD, o: o} },
	backend.Rancher:        func(o *config.Offering) profile { return &rancherProfile{s: o.Settings.Rancher, o: o} },
}

// newProfile returns the render profile of the offering's backend: the one
// its registration brings, else the built-in profile it names.
func newProfile(o *config.Offering) profile {
	b := backend.Lookup(o.BackendType)
	if b == nil {
		panic("render: offering " + o.Name + " has backend type " + o.BackendType + ", which is not registered")
	}
	if b.Render != nil {
		if p, ok := b.Render.(Profile); ok {
			return &registeredProfile{p: p, o: o}
		}
		panic("render: backend " + o.BackendType + " registers a render profile that is no render.Profile")
	}
	if f := builtinProfiles[b.Profile]; f != nil {
		return f(o)
	}
	panic("render: backend " + o.BackendType + " uses profile " + b.Profile + ", which is no built-in")
}

// Profile is the render profile of a backend that registers settings of its
// own (backend.Backend.Render). The template data it is given carries the
// offering, resource, project, customer, effective limits and namespace
// labels; it fills in the rest.
type Profile interface {
	// Fill completes d (its Name at least: the namespace) or says why the
	// resource cannot be rendered.
	Fill(o *config.Offering, r *waldur.Resource, d *TenantData) error
	// Claims lists names that must be unique among the offering's resources.
	Claims(d *TenantData) []string
}

// registeredProfile adapts a registered Profile; such a backend has no
// Keycloak groups and no names shared within a project.
type registeredProfile struct {
	p Profile
	o *config.Offering
}

func (p *registeredProfile) fill(_ *offeringInput, r *waldur.Resource, d *TenantData) error {
	return p.p.Fill(p.o, r, d)
}
func (p *registeredProfile) claims(d *TenantData) []string      { return p.p.Claims(d) }
func (p *registeredProfile) projectClaims(*TenantData) []string { return nil }
func (p *registeredProfile) groups(*TenantData) []Group         { return nil }

// namespaceName joins prefix and slug and checks the result is an RFC 1123 label.
func namespaceName(prefix, slug string) (string, error) {
	if slug == "" {
		return "", changeset.Because(changeset.CauseInvalidName, fmt.Errorf("resource has no slug: its namespace cannot be named"))
	}
	name := prefix + slug
	switch {
	case len(name) > manifest.MaxLabel:
		return "", changeset.Because(changeset.CauseInvalidName, fmt.Errorf("namespace name %q exceeds %d characters (%d)", name, manifest.MaxLabel, len(name)))
	case !manifest.IsDNS1123Label(name):
		return "", changeset.Because(changeset.CauseInvalidName, fmt.Errorf("namespace name %q is not a valid RFC 1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit)", name))
	}
	return name, nil
}

// quotaKeyFunc maps a component (key, type) and its exact limit to quota keys
// and values; an *unmappedError says that no quota key maps the component.
type quotaKeyFunc func(key, typ string, c config.Component, v *big.Rat) (map[string]quantity, error)

// buildQuota converts the effective limits into a quota map. A component no
// quota key maps is dropped with a warning, as the site agent drops it; a value
// that does not fit its quota key exactly is refused (see checkQuantity).
func buildQuota(o *config.Offering, d *TenantData, f quotaKeyFunc) (map[string]string, error) {
	q := map[string]string{}
	for _, k := range sortedKeys(d.Resource.Limits) {
		kv, err := f(k, o.ComponentType(k), o.BackendComponents[k], exact(d.Resource.Limits[k]))
		var um *unmappedError
		if errors.As(err, &um) {
			d.warnings = append(d.warnings, um.Error())
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, qk := range sortedKeys(kv) {
			if err := checkQuantity(k, qk, kv[qk]); err != nil {
				return nil, err
			}
			if _, dup := q[qk]; dup {
				return nil, changeset.Because(changeset.CauseQuotaMapping, fmt.Errorf("component %s maps to quota key %s, which another component already sets", k, qk))
			}
			q[qk] = kv[qk].text
		}
	}
	for qk, v := range d.hold {
		if _, ok := q[qk]; ok {
			q[qk] = v
		}
	}
	return q, nil
}

// unmappedError is a component that no quota key maps: its limit is dropped.
type unmappedError struct{ key, typ, hint string }

func (e *unmappedError) Error() string {
	return fmt.Sprintf("component %s (type %s) has no quota mapping: its limit is not rendered; %s", e.key, e.typ, e.hint)
}

// Hints for an unmapped component, per profile: only the namespace, okd and
// rancher profiles read k8s_resource.
const (
	hintQuotaMapping = "to render it, add its type to backend_settings.component_quota_mapping"
	hintMappingOrExt = "to render it, add its type to backend_settings.component_quota_mapping or give the component a k8s_resource"
	hintK8sResource  = "to render it, give the component a k8s_resource (requests.<k8s_resource>)"
)

// unitQuantity is v in the unit the site agent gives a component type:
// gibibytes for ram, memory and storage, plain numbers for everything else.
func unitQuantity(typ string, v *big.Rat) quantity {
	switch typ {
	case "ram", "memory", "storage":
		return giQuantity(v)
	}
	return plainQuantity(v)
}

// roleMapper returns a function mapping Waldur roles through m, else def.
func roleMapper(m map[string]string, def string) func(string) string {
	return func(r string) string {
		if v, ok := m[r]; ok {
			return v
		}
		return def
	}
}

func (l *RoleLists) forRole(role string) *[]string {
	switch role {
	case config.NSRoleAdmin:
		return &l.Admin
	case config.NSRoleReadWrite:
		return &l.ReadWrite
	}
	return &l.ReadOnly
}

// nsRoleGroups lists the Keycloak groups of the namespace roles with their members.
func nsRoleGroups(o *config.Offering, d *TenantData) []Group {
	if d.Groups == nil {
		return nil
	}
	var out []Group
	for _, role := range config.NamespaceRoles {
		g := Group{
			Name:        (*d.Groups.forRole(role))[0],
			Description: "Namespace " + d.Resource.Slug + " " + role + " access",
			Offering:    o.Name,
			Resources:   []waldur.UUID{waldur.UUID(d.Resource.UUID)},
			Members:     []string{},
		}
		for _, m := range d.Members {
			if m.Role == role {
				g.Members = append(g.Members, m.Username)
			}
		}
		out = append(out, g)
	}
	return out
}

// k8sUTProfile renders ManagedNamespace objects for the UT operator.
type k8sUTProfile struct {
	s *config.K8sUTSettings
	o *config.Offering
}

func (p *k8sUTProfile) projectClaims(*TenantData) []string { return nil }
func (p *k8sUTProfile) claims(d *TenantData) []string {
	return []string{d.Name}
}
func (p *k8sUTProfile) groups(d *TenantData) []Group { return nsRoleGroups(p.o, d) }

func (p *k8sUTProfile) fill(in *offeringInput, r *waldur.Resource, d *TenantData) error {
	var err error
	if d.Name, err = namespaceName(p.s.NamespacePrefix, r.Slug); err != nil {
		return err
	}
	d.Quota, err = buildQuota(p.o, d, func(k, typ string, _ config.Component, v *big.Rat) (map[string]quantity, error) {
		field, ok := p.s.ComponentQuotaMapping[typ]
		switch {
		case !ok:
			return nil, changeset.Because(changeset.CauseQuotaMapping, &unmappedError{k, typ, hintQuotaMapping})
		case field == "":
			return nil, nil
		}
		return map[string]quantity{field: unitQuantity(typ, v)}, nil
	})
	if err != nil {
		return err
	}
	d.Members = in.members(d, r, roleMapper(p.s.RoleMapping, p.s.DefaultRole))
	if p.s.KeycloakEnabled {
		if d.Groups, err = nsGroupNames(p.o, d); err != nil {
			return err
		}
	}
	if p.s.SyncUsersToCR {
		d.Users = &RoleLists{Admin: []string{}, ReadWrite: []string{}, ReadOnly: []string{}}
		for _, m := range d.Members {
			id := in.identity(m, p.s.CRUserIdentityField)
			if id == "" {
				continue
			}
			if p.s.CRUserIdentityLowercase {
				id = strings.ToLower(id)
			}
			if why := reservedName(id); why != "" {
				d.exclude(m.Username, fmt.Sprintf("ManagedNamespace user %q (its %s): %s", id, p.s.CRUserIdentityField, why))
				continue
			}
			l := d.Users.forRole(m.Role)
			*l = append(*l, id)
		}
		for _, l := range []*[]string{&d.Users.Admin, &d.Users.ReadWrite, &d.Users.ReadOnly} {
			slices.Sort(*l)
			*l = slices.Compact(*l)
		}
	}
	d.K8sUT = &K8sUTData{CRNamespace: p.s.CRNamespace}
	owner := map[string]string{}
	if r.CustomerUUID != "" {
		owner["orgID"] = r.CustomerUUID.Dashed()
	}
	if r.ProjectUUID != "" {
		owner["projectID"] = r.ProjectUUID.Dashed()
	}
	if len(owner) > 0 {
		d.K8sUT.Owner = owner
	}
	return nil
}

// namespaceProfile renders plain Kubernetes: Namespace, ResourceQuota, RoleBindings.
type namespaceProfile struct {
	s *config.NamespaceSettings
	o *config.Offering
}

func (p *namespaceProfile) projectClaims(*TenantData) []string { return nil }
func (p *namespaceProfile) claims(d *TenantData) []string      { return []string{d.Name} }
func (p *namespaceProfile) groups(d *TenantData) []Group       { return nsRoleGroups(p.o, d) }
func extendedKey(c config.Component) string                    { return "requests." + c.K8sResource }
func (p *namespaceProfile) fill(in *offeringInput, r *waldur.Resource, d *TenantData) error {
	var err error
	if d.Name, err = namespaceName(p.s.NamespacePrefix, r.Slug); err != nil {
		return err
	}
	d.QuotaName = p.s.QuotaName
	d.Quota, err = buildQuota(p.o, d, func(k, typ string, c config.Component, v *big.Rat) (map[string]quantity, error) {
		if c.K8sResource != "" {
			return map[string]quantity{extendedKey(c): plainQuantity(v)}, nil
		}
		field, ok := p.s.ComponentQuotaMapping[typ]
		switch {
		case !ok:
			return nil, changeset.Because(changeset.CauseQuotaMapping, &unmappedError{k, typ, hintMappingOrExt})
		case field == "":
			return nil, nil
		}
		return map[string]quantity{field: unitQuantity(typ, v)}, nil
	})
	if err != nil {
		return err
	}
	d.LimitRange = defaultLimitRange(d.Quota)
	d.Members = in.members(d, r, roleMapper(p.s.RoleMapping, p.s.DefaultRole))
	var groups *RoleLists
	if p.s.KeycloakEnabled || *p.s.BindGroups {
		if groups, err = nsGroupNames(p.o, d); err != nil {
			return err
		}
	}
	if p.s.KeycloakEnabled {
		d.Groups = groups
	}
	d.RoleBindings = []RoleBinding{}
	for _, role := range config.NamespaceRoles {
		rb := RoleBinding{Name: "waldur-" + role, ClusterRole: p.s.ClusterRoles[role], Subjects: []Subject{}}
		if *p.s.BindGroups {
			name := p.s.GroupPrefix + (*groups.forRole(role))[0]
			if why := reservedName(name); why != "" {
				return fmt.Errorf("RoleBinding subject group %q is refused: %s", name, why)
			}
			rb.Subjects = append(rb.Subjects, Subject{APIGroup: rbacGroup, Kind: "Group", Name: name})
		}
		if *p.s.BindUsers {
			var users []string
			for _, m := range d.Members {
				id := in.identity(m, p.s.UserIdentityField)
				if m.Role != role || id == "" {
					continue
				}
				if why := reservedName(p.s.UserPrefix + id); why != "" {
					d.exclude(m.Username, fmt.Sprintf("RoleBinding subject user %q (its %s): %s", p.s.UserPrefix+id, p.s.UserIdentityField, why))
					continue
				}
				users = append(users, p.s.UserPrefix+id)
			}
			slices.Sort(users)
			for _, u := range slices.Compact(users) {
				rb.Subjects = append(rb.Subjects, Subject{APIGroup: rbacGroup, Kind: "User", Name: u})
			}
		}
		if len(rb.Subjects) > 0 {
			d.RoleBindings = append(d.RoleBindings, rb)
		}
	}
	return nil
}

const rbacGroup = "rbac.authorization.k8s.io"

// okdProfile renders OpenShift projects as namespaces with a quota and one
// RoleBinding per team member.
type okdProfile struct {
	s *config.OKDSettings
	o *config.Offering
}

func (p *okdProfile) projectClaims(*TenantData) []string { return nil }
func (p *okdProfile) claims(d *TenantData) []string      { return []string{d.Name} }
func (p *okdProfile) groups(*TenantData) []Group         { return nil }

func (p *okdProfile) fill(in *offeringInput, r *waldur.Resource, d *TenantData) error {
	if err := requireSlugs(r); err != nil {
		return err
	}
	var err error
	if d.Name, err = namespaceName(strings.ToLower(p.s.NamespacePrefix+p.s.AllocationPrefix), strings.ToLower(r.Slug)); err != nil {
		return err
	}
	d.QuotaName = "waldur-quota"
	two := big.NewRat(2, 1)
	d.Quota, err = buildQuota(p.o, d, func(k, typ string, c config.Component, v *big.Rat) (map[string]quantity, error) {
		switch {
		case c.K8sResource != "":
			return map[string]quantity{extendedKey(c): plainQuantity(v)}, nil
		case typ == "cpu":
			return map[string]quantity{"requests.cpu": plainQuantity(v), "limits.cpu": plainQuantity(mul(two, v))}, nil
		case typ == "memory" || typ == "ram":
			return map[string]quantity{"requests.memory": giQuantity(v), "limits.memory": giQuantity(mul(two, v))}, nil
		case typ == "storage":
			return map[string]quantity{"requests.storage": giQuantity(v)}, nil
		case typ == "pods":
			return map[string]quantity{"pods": plainQuantity(v)}, nil
		}
		return nil, changeset.Because(changeset.CauseQuotaMapping, &unmappedError{k, typ, hintK8sResource})
	})
	if err != nil {
		return err
	}
	d.Members = in.members(d, r, roleMapper(p.s.RoleMapping, p.s.DefaultRole))
	d.OKD = &OKDData{
		DisplayName:  cmpOr(r.Name, d.Name),
		Description:  description(r),
		Organization: p.s.NamespacePrefix + p.s.CustomerPrefix + r.CustomerSlug,
		Parent:       p.s.NamespacePrefix + p.s.ProjectPrefix + r.ProjectSlug,
	}
	ann := map[string]string{
		"openshift.io/display-name": d.OKD.DisplayName,
		"openshift.io/description":  d.OKD.Description,
		"waldur/organization":       d.OKD.Organization,
		"waldur/parent":             d.OKD.Parent,
	}
	for k, v := range d.NamespaceAnnotations {
		ann[k] = v
	}
	d.NamespaceAnnotations = ann
	d.RoleBindings = []RoleBinding{}
	for _, m := range d.Members {
		d.RoleBindings = append(d.RoleBindings, RoleBinding{
			Name:        objectName("waldur-", m.Username),
			ClusterRole: m.Role,
			Subjects:    []Subject{{APIGroup: rbacGroup, Kind: "User", Name: m.Username}},
		})
	}
	return nil
}

func requireSlugs(r *waldur.Resource) error {
	var missing []string
	if r.CustomerSlug == "" {
		missing = append(missing, "customer_slug")
	}
	if r.ProjectSlug == "" {
		missing = append(missing, "project_slug")
	}
	if len(missing) > 0 {
		return changeset.Because(changeset.CauseInvalidName, fmt.Errorf("resource has unset or missing slug fields: %s", strings.Join(missing, ", ")))
	}
	return nil
}

func description(r *waldur.Resource) string {
	return fmt.Sprintf("%s (Customer: %s, Project: %s)", r.Name, cmpOr(r.CustomerName, r.CustomerSlug), cmpOr(r.ProjectName, r.ProjectSlug))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// objectName turns prefix+s into a valid object name. When s has to be changed
// to fit (case, characters, length), a hash of s is appended so that different
// inputs never share a name.
func objectName(prefix, s string) string {
	clean := strings.Trim(nonName.ReplaceAllString(strings.ToLower(s), "-"), "-")
	name := prefix + clean
	if clean == s && len(name) <= manifest.MaxLabel {
		return name
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	if len(name)+len(suffix) > manifest.MaxLabel {
		name = strings.TrimRight(name[:manifest.MaxLabel-len(suffix)], "-")
	}
	return name + suffix
}

// rancherProfile renders a Rancher Project and binding on the management cluster
// and the namespace and quota in the downstream cluster.
type rancherProfile struct {
	s *config.RancherSettings
	o *config.Offering
}

func (p *rancherProfile) claims(d *TenantData) []string {
	return []string{d.Name, "project:" + d.Rancher.ProjectName}
}

// projectClaims: the child group is the Waldur project's, shared by its resources.
func (p *rancherProfile) projectClaims(d *TenantData) []string {
	if d.Rancher.ChildGroup == "" {
		return nil
	}
	return []string{"Keycloak group " + Group{Name: d.Rancher.ChildGroup, Parent: d.Rancher.ParentGroup}.Path()}
}

// Labels the site agent puts on every Rancher namespace (pod security), and
// waldur/managed, which it sets as an annotation, as a label too so that
// selectors find the namespaces.
var rancherNamespaceLabels = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
	"waldur/managed":                             "true",
}

// rancherProjectFields maps quota keys to Rancher's resourceQuota.limit fields.
var rancherProjectFields = map[string]string{
	"limits.cpu": "limitsCpu", "limits.memory": "limitsMemory", "requests.storage": "requestsStorage", "pods": "pods",
}

func (p *rancherProfile) fill(in *offeringInput, r *waldur.Resource, d *TenantData) error {
	if err := requireSlugs(r); err != nil {
		return err
	}
	slug := r.Slug
	if slug == "" {
		slug = "resource-" + r.UUID.Dashed()[:8]
	}
	var err error
	if d.Name, err = namespaceName(p.s.ProjectPrefix, slug); err != nil {
		return err
	}
	d.QuotaName = p.s.QuotaName
	d.Quota, err = buildQuota(p.o, d, func(k, typ string, c config.Component, v *big.Rat) (map[string]quantity, error) {
		key := ""
		switch {
		case c.K8sResource != "":
			key = extendedKey(c)
		case typ == "cpu" || k == "cpu":
			key = "limits.cpu"
		case typ == "ram" || k == "memory":
			key = "limits.memory"
		case typ == "storage" || k == "storage":
			key = "requests.storage"
		case typ == "gpu" || k == "gpu":
			key = "requests.nvidia.com/gpu"
		case typ == "pods":
			key = "pods"
		default:
			return nil, changeset.Because(changeset.CauseQuotaMapping, &unmappedError{k, typ, hintK8sResource})
		}
		return map[string]quantity{key: rancherQuantity(key, v)}, nil
	})
	if err != nil {
		return err
	}
	d.Members = in.members(d, r, func(string) string { return p.s.DefaultRole })
	rd := &RancherData{
		ClusterID:    p.s.ClusterID,
		ProjectName:  p.projectName(r),
		DisplayName:  d.Name,
		Description:  description(r),
		RoleTemplate: p.s.DefaultRole,
	}
	rd.ProjectID = p.s.ClusterID + ":" + rd.ProjectName
	rd.BindingName = objectName("waldur-", p.s.DefaultRole)
	rd.BindingNamespace = rd.ProjectName
	if p.s.BindingNamespace == "backing" {
		rd.BindingNamespace = p.s.ClusterID + "-" + rd.ProjectName
	}
	limit := map[string]any{}
	for qk, field := range rancherProjectFields {
		if v, ok := d.Quota[qk]; ok {
			limit[field] = v
		}
	}
	rd.ProjectAnnotations = map[string]string{
		"waldur/organization": r.CustomerSlug,
		"waldur/managed":      "true",
		"waldur/project_slug": cmpOr(r.ProjectSlug, "unknown"),
	}
	ann := map[string]string{"field.cattle.io/projectId": rd.ProjectID, "waldur/managed": "true"}
	if len(limit) > 0 {
		rd.ProjectQuota = map[string]any{"limit": limit}
		b, err := json.Marshal(rd.ProjectQuota)
		if err != nil {
			return err
		}
		ann["field.cattle.io/resourceQuota"] = string(b)
	}
	if p.s.KeycloakEnabled {
		if rd.ParentGroup, rd.ChildGroup, err = rancherGroupNames(p.o, d); err != nil {
			return err
		}
		rd.GroupPrincipal = "keycloakoidc_group://" + rd.ChildGroup
	}
	d.Rancher = rd
	labels := map[string]string{}
	for k, v := range rancherNamespaceLabels {
		labels[k] = v
	}
	for k, v := range d.NamespaceLabels {
		labels[k] = v
	}
	d.NamespaceLabels = labels
	for k, v := range d.NamespaceAnnotations {
		ann[k] = v
	}
	d.NamespaceAnnotations = ann
	return nil
}

// projectName adopts the project named in the resource's backend id
// (<cluster>:<project>) and otherwise derives p-<12 hex digits of the SHA-256 of
// the resource UUID>: stable for the resource's life, unrelated to how Waldur
// generates UUIDs.
func (p *rancherProfile) projectName(r *waldur.Resource) string {
	if c, proj, ok := strings.Cut(r.BackendID, ":"); ok && c == p.s.ClusterID && manifest.IsDNS1123Label(proj) {
		return proj
	}
	sum := sha256.Sum256([]byte(r.UUID))
	return "p-" + hex.EncodeToString(sum[:])[:12]
}

func (p *rancherProfile) groups(d *TenantData) []Group {
	rd := d.Rancher
	if rd.ChildGroup == "" {
		return nil
	}
	res := []waldur.UUID{waldur.UUID(d.Resource.UUID)}
	child := Group{
		Name: rd.ChildGroup, Parent: rd.ParentGroup, Offering: p.o.Name, Resources: res, Members: []string{},
		Description: fmt.Sprintf("Project %s members with role %s", d.Project.Slug, rd.RoleTemplate),
	}
	for _, m := range d.Members {
		child.Members = append(child.Members, m.Username)
	}
	return []Group{
		{Name: rd.ParentGroup, Offering: p.o.Name, Resources: res, Members: []string{}, Description: "Cluster access group for " + rd.ClusterID},
		child,
	}
}

// rancherQuantity formats a quota value the way the site agent's Rancher plugin
// does (limits.cpu in millicores, limits.memory and requests.storage in
// mebibytes, the rest as plain numbers), exactly: a memory or storage value
// that is not a whole number of mebibytes is written in gibibytes instead of
// being truncated, and a CPU value finer than a millicore is refused.
func rancherQuantity(key string, v *big.Rat) quantity {
	switch key {
	case "limits.cpu":
		m := mul(v, thousand)
		return quantity{ratString(m) + "m", v}
	case "limits.memory", "requests.storage":
		if m := mul(v, big.NewRat(1024, 1)); m.IsInt() {
			return quantity{ratString(m) + "Mi", mul(m, mib)}
		}
		return giQuantity(v)
	}
	return plainQuantity(v)
}
