package render

import (
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
)

// A quota hold keeps the held keys at their kept value in every profile's
// output (the namespace profile's ResourceQuota, the k8s-ut ManagedNamespace,
// Rancher's project and namespace quota), renders the other keys of the
// Update order, and holds the Update order with the hold's reason instead of
// fulfilling it.
func TestQuotaHoldKeepsValueAndHoldsOrder(t *testing.T) {
	for _, tc := range []struct {
		backend, settings string
		// file is the file that carries the quota; kept and cut are what it
		// holds with and without the hold.
		file, kept, cut string
	}{
		{"namespace", "", "resourcequota-waldur-quota.yaml", "requests.storage: 100Gi", "requests.storage: 10Gi"},
		{"k8s-ut-namespace", "", "managednamespace-waldur-shrinking.yaml", "storage: 100Gi", "storage: 10Gi"},
		{"rancher", "      cluster_id: c-m-1\n", "project-", "requestsStorage: 100Gi", "requestsStorage: 10240Mi"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			cfg := mustConfig(t, tc.backend, tc.settings, "")
			r := resource(1, "shrinking", limits("cpu", 4, "ram", 8, "storage", 100))
			upd := waldur.Order{UUID: "d0000000000040008000000000000001", Type: waldur.OrderUpdate, State: waldur.OrderExecuting,
				MarketplaceResourceUUID: r.UUID, Limits: limits("cpu", 2, "ram", 8, "storage", 10)}
			st := state([]waldur.Resource{r}, []waldur.Order{upd}, member("alice", "PROJECT.ADMIN"))

			free := mustRender(t, cfg, st)
			assertQuotaFile(t, free, tc.file, tc.cut)
			if len(free.Tenants[0].Orders) != 1 || len(free.Held) != 0 {
				t.Fatalf("without a hold the update order is fulfilled: orders %v held %v", free.Tenants[0].Orders, free.Held)
			}
			keep := free.Tenants[0].Quota
			var storageKey string
			for k := range keep {
				if strings.HasSuffix(k, "storage") {
					storageKey = k
				}
			}
			if storageKey == "" {
				t.Fatalf("no storage key in the tenant's quota %v", keep)
			}

			tpls, err := LoadTemplates(cfg)
			if err != nil {
				t.Fatal(err)
			}
			held, err := New(cfg, tpls).Holding(QuotaHolds{r.UUID: {Keep: map[string]string{storageKey: "100Gi", "not.rendered": "1"}, Reason: "waiting for usage to drop below 10Gi"}}).Render(st)
			if err != nil {
				t.Fatal(err)
			}
			assertQuotaFile(t, held, tc.file, tc.kept)
			tn := held.Tenants[0]
			if tn.Quota[storageKey] != "100Gi" || tn.Quota["not.rendered"] != "" {
				t.Errorf("held quota %v", tn.Quota)
			}
			if len(tn.Orders) != 0 || held.Held[upd.UUID] != "waiting for usage to drop below 10Gi" {
				t.Errorf("the update order must be held: orders %v held %v", tn.Orders, held.Held)
			}
			// The cpu cut, not held, is rendered.
			for k, v := range tn.Quota {
				if strings.HasSuffix(k, "cpu") && v != free.Tenants[0].Quota[k] {
					t.Errorf("%s: held render %q, free render %q", k, v, free.Tenants[0].Quota[k])
				}
			}
		})
	}
}

// assertQuotaFile checks that a file whose name starts with prefix contains want.
func assertQuotaFile(t *testing.T, res *Result, prefix, want string) {
	t.Helper()
	for _, tn := range res.Tenants {
		for _, f := range tn.Files {
			if strings.HasPrefix(f.Name, prefix) {
				if !strings.Contains(string(f.Data), want) {
					t.Errorf("%s/%s lacks %q:\n%s", tn.Dir, f.Name, want, f.Data)
				}
				return
			}
		}
	}
	t.Errorf("no file %s* in the render", prefix)
}
