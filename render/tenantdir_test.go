package render

import (
	"path"
	"strings"
	"testing"
)

// TestTenantDir: the tenant directory of a path is its first three elements
// joined and cleaned, as splitting and joining gives them, for clean and
// unclean paths alike.
func TestTenantDir(t *testing.T) {
	for _, p := range []string{
		"off/target/tenant/kustomization.yaml", "off/target/tenant/", "off/target/tenant", "off/target",
		".waldur-gitops", "/off/target/tenant/f", "off//target/tenant/f", "./off/target/tenant/f",
		"off/./target/tenant/f", "off/target/tenant/sub/f", "",
		// The tool's own directories: a Flux shard's part is as deep as a tenant.
		"_flux/off.cluster.00/p0/kustomization.yaml", "_flux/off.cluster.00/kustomization.yaml",
	} {
		t.Run(p, func(t *testing.T) {
			var want string
			parts := strings.SplitN(p, "/", tenantDepth+1)
			wantOK := len(parts) > tenantDepth && !strings.HasPrefix(p, "_")
			if wantOK {
				want = path.Join(parts[:tenantDepth]...)
			}
			got, ok := tenantDir(p)
			if got != want || ok != wantOK {
				t.Errorf("tenantDir(%q) = %q, %v; want %q, %v", p, got, ok, want, wantOK)
			}
		})
	}
}
