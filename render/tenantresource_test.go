package render

import (
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
)

// The resource of a tenant directory follows its kustomization's content,
// remembered or not.
func TestTenantResourceFollowsTheContent(t *testing.T) {
	k := func(id string) []byte {
		return []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  annotations:\n    waldur.io/resource-uuid: " + id + "\n")
	}
	dir := "offering/cluster/tenant-cache-test"
	for _, tc := range []struct {
		name string
		data []byte
		want waldur.UUID
	}{
		{"first", k("aaaa0000000040008000000000000001"), "aaaa0000000040008000000000000001"},
		{"same again", k("aaaa0000000040008000000000000001"), "aaaa0000000040008000000000000001"},
		{"changed", k("bbbb0000000040008000000000000002"), "bbbb0000000040008000000000000002"},
		{"not YAML", []byte("{"), ""},
		{"back", k("aaaa0000000040008000000000000001"), "aaaa0000000040008000000000000001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := Tree{dir + "/" + KustomizationFile: tc.data}
			if got := tenantResource(tree, dir); got != tc.want {
				t.Errorf("tenantResource = %q, want %q", got, tc.want)
			}
		})
	}
}
