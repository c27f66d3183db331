package diagnose_test

import (
	"fmt"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
)

// git.flux_reconcile asks, per layout, to patch the site's GitRepository
// and the shards' sources: their OCIRepositories, or their GitRepositories
// in the shard-branch layout.
func TestFluxReconcileAccess(t *testing.T) {
	base := config.Git{FluxShards: 4, FluxNamespace: "flux-system", FluxSourceName: "waldur-tenants", FluxSourceNamespace: "flux-system"}
	for _, tc := range []struct {
		name string
		mod  func(*config.Git)
		want []string
	}{
		{"git", func(*config.Git) {}, []string{"patch gitrepositories flux-system/waldur-tenants"}},
		{"oci", func(g *config.Git) { g.FluxOCIRepository = "registry.example.org/w" },
			[]string{"patch gitrepositories flux-system/waldur-tenants", "patch ocirepositories flux-system/"}},
		{"shard branches", func(g *config.Git) { g.FluxShardBranches = true },
			[]string{"patch gitrepositories flux-system/waldur-tenants", "patch gitrepositories flux-system/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := base
			tc.mod(&g)
			var got []string
			for _, a := range diagnose.FluxReconcileAccess(g) {
				got = append(got, fmt.Sprintf("%s %s %s/%s", a.Verb, a.Resource.Resource, a.Namespace, a.Name))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("access %v, want %v", got, tc.want)
			}
		})
	}
}
