package review

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/render"
)

// TestClassifyReadsRegistrations: what a change takes away is looked for
// where the registration of the backend rendering the kind says — the
// built-in ManagedNamespace's quota and user lists, and a kind only a
// test backend registers.
func TestClassifyReadsRegistrations(t *testing.T) {
	backend.Register(backend.Backend{
		Type: "allowance-test", Order: 90, DefaultTarget: backend.TargetCluster, Targets: []string{backend.TargetCluster},
		Review: map[schema.GroupKind]backend.Review{{Group: "example.org", Kind: "Allowance"}: {
			Quotas:  []backend.QuotaMap{{Path: []string{"spec", "limits"}, Label: "Allowance "}},
			Members: [][]string{{"spec", "owners"}},
		}},
	})
	t.Cleanup(func() { backend.Unregister("allowance-test") })
	mn := func(cpu, users string) render.Tree {
		return render.Tree{dir + "/managednamespace-a.yaml": []byte("apiVersion: provisioning.hpc.ut.ee/v1\nkind: ManagedNamespace\n" +
			"spec:\n  quota: {cpu: \"" + cpu + "\"}\n  rwUsers: [" + users + "]\n")}
	}
	allowance := func(api, cpu, owners string) render.Tree {
		return render.Tree{dir + "/allowance-a.yaml": []byte("apiVersion: " + api + "\nkind: Allowance\n" +
			"spec:\n  limits: {cpu: \"" + cpu + "\"}\n  owners: [" + owners + "]\n")}
	}
	for _, tc := range []struct {
		name       string
		prev, next render.Tree
		class      Class
		why        string
	}{
		{"managed namespace unchanged in substance", mn("2", "ann, bob"), mn("2000m", "bob, ann"), Additive, ""},
		{"managed namespace quota lowered, user removed", mn("2", "ann, bob"), mn("1", "ann"), Risky,
			"quota lowered: cpu 2 → 1; member removed: bob"},
		{"registered kind raised", allowance("example.org/v1", "2", "ann"), allowance("example.org/v1", "3", "ann, bob"), Additive, ""},
		{"registered kind lowered", allowance("example.org/v1", "2", "ann, bob"), allowance("example.org/v1", "1", "bob"), Risky,
			"quota lowered: Allowance cpu 2 → 1; member removed: ann"},
		{"same kind, other group", allowance("other.org/v1", "2", "ann"), allowance("other.org/v1", "1", ""), Additive, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, why := Classify(changeset.Entry{Kind: "Tenant", Subject: dir, Action: changeset.Update}, tc.prev, tc.next)
			if c != tc.class || why != tc.why {
				t.Errorf("%s %q, want %s %q", c, why, tc.class, tc.why)
			}
		})
	}
}
