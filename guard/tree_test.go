package guard

import (
	"slices"
	"testing"

	"github.com/waldur/waldur-gitops/render"
)

const binding = `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: waldur-ana
  namespace: ns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: edit
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: ana
- kind: ServiceAccount
  name: bot
  namespace: ns
`

const managedNamespace = `apiVersion: example.org/v1
kind: ManagedNamespace
metadata:
  name: waldur-x
spec:
  adminGroups:
  - ns_x_admin
  adminUsers:
  - "mira"
  roUsers: []
  rwUsers:
  - ana
  - tomas
`

// TestSubjects: whom a rendered file gives access, read from the YAML the
// encoder writes; a user is the same subject in a RoleBinding and in a
// ManagedNamespace.
func TestSubjects(t *testing.T) {
	for _, tt := range []struct {
		name, path, data string
		want             []string
	}{
		{"role binding", "o/c/t/rolebinding-waldur-ana.yaml", binding, []string{"ana", "ServiceAccount:bot"}},
		{"managed namespace", "o/c/t/managednamespace-x.yaml", managedNamespace, []string{"mira", "ana", "tomas"}},
		{"other file", "o/c/t/namespace.yaml", binding, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := subjects(tt.path, []byte(tt.data)); !slices.Equal(got, tt.want) {
				t.Errorf("subjects() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTreeGrantsRoleMove: a subject whose binding moves from one role to
// another in the same tenant loses nothing; one whose last binding goes
// loses its pair.
func TestTreeGrantsRoleMove(t *testing.T) {
	before := render.Tree{
		"o/c/t/rolebinding-waldur-ana.yaml": []byte(binding),
		"o/c/t/managednamespace-x.yaml":     []byte(managedNamespace),
	}
	after := render.Tree{
		"o/c/t/rolebinding-waldur-ana-admin.yaml": []byte(binding),
		"o/c/t/managednamespace-x.yaml":           []byte("spec:\n  adminUsers:\n  - ana\n  - mira\n"),
	}
	lost := Lost(Access, treeGrants(before, nil), treeGrants(after, nil))
	if len(lost) != 1 || lost[0].Subject != "tomas" || lost[0].Tenant != "o/c/t" {
		t.Errorf("lost %+v, want tomas in o/c/t", lost)
	}
}
