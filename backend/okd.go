package backend

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/templates"
)

// OKD renders OpenShift projects as namespaces with a quota and RoleBindings.
const OKD = "okd"

func init() {
	Register(Backend{
		Type:          OKD,
		Order:         30,
		Templates:     templates.DefaultFS,
		DefaultTarget: TargetCluster,
		Targets:       []string{TargetCluster},
		Kinds:         map[string][]schema.GroupVersionKind{TargetCluster: CoreKinds(true)},
		Review:        CoreReview(true),
		Access:        CoreAccess(),
		// Capacity: the ResourceQuota's requests count, not its doubled limits.
		Capacity: Capacity{Target: TargetCluster},
	})
}
