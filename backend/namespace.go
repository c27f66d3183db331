package backend

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/templates"
)

// Namespace renders plain Kubernetes: a Namespace, its ResourceQuota and
// LimitRange, and RoleBindings.
const Namespace = "namespace"

func init() {
	Register(Backend{
		Type:           Namespace,
		Order:          20,
		Templates:      templates.DefaultFS,
		DefaultTarget:  TargetCluster,
		Targets:        []string{TargetCluster},
		KeycloakGroups: NamespaceGroups,
		Kinds:          map[string][]schema.GroupVersionKind{TargetCluster: CoreKinds(true)},
		Review:         CoreReview(true),
		Access:         CoreAccess(),
		// Capacity: the tenant's ResourceQuota, as rendered.
		Capacity: Capacity{Target: TargetCluster},
	})
}
