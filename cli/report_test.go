package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/usage"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

const usageOffering = "0ff00000000040008000000000000010"

// usageCluster is a fake cluster: one namespace per resource with a
// requests.cpu usage that the test changes between runs.
type usageCluster struct {
	mu   sync.Mutex
	used map[string]string
	res  map[string]string
}

func (c *usageCluster) Namespaces(context.Context, string) ([]kube.Namespace, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kube.Namespace
	for ns, r := range c.res {
		out = append(out, kube.Namespace{Name: ns, Labels: map[string]string{"waldur.io/resource-uuid": r}})
	}
	return out, nil
}

func (c *usageCluster) Quotas(context.Context, string) ([]kube.Quota, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kube.Quota
	for ns, v := range c.used {
		out = append(out, kube.Quota{Namespace: ns, Name: "waldur-quota", Used: map[string]k8sresource.Quantity{"requests.cpu": k8sresource.MustParse(v)}})
	}
	return out, nil
}

// usageSetup serves one offering with one resource and writes its config;
// the cluster and the clock are the test's.
func usageSetup(t *testing.T) (*waldurtest.Server, string, waldur.UUID, *usageCluster, *time.Time) {
	t.Helper()
	srv := waldurtest.New(t)
	res := srv.AddResource(waldur.Resource{OfferingUUID: usageOffering, Slug: "alpha", Limits: waldur.Limits{"cpu": "4"}})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, `timezone: UTC
offerings:
- name: Plain
  waldur_api_url: `+srv.URL()+`
  waldur_offering_uuid: `+usageOffering+`
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
    cpu_hours: {accounting_type: usage, measured_from: requests.cpu}
`)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	cl := &usageCluster{used: map[string]string{"waldur-alpha": "2"}, res: map[string]string{"waldur-alpha": string(res)}}
	now := time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)
	oldOpen, oldNow, oldTune := openUsageCluster, reportNow, tuneWaldurClient
	tuneWaldurClient = func(o *waldur.ClientOptions) { o.RetryWaitMin, o.RetryWaitMax = time.Millisecond, 2*time.Millisecond }
	openUsageCluster = func(s kube.Source) (usage.Cluster, error) {
		if s.Path != "/etc/kube/test" {
			t.Errorf("cluster opened from %q, want the --kubeconfig path", s.Path)
		}
		return cl, nil
	}
	reportNow = func() time.Time { return now }
	t.Cleanup(func() { openUsageCluster, reportNow, tuneWaldurClient = oldOpen, oldNow, oldTune })
	return srv, cfg, res, cl, &now
}

func storedUsage(srv *waldurtest.Server, res waldur.UUID, typ string) string {
	for _, u := range srv.Usages(res) {
		if u.Type == typ {
			return string(u.Usage)
		}
	}
	return ""
}

// Usage accumulated over two report runs, end to end: allocations and
// measured core-hours posted, read back and continued.
func TestReportAccumulatesOverTwoRuns(t *testing.T) {
	srv, cfg, res, cl, now := usageSetup(t)
	code, stdout, stderr := run(t, "report", "--config", cfg, "--kubeconfig", "/etc/kube/test")
	if code != ExitOK {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "+ Usage plain/alpha cpu: allocation 4.00") || !strings.Contains(stdout, "+ Usage plain/alpha cpu_hours: 0.00") {
		t.Errorf("first run output:\n%s", stdout)
	}
	*now = now.Add(90 * time.Minute)
	cl.mu.Lock()
	cl.used["waldur-alpha"] = "3"
	cl.mu.Unlock()
	code, stdout, stderr = run(t, "report", "--config", cfg, "--kubeconfig", "/etc/kube/test", "--output", "json")
	if code != ExitOK {
		t.Fatalf("second run: exit %d\n%s", code, stderr)
	}
	var rep report.Run
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if rep.Command != "report" || rep.Counts["usage"]["update"] != 1 || rep.Counts["usage"]["unchanged"] != 1 || rep.Stages[len(rep.Stages)-1].Calls["usages.set"] != 1 {
		t.Errorf("report %+v", rep)
	}
	// The usage report shows up in Waldur as the site agent's report service.
	if rep.Stages[0].Name != "agent" || rep.Stages[0].Calls["agent_identities.register_service"] != 1 {
		t.Errorf("stages %+v", rep.Stages)
	}
	if got := storedUsage(srv, res, "cpu_hours"); got != "3.00" { // 2 cores for 1.5 h
		t.Errorf("cpu_hours %s", got)
	}
	if got := storedUsage(srv, res, "cpu"); got != "4.00" {
		t.Errorf("cpu %s", got)
	}
}

// A dry run posts nothing and exits 1 when it would post.
func TestReportDryRun(t *testing.T) {
	srv, cfg, res, _, _ := usageSetup(t)
	code, stdout, _ := run(t, "report", "--config", cfg, "--kubeconfig", "/etc/kube/test", "--dry-run")
	if code != ExitDiff || !strings.Contains(stdout, "would report for 2026-03-01") {
		t.Errorf("exit %d\n%s", code, stdout)
	}
	if len(srv.Usages(res)) != 0 {
		t.Error("the dry run posted usage")
	}
}

// Waldur down: a clear error, exit 4, nothing posted.
func TestReportWaldurDown(t *testing.T) {
	srv, cfg, res, _, _ := usageSetup(t)
	srv.InjectFault(waldurtest.Fault{Count: 1000, PathPrefix: "/api/", Status: http.StatusServiceUnavailable})
	code, _, stderr := run(t, "report", "--config", cfg, "--kubeconfig", "/etc/kube/test")
	if code != ExitWaldur || !strings.Contains(stderr, "offering Plain") || !strings.Contains(stderr, "503") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	srv.ClearFaults()
	if len(srv.Usages(res)) != 0 {
		t.Error("usage was posted while Waldur was down")
	}
}

// TestReportSnapshotDryRun checks that report --dry-run --snapshot plans,
// offline, the same usage reports as a dry run against an API serving the
// same state, that it never calls Waldur, and that --snapshot without
// --dry-run, or with a snapshot lacking an offering, is refused by name.
func TestReportSnapshotDryRun(t *testing.T) {
	srv, cfg := serveExample(t)
	plan := func(args ...string) (int, []string, string) {
		t.Helper()
		code, stdout, stderr := run(t, append([]string{"report", "--config", cfg, "--dry-run", "--output", "json"}, args...)...)
		if code != ExitDiff {
			return code, nil, stderr
		}
		var out []string
		for _, e := range readReport(t, []byte(stdout)).Changes {
			if e.Stage == "usage" { // the API run also shows the site-agent registration
				out = append(out, e.String())
			}
		}
		return code, out, stderr
	}
	code, fromAPI, stderr := plan()
	if code != ExitDiff || len(fromAPI) < 20 {
		t.Fatalf("from the API: exit %d, %d entries\n%s", code, len(fromAPI), stderr)
	}
	before := srv.Requests("/api/")
	code, fromSnapshot, stderr := plan("--snapshot", exampleSnapshot)
	if code != ExitDiff {
		t.Fatalf("from the snapshot: exit %d, want %d\n%s", code, ExitDiff, stderr)
	}
	if strings.Join(fromSnapshot, "\n") != strings.Join(fromAPI, "\n") {
		t.Errorf("the snapshot's plan differs from the API's:\n%s\n---\n%s", strings.Join(fromSnapshot, "\n"), strings.Join(fromAPI, "\n"))
	}
	if n := srv.Requests("/api/") - before; n != 0 {
		t.Errorf("the snapshot dry run made %d Waldur request(s)", n)
	}

	// The alias, and the bundled config as it is (its Waldur is not reachable).
	if code, _, stderr := run(t, "usage", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--dry-run"); code != ExitDiff {
		t.Errorf("usage alias on the bundled example: exit %d\n%s", code, stderr)
	}

	partial := editSnapshot(t, func(s *waldur.Snapshot) { s.Offerings = s.Offerings[:1] })
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"without --dry-run", []string{"--snapshot", exampleSnapshot}, "--snapshot goes with --dry-run"},
		{"offering missing", []string{"--snapshot", partial, "--dry-run"}, "offering Plain namespaces is not in snapshot " + partial},
		{"no such file", []string{"--snapshot", "nonexistent.json", "--dry-run"}, "nonexistent.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"report", "--config", exampleConfig}, tc.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q\n%s", code, ExitUsage, tc.want, stderr)
			}
		})
	}
}

// Only tenants that exist are billed, end to end: a resource the renderer
// skips (bad limits) is not, although its old namespace still reports usage;
// nor is one whose namespace the cluster does not have (direct mode deleted
// it). Both are listed as skipped with the reason; the healthy one is billed.
func TestReportBillsOnlyExistingTenants(t *testing.T) {
	srv, cfg, res, cl, _ := usageSetup(t)
	bad := srv.AddResource(waldur.Resource{OfferingUUID: usageOffering, Slug: "bad", Limits: waldur.Limits{"cpu": "-1"}})
	gone := srv.AddResource(waldur.Resource{OfferingUUID: usageOffering, Slug: "gone", Limits: waldur.Limits{"cpu": "2"}})
	cl.mu.Lock()
	cl.res["waldur-bad"], cl.used["waldur-bad"] = string(bad), "1"
	cl.mu.Unlock()
	code, stdout, stderr := run(t, "report", "--config", cfg, "--kubeconfig", "/etc/kube/test", "--output", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	entries := map[string]string{}
	for _, e := range readReport(t, []byte(stdout)).Changes {
		entries[e.Subject] = string(e.Action) + " " + e.Reason
	}
	for _, tc := range []struct {
		name    string
		res     waldur.UUID
		subject string
		want    string
	}{
		{"skipped by the renderer", bad, "plain/bad cpu_hours", "skip not billed: the resource has no rendered tenant (skipped: invalid resource limits"},
		{"namespace gone", gone, "plain/gone cpu", "skip not billed: the tenant's namespace waldur-gone does not exist in the cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := entries[tc.subject]; !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s: %q, want %q", tc.subject, got, tc.want)
			}
			if u := srv.Usages(tc.res); len(u) != 0 {
				t.Errorf("billed: %v", u)
			}
		})
	}
	if got := storedUsage(srv, res, "cpu"); got != "4.00" {
		t.Errorf("the existing tenant: cpu %q", got)
	}
}

// usage.allocation time_weighted in the config bills unit-hours of the
// allocation: 4 cores held for 1.5 hours are 6.
func TestReportTimeWeightedAllocation(t *testing.T) {
	srv, cfg, res, _, now := usageSetup(t)
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, "usage: {allocation: time_weighted}\n"+string(text))
	for i, want := range []string{"0.00", "6.00"} {
		if i > 0 {
			*now = now.Add(90 * time.Minute)
		}
		if code, _, stderr := run(t, "report", "--config", cfg, "--kubeconfig", "/etc/kube/test"); code != ExitOK {
			t.Fatalf("run %d: exit %d\n%s", i, code, stderr)
		}
		if got := storedUsage(srv, res, "cpu"); got != want {
			t.Errorf("run %d: cpu %q, want %q", i, got, want)
		}
	}
}
