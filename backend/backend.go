// Package backend is the registry of backend types: one Backend value per
// type says everything the packages above it need to know that differs
// between backends — the settings and profile it uses, its default
// templates, its targets (Git directories and Flux shards, clusters), the
// kinds it renders, what review watches in them and whom they give access,
// its Keycloak groups and the diagnose rows it adds. config, render, apply,
// gitsync (for the engine's Git publisher), review and diagnose read the
// registry instead of switching on the type name; TestNoTypeNameComparisons
// keeps it so.
//
// The package sits low in the import tree (it imports only templates, for
// the embedded default templates, and apimachinery's schema), so that config
// can validate a backend_type against it without importing render.
package backend

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Output targets (the directory level between offering and tenant).
const (
	TargetCluster    = "cluster"
	TargetManagement = "management"
	TargetDownstream = "downstream"
)

// Backend is the registration of one backend type.
type Backend struct {
	// Type is the backend_type of the offerings it renders.
	Type string
	// Profile names the built-in settings and render profile the backend uses:
	// its backend_settings are decoded and checked as that profile's, and its
	// tenants are filled in by that profile (config/builtins.go and
	// render/profiles.go bind each built-in profile's name to its settings and
	// its render profile). A built-in names itself, and so does a backend
	// that brings its own (Settings and Render).
	Profile string
	// Settings, for a backend with settings of its own, returns them with
	// their defaults, for backend_settings to be decoded into: a pointer to a
	// struct that embeds config.CommonSettings inline (which gives it the
	// method Common() *config.CommonSettings). nil: Profile's settings.
	Settings func() any
	// CheckSettings checks and completes the decoded Settings, reporting each
	// problem at its key (relative to backend_settings).
	CheckSettings func(settings any, problem func(key, msg string))
	// Render, for a backend with settings of its own, is its render profile:
	// a render.Profile (it completes each resource's template data).
	Render any
	// Order places the type in Types (and in error messages); lower first.
	Order int
	// Templates holds the default templates in the directory named Type.
	Templates fs.FS
	// DefaultTarget is the target of an object whose template names none.
	DefaultTarget string
	// Targets are the Git directories (and Flux shards) of an offering, in
	// the order they are published; the first one's shard is the one
	// diagnose tries the registry with.
	Targets []string
	// Kinds are the kinds the default templates render, by target: apply
	// inventories them so that the last object of a kind is pruned too.
	Kinds map[string][]schema.GroupVersionKind
	// CRDs name the CustomResourceDefinition of each custom kind it renders,
	// for apply's hint when a cluster serves no such kind.
	CRDs map[schema.GroupKind]string
	// OperatorNamespaces says an operator makes the namespace each tenant's
	// object names, so that namespace is claimed like a rendered object.
	OperatorNamespaces bool
	// LiveQuotaKeys maps a quota key to the key the operator writes into the
	// live ResourceQuota, for the keys it renames (nil: keys are kept).
	LiveQuotaKeys map[string]string
	// Review says, per kind it renders, where an object keeps what a change
	// can take away (quotas, members), for review to route a change that
	// lowers or removes one to a person (nil: nothing of the kind is watched).
	Review map[schema.GroupKind]Review
	// Access says, per kind, where an object names whom it gives access to
	// the tenant, for the removal guard's count of the (subject, tenant)
	// pairs a prune would leave without any access (nil: none).
	Access map[schema.GroupKind]Access
	// KeycloakGroups says which Keycloak groups the profile's tenants get, and
	// so which keycloak_groups keys apply to it (read from the registration
	// Profile names).
	KeycloakGroups Groups
	// Diagnose returns the rows diagnose adds for an offering of this type,
	// beyond the checks every backend gets (nil: none).
	Diagnose func(o Offering) []Row
	// Capacity says how the backend's tenants count toward the capacity of
	// their pool (package capacity).
	Capacity Capacity
}

// Capacity says how a tenant counts toward its pool's committed total: the
// quota of one of its targets, once per resource, with its keys read as
// ResourceQuota keys.
type Capacity struct {
	// Target is the target whose tenant's quota counts and whose cluster is
	// the pool's by default ("": DefaultTarget).
	Target string
	// Keys maps a rendered quota key to the ResourceQuota key it stands for
	// (a ManagedNamespace's cpu is the operator's limits.cpu); keys not in
	// it are ResourceQuota keys already.
	Keys map[string]string
}

// CapacityOf returns how a type's tenants count: its registration's
// Capacity with Target defaulted, or the cluster target for a type nobody
// registered.
func CapacityOf(typ string) Capacity {
	b := Lookup(typ)
	if b == nil {
		return Capacity{Target: TargetCluster}
	}
	c := b.Capacity
	if c.Target == "" {
		c.Target = b.DefaultTarget
	}
	return c
}

// Review says where an object of a kind keeps what a change can take away:
// review calls a change risky that lowers one of its quotas or drops a name
// from one of its member or subject lists.
type Review struct {
	// Quotas are the maps of quantities a change must not lower.
	Quotas []QuotaMap
	// Members are the lists of member names, each by its path of fields.
	Members [][]string
	// Subjects are the lists of RBAC subjects (named by kind and name), each
	// by its path of fields.
	Subjects [][]string
}

// Access says where an object of a kind names whom it gives access.
type Access struct {
	// Users are the lists of user names, each by its path of fields.
	Users [][]string
	// Subjects are the lists of RBAC subjects, each by its path of fields: a
	// User subject counts by its name, another as kind:name.
	Subjects [][]string
}

// QuotaMap is a map of quantities in an object: at Path, or, when
// Annotation is set, at Path in the JSON of that annotation. Label precedes
// its keys in review's reasons.
type QuotaMap struct {
	Path       []string
	Annotation string
	Label      string
}

// Groups says which Keycloak groups a backend's tenants get.
type Groups int

const (
	// NoGroups: none of the backend's own; keycloak_groups keys have no
	// effect on it.
	NoGroups Groups = iota
	// NamespaceGroups: a group per namespace role of each tenant, named by
	// keycloak_groups.namespace.
	NamespaceGroups
	// ClusterGroups: a cluster group and, under it, a group per Waldur
	// project, named by keycloak_groups.parent and child, whose patterns may
	// use the cluster variables ({cluster_id}, {cluster_id_short},
	// {cluster_uuid} from keycloak_groups.cluster_uuid).
	ClusterGroups
)

// Offering is what diagnose tells a backend's rows about an offering.
type Offering struct {
	// Name is the offering's config name.
	Name string
	// Kubeconfig and KubeconfigContext name its cluster ("": client-go's
	// default rules; --kubeconfig replaces them).
	Kubeconfig, KubeconfigContext string
}

// Row is one check diagnose runs for a backend.
type Row struct {
	// Name says what is checked; Target against what.
	Name, Target string
	// Run performs the check: the detail is shown on success, the error on failure.
	Run func(ctx context.Context) (detail string, err error)
}

var (
	mu       sync.RWMutex
	registry = map[string]*Backend{}
	ordered  []*Backend // registry's values in Types order, rebuilt on every change
)

// Register adds a backend. It panics on an empty or already registered
// type, on a Backend whose DefaultTarget is not one of its Targets, and on
// Settings without Render or the reverse: these are programming errors found
// by the first test.
func Register(b Backend) {
	mu.Lock()
	defer mu.Unlock()
	switch {
	case b.Type == "":
		panic("backend: Register with an empty type")
	case registry[b.Type] != nil:
		panic(fmt.Sprintf("backend: %q registered twice", b.Type))
	case !slices.Contains(b.Targets, b.DefaultTarget):
		panic(fmt.Sprintf("backend: %q: default target %q is not one of %v", b.Type, b.DefaultTarget, b.Targets))
	case (b.Settings == nil) != (b.Render == nil):
		panic(fmt.Sprintf("backend: %q: settings of its own go with a render profile of its own", b.Type))
	}
	if b.Profile == "" {
		b.Profile = b.Type
	}
	registry[b.Type] = &b
	reorder()
}

// Unregister removes a backend; tests use it to remove what they registered.
func Unregister(typ string) {
	mu.Lock()
	defer mu.Unlock()
	delete(registry, typ)
	reorder()
}

// reorder rebuilds ordered; mu is held.
func reorder() {
	ordered = ordered[:0:0]
	for _, b := range registry {
		ordered = append(ordered, b)
	}
	sort.Slice(ordered, func(i, j int) bool {
		if ordered[i].Order != ordered[j].Order {
			return ordered[i].Order < ordered[j].Order
		}
		return ordered[i].Type < ordered[j].Type
	})
}

// Lookup returns the backend of a type, or nil when none is registered.
func Lookup(typ string) *Backend {
	mu.RLock()
	defer mu.RUnlock()
	return registry[typ]
}

// All returns every registered backend, in Types order.
func All() []*Backend {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(ordered)
}

// Types returns the registered types, in order.
func Types() []string {
	var out []string
	for _, b := range All() {
		out = append(out, b.Type)
	}
	return out
}

// TargetsOf returns the targets of a type, or [TargetCluster] for a type
// nobody registered (config has refused it already).
func TargetsOf(typ string) []string {
	if b := Lookup(typ); b != nil {
		return slices.Clone(b.Targets)
	}
	return []string{TargetCluster}
}

// CRDOf returns the CustomResourceDefinition a registered backend names for
// a kind, "" when none does.
func CRDOf(gk schema.GroupKind) string {
	for _, b := range All() {
		if crd, ok := b.CRDs[gk]; ok {
			return crd
		}
	}
	return ""
}

// ReviewOf returns what the first registered backend (in Types order) that
// watches a kind says about it, nil when none does.
func ReviewOf(gk schema.GroupKind) *Review {
	mu.RLock()
	defer mu.RUnlock()
	for _, b := range ordered {
		if r, ok := b.Review[gk]; ok {
			return &r
		}
	}
	return nil
}

// AccessOf returns what the first registered backend (in Types order) that
// describes the access a kind gives says about it, nil when none does.
func AccessOf(gk schema.GroupKind) *Access {
	mu.RLock()
	defer mu.RUnlock()
	for _, b := range ordered {
		if a, ok := b.Access[gk]; ok {
			return &a
		}
	}
	return nil
}

// DefaultTargetOf returns the default target of a type, or TargetCluster.
func DefaultTargetOf(typ string) string {
	if b := Lookup(typ); b != nil {
		return b.DefaultTarget
	}
	return TargetCluster
}
