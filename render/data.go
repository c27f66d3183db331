package render

import "slices"

// TenantData is what every template, default or site-provided, is rendered with:
// one Waldur resource as the profile sees it. docs/templates.md documents it.
type TenantData struct {
	// Offering is the offering the resource belongs to.
	Offering OfferingData
	// Resource is the Waldur resource.
	Resource ResourceData
	// Project and Customer are the resource's Waldur project and organisation.
	Project  ScopeData
	Customer ScopeData

	// Name is the tenant's name: the namespace name every profile gives it.
	Name string
	// Namespace is where the tenant's namespaced objects go (equal to Name).
	Namespace string
	// QuotaName is the name of the tenant's ResourceQuota, where the profile has one.
	QuotaName string
	// Quota is the profile's quota map (spec.quota or spec.hard), after status rules.
	Quota map[string]string
	// NamespaceLabels and NamespaceAnnotations go on the tenant namespace (nil when none).
	NamespaceLabels      map[string]string
	NamespaceAnnotations map[string]string

	// Groups are the Keycloak group names per namespace role; nil when Keycloak is off.
	Groups *RoleLists
	// Users are the user identities per namespace role (k8s-ut-namespace with
	// sync_users_to_cr); nil when not synced.
	Users *RoleLists
	// Members is the resource's team as the profile maps it, sorted by username.
	Members []Member
	// RoleBindings are the RoleBindings the namespace and okd profiles render.
	RoleBindings []RoleBinding
	// LimitRange holds the container defaults of the namespace profile's
	// LimitRange; nil when the quota constrains neither cpu nor memory.
	LimitRange *LimitRangeData

	// K8sUT, Rancher and OKD hold profile-specific values; nil for other profiles.
	K8sUT   *K8sUTData
	Rancher *RancherData
	OKD     *OKDData

	// Item is the current element inside a forEach template.
	Item any

	// warnings are problems that did not stop the tenant from rendering (a limit
	// dropped for want of a quota mapping); excluded are the members left out
	// because Kubernetes reserves their names.
	warnings []string
	excluded []excludedMember
	// hold are the quota values kept in place of the new ones (QuotaHold.Keep).
	hold map[string]string
}

// exclude records a member left out, once per name and reason.
func (d *TenantData) exclude(name, reason string) {
	e := excludedMember{name, reason}
	if !slices.Contains(d.excluded, e) {
		d.excluded = append(d.excluded, e)
	}
}

// excludedMember is a team member, or one identity of a member, left out of a
// tenant and why.
type excludedMember struct {
	name, reason string
}

// backendID is the id Waldur records for the resource.
func (d *TenantData) backendID() string {
	if d.Rancher != nil {
		return d.Rancher.ProjectID
	}
	return d.Name
}

// WithItem returns a copy of d with Item set, for forEach templates.
func (d *TenantData) WithItem(item any) any {
	c := *d
	c.Item = item
	return &c
}

// OfferingData names the offering.
type OfferingData struct {
	Name        string
	UUID        string
	BackendType string
}

// ResourceData is the Waldur resource.
type ResourceData struct {
	// UUID is the 32-hex form; UUIDDashed the 8-4-4-4-12 form.
	UUID       string
	UUIDDashed string
	Name       string
	Slug       string
	State      string
	BackendID  string
	// Status is active, paused or downscaled.
	Status string
	// Limits are the effective limits by component key (after an executing Update
	// order and the status rules).
	Limits map[string]float64
}

// ScopeData is a Waldur project or organisation.
type ScopeData struct {
	UUID        string
	UUIDDashed  string
	Name        string
	Slug        string
	Description string
}

// RoleLists holds one list per namespace role.
type RoleLists struct {
	Admin     []string
	ReadWrite []string
	ReadOnly  []string
}

// Member is one team member with an offering username.
type Member struct {
	// Username is the offering username (the key Keycloak users are looked up by).
	Username string `json:"username"`
	// Email of the user, when known.
	Email string `json:"email,omitempty"`
	// WaldurRole is the project role, normalised (admin, manager, member, …).
	WaldurRole string `json:"waldurRole"`
	// Role is what the profile maps the Waldur role to: a namespace role
	// (admin/readwrite/readonly) or a ClusterRole (okd) or role template (rancher).
	Role string `json:"role"`
}

// RoleBinding is one RoleBinding to render.
type RoleBinding struct {
	Name        string    `json:"name"`
	ClusterRole string    `json:"clusterRole"`
	Subjects    []Subject `json:"subjects"`
}

// Subject is a RoleBinding subject.
type Subject struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// K8sUTData holds the k8s-ut-namespace values.
type K8sUTData struct {
	CRNamespace string
	// Owner has orgID and projectID in dashed form; nil when both are unknown.
	Owner map[string]string
}

// RancherData holds the rancher values.
type RancherData struct {
	ClusterID string
	// ProjectName is the Project's metadata.name; ProjectID is <cluster>:<project>.
	ProjectName string
	ProjectID   string
	DisplayName string
	Description string
	// ProjectAnnotations go on the Project as the site agent sets them:
	// waldur/organization (the customer slug), waldur/managed ("true") and
	// waldur/project_slug.
	ProjectAnnotations map[string]string
	// ProjectQuota is {limit: {...}} for the Project's resourceQuota and
	// namespaceDefaultResourceQuota; nil when no component maps to a project quota field.
	ProjectQuota map[string]any
	// RoleTemplate is bound to GroupPrincipal (keycloakoidc_group://<child group>) by
	// the binding BindingName in BindingNamespace; GroupPrincipal is empty when Keycloak is off.
	RoleTemplate     string
	GroupPrincipal   string
	BindingName      string
	BindingNamespace string
	// ParentGroup and ChildGroup are the Keycloak group names.
	ParentGroup string
	ChildGroup  string
}

// OKDData holds the okd values.
type OKDData struct {
	DisplayName  string
	Description  string
	Organization string
	Parent       string
}

// LimitRangeData is the default requests and limits given to containers that set
// none, so that a Pod without resources is admitted under a quota on cpu or
// memory (see defaultLimitRange).
type LimitRangeData struct {
	// Default are the default limits, DefaultRequest the default requests, by
	// resource (cpu, memory).
	Default        map[string]string
	DefaultRequest map[string]string
}
