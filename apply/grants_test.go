package apply

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/backend"
)

// TestGrantsReadRegistrations: whom an object gives access is read where the
// registration of its kind says — RBAC subjects, a ManagedNamespace's user
// lists (not its group lists), and a kind only a test backend describes.
func TestGrantsReadRegistrations(t *testing.T) {
	backend.Register(backend.Backend{
		Type: "grants-test", Order: 95, DefaultTarget: backend.TargetCluster, Targets: []string{backend.TargetCluster},
		Access: map[schema.GroupKind]backend.Access{{Group: "example.org", Kind: "Team"}: {Users: [][]string{{"spec", "members"}}}},
	})
	t.Cleanup(func() { backend.Unregister("grants-test") })
	subjects := map[string]any{"subjects": []any{
		map[string]any{"kind": "User", "name": "ann"},
		map[string]any{"kind": "Group", "name": "ns_a_admin"},
	}}
	for _, tc := range []struct {
		name string
		gk   schema.GroupKind
		obj  map[string]any
		want []string
	}{
		{"role binding", schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}, subjects, []string{"ann", "Group:ns_a_admin"}},
		{"cluster role binding", schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}, subjects, []string{"ann", "Group:ns_a_admin"}},
		{"managed namespace", schema.GroupKind{Group: "provisioning.hpc.ut.ee", Kind: "ManagedNamespace"},
			map[string]any{"spec": map[string]any{"adminUsers": []any{"ann"}, "roUsers": []any{"bob"}, "adminGroups": []any{"ns_a_admin"}}}, []string{"ann", "bob"}},
		{"registered kind", schema.GroupKind{Group: "example.org", Kind: "Team"},
			map[string]any{"spec": map[string]any{"members": []any{"cem"}}}, []string{"cem"}},
		{"a kind that grants nothing", schema.GroupKind{Kind: "ConfigMap"}, map[string]any{"data": map[string]any{"a": "b"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := grants(tc.gk, tc.obj); !slices.Equal(got, tc.want) {
				t.Errorf("grants %v, want %v", got, tc.want)
			}
		})
	}
}
