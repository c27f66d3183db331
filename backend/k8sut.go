package backend

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/templates"
)

// K8sUTNamespace renders ManagedNamespace objects for the UT operator, which
// makes each tenant's namespace, quota and bindings.
const K8sUTNamespace = "k8s-ut-namespace"

// utQuotaKeys are the operator's ResourceQuota keys for the ManagedNamespace
// quota keys.
var utQuotaKeys = map[string]string{
	"cpu": "limits.cpu", "memory": "limits.memory", "storage": "requests.storage", "gpu": "requests.nvidia.com/gpu",
}

func init() {
	Register(Backend{
		Type:           K8sUTNamespace,
		Order:          10,
		Templates:      templates.DefaultFS,
		DefaultTarget:  TargetCluster,
		Targets:        []string{TargetCluster},
		KeycloakGroups: NamespaceGroups,
		Kinds: map[string][]schema.GroupVersionKind{
			TargetCluster: {{Group: "provisioning.hpc.ut.ee", Version: "v1", Kind: "ManagedNamespace"}},
		},
		CRDs: map[schema.GroupKind]string{
			{Group: "provisioning.hpc.ut.ee", Kind: "ManagedNamespace"}: "managednamespaces.provisioning.hpc.ut.ee (the UT managed-namespace operator)",
		},
		// Review: the quota and every user and group list of a ManagedNamespace.
		Review: map[schema.GroupKind]Review{
			{Group: "provisioning.hpc.ut.ee", Kind: "ManagedNamespace"}: {
				Quotas: []QuotaMap{{Path: []string{"spec", "quota"}}},
				Members: [][]string{
					{"spec", "adminUsers"}, {"spec", "rwUsers"}, {"spec", "roUsers"},
					{"spec", "adminGroups"}, {"spec", "rwGroups"}, {"spec", "roGroups"},
				},
			},
		},
		// Access: the user lists of a ManagedNamespace.
		Access: map[schema.GroupKind]Access{
			{Group: "provisioning.hpc.ut.ee", Kind: "ManagedNamespace"}: {Users: [][]string{{"spec", "adminUsers"}, {"spec", "rwUsers"}, {"spec", "roUsers"}}},
		},
		OperatorNamespaces: true,
		// The operator's ResourceQuota keys for the ManagedNamespace quota keys.
		LiveQuotaKeys: utQuotaKeys,
		// Capacity: the ManagedNamespace quota, read as the operator's keys.
		Capacity: Capacity{Target: TargetCluster, Keys: utQuotaKeys},
	})
}
