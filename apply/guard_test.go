package apply_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
)

// TestGuardsInDirectMode: on a real API server, an offering whose tenants
// would all go is refused although they are a small share of the site, and
// every team answering empty is refused by the access guard; --allow-mass-prune
// (Allow) lets both through.
func TestGuardsInDirectMode(t *testing.T) {
	c := startCluster(t, []string{crdManagedNamespace, crdRancher})
	cfg, st := loadExample(t)
	res := renderState(t, cfg.Config, st)
	c.prepareNamespaces(res, backingNamespaces...)
	ctx := context.Background()
	opts := apply.Options{Kubeconfig: c.KubeconfigPath(kubetest.Admin), Guard: guard.Options{MaxFraction: 0.2, MinCount: 5}, NamespaceWait: 1}
	if _, err := apply.Apply(ctx, cfg.Config, res, opts); err != nil && !strings.Contains(err.Error(), "does not exist") {
		t.Fatal(err)
	}

	t.Run("one offering emptied", func(t *testing.T) {
		_, st := loadExample(t)
		for i := range st.Offerings {
			if st.Offerings[i].Name == "OKD projects" {
				st.Offerings[i].Resources = nil
			}
		}
		_, err := apply.Apply(ctx, cfg.Config, renderState(t, cfg.Config, st), opts)
		var ge *guard.Error
		if !errors.As(err, &ge) || !strings.HasPrefix(ge.Scope, "offering OKD projects") {
			t.Fatalf("want a refusal in offering OKD projects, got %v", err)
		}
	})
	t.Run("every team empty", func(t *testing.T) {
		_, st := loadExample(t)
		for i := range st.Offerings {
			for p := range st.Offerings[i].Teams {
				st.Offerings[i].Teams[p] = nil
			}
		}
		_, err := apply.Apply(ctx, cfg.Config, renderState(t, cfg.Config, st), opts)
		var ae *guard.AccessError
		if !errors.As(err, &ae) || ae.Removed == 0 {
			t.Fatalf("want the access guard, got %v", err)
		}
		allowed := opts
		allowed.Guard.Allow = true
		if _, err := apply.Apply(ctx, cfg.Config, renderState(t, cfg.Config, st), allowed); errors.As(err, &ae) {
			t.Errorf("with Allow: %v", err)
		}
	})
}
