package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestOneOfferingFailingKeepsItsTenants: an offering whose Waldur answers
// 401 keeps its directory in Git byte for byte (not pruned, not counted by
// the deletion guard), while the other offerings commit and advance their
// orders; the run exits 3 and the report names the failed offering.
func TestOneOfferingFailingKeepsItsTenants(t *testing.T) {
	wsrv, waldurCfg := serveExample(t)
	gsrv, repo, url := gitRepo(t)
	cfg := withGit(t, waldurCfg, gsrv, url)
	if code, _, stderr := run(t, "sync", "--config", cfg); code != ExitOK {
		t.Fatalf("first sync: exit %d\n%s", code, stderr)
	}
	before := gittest.Files(t, repo, "main")

	// Waldur changes a resource in the healthy UT namespaces offering and one
	// in the OKD offering, whose token is then refused.
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	var okdDir string
	var fresh waldur.UUID
	for _, o := range snap.Offerings {
		r := o.Resources[0]
		r.Limits = waldur.Limits{"cpu": "7", "ram": "7168", "storage": "71680"}
		wsrv.AddResource(r)
		switch o.Name {
		case "OKD projects":
			okdDir = "okd-projects/"
		case "UT namespaces":
			// And a new resource with a Create order to approve and finish.
			res := wsrv.AddResource(waldur.Resource{OfferingUUID: o.OfferingUUID, Slug: "fresh-analysis", Name: "Fresh analysis",
				State: waldur.ResourceCreating, ProjectUUID: r.ProjectUUID, ProjectSlug: r.ProjectSlug, ProjectName: r.ProjectName,
				CustomerUUID: r.CustomerUUID, CustomerSlug: r.CustomerSlug, CustomerName: r.CustomerName, Limits: waldur.Limits{"cpu": "1"}})
			fresh = wsrv.AddOrder(o.OfferingUUID, waldur.Order{Type: waldur.OrderCreate, MarketplaceResourceUUID: res})
		}
	}
	text := strings.Replace(string(mustRead(t, cfg)), "  - name: OKD projects\n", "  - name: OKD projects\n    waldur_api_token: refused-token-0123456789abcdef0123456789\n", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := run(t, "sync", "--config", cfg, "--output", "json")
	if code != ExitPartial || !strings.Contains(stderr, "offering(s) not read") {
		t.Fatalf("exit %d, want %d naming the offering\n%s", code, ExitPartial, stderr)
	}
	rep := readReport(t, []byte(stdout))
	var named bool
	for _, e := range rep.Changes {
		named = named || (e.Stage == "waldur" && e.Kind == "Offering" && e.Subject == "OKD projects" && strings.Contains(e.Reason, "401"))
	}
	if !named || rep.Commit == "" {
		t.Errorf("report: offering named %v, commit %q", named, rep.Commit)
	}
	after := gittest.Files(t, repo, "main")
	changed := 0
	for path, data := range before {
		if strings.HasPrefix(path, "waldur/"+okdDir) {
			if after[path] != data {
				t.Errorf("%s changed although its offering was not read", path)
			}
			continue
		}
		if after[path] != data {
			changed++
		}
	}
	if changed == 0 {
		t.Error("the healthy offerings' changes were not committed")
	}
	for path := range after {
		if _, ok := before[path]; !ok && strings.HasPrefix(path, "waldur/"+okdDir) {
			t.Errorf("%s appeared although its offering was not read", path)
		}
	}
	if st := orderState(t, wsrv, string(fresh)); st != waldur.OrderDone {
		t.Errorf("the healthy offering's new order is %s, want done", st)
	}
}
