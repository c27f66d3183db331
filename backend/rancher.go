package backend

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/templates"
)

// Rancher renders a Rancher Project and its binding on the management
// cluster and the project's namespace on the downstream cluster.
const Rancher = "rancher"

func init() {
	Register(Backend{
		Type:      Rancher,
		Order:     40,
		Templates: templates.DefaultFS,
		// Objects go downstream unless their template says management; Git
		// and Flux publish the management directory first.
		DefaultTarget:  TargetDownstream,
		Targets:        []string{TargetManagement, TargetDownstream},
		KeycloakGroups: ClusterGroups,
		Kinds: map[string][]schema.GroupVersionKind{
			TargetManagement: {
				{Group: "management.cattle.io", Version: "v3", Kind: "Project"},
				{Group: "management.cattle.io", Version: "v3", Kind: "ProjectRoleTemplateBinding"},
			},
			TargetDownstream: CoreKinds(false),
		},
		// Review: the Project's limit and the default limit of its namespaces
		// (management), the namespace's share of the project quota, which
		// Rancher reads from an annotation, and the ResourceQuota (downstream).
		Review: map[schema.GroupKind]Review{
			{Group: "management.cattle.io", Kind: "Project"}: {Quotas: []QuotaMap{
				{Path: []string{"spec", "resourceQuota", "limit"}, Label: "Project resourceQuota.limit."},
				{Path: []string{"spec", "namespaceDefaultResourceQuota", "limit"}, Label: "Project namespaceDefaultResourceQuota.limit."},
			}},
			KindNamespace.GroupKind(): {Quotas: []QuotaMap{
				{Annotation: "field.cattle.io/resourceQuota", Path: []string{"limit"}, Label: "field.cattle.io/resourceQuota limit."},
			}},
			KindResourceQuota.GroupKind(): CoreReview(false)[KindResourceQuota.GroupKind()],
		},
		CRDs: map[schema.GroupKind]string{
			{Group: "management.cattle.io", Kind: "Project"}:                    "projects.management.cattle.io (Rancher; apply it to the management cluster)",
			{Group: "management.cattle.io", Kind: "ProjectRoleTemplateBinding"}: "projectroletemplatebindings.management.cattle.io (Rancher; apply it to the management cluster)",
		},
		// Capacity: a tenant counts once, from its downstream ResourceQuota.
		Capacity: Capacity{Target: TargetDownstream},
	})
}
