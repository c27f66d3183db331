package examples_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/internal/testenv/promtest"
	"github.com/waldur/waldur-gitops/metrics"
)

// ruleSpec is the spec of examples/monitoring's PrometheusRule: a rule file
// as Prometheus reads it.
type ruleSpec struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert string `json:"alert"`
			Expr  string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

func readRules(t *testing.T) (ruleSpec, []byte) {
	t.Helper()
	data, err := os.ReadFile("monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	var spec ruleSpec
	if err := json.Unmarshal(pr.Spec, &spec); err != nil {
		t.Fatal(err)
	}
	plain, err := yaml.JSONToYAML(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec, plain
}

// dashboardQueries are the expr of every target of every panel of the
// Grafana dashboard, and of its template variables.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			out = append(out, v.Definition)
		}
	}
	return out
}

func promtool(t *testing.T) string {
	t.Helper()
	p := promtest.Find()
	if p == "" {
		t.Fatal("promtool is not installed: go run ./internal/testenv/promtest/prepare (make test runs it)")
	}
	return p
}

// TestExampleMonitoringAlertRules runs promtool on the PrometheusRule's rules: they
// check, and the unit tests of monitoring/alerts.test.yaml pass (each alert
// fires for the leader's or the pushed series, never for a standby's).
func TestExampleMonitoringAlertRules(t *testing.T) {
	tool := promtool(t)
	_, plain := readRules(t)
	dir := t.TempDir()
	tests, err := os.ReadFile("monitoring/alerts.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.yaml": plain, "alerts.test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts.test.yaml"}} {
		cmd := exec.CommandContext(t.Context(), tool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestExampleMonitoringDashboardQueriesParse: every dashboard query is PromQL that
// Prometheus accepts once Grafana's variables are filled in (promtool checks
// them as recording rules).
func TestExampleMonitoringDashboardQueriesParse(t *testing.T) {
	tool := promtool(t)
	fill := strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*", "$job", ".*")
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for _, q := range dashboardQueries(t) {
		if strings.HasPrefix(q, "label_values(") {
			continue // Grafana's own function over a series selector
		}
		rules = append(rules, rule{Record: "dashboard:query", Expr: fill.Replace(q)})
	}
	doc := map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), tool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("the dashboard's queries do not parse: %v\n%s", err, out)
	}
}

// metricName matches the metric names of waldur-gitops in a query.
var metricName = regexp.MustCompile(`\bwaldur_gitops_[a-z0-9_]+`)

// exported lists the metric families serve's registry declares: the
// Recorder's and the event consumer's, whether or not they hold a series yet.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	rec := metrics.New("test")
	events.NewMetrics(metrics.Namespace, rec.Registry())
	ch := make(chan *prometheus.Desc, 256)
	go func() { rec.Registry().Describe(ch); close(ch) }()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names[m[1]] = true
	}
	return names
}

// TestExampleMonitoringMetricNames lists every metric name in every alert rule and
// dashboard query and fails on one that serve's registry does not export (a
// histogram's _bucket, _sum and _count are its family's).
func TestExampleMonitoringMetricNames(t *testing.T) {
	names := exported(t)
	if !names["waldur_gitops_runs_total"] || !names["waldur_gitops_events_commit_latency_seconds"] {
		t.Fatalf("the registry's names were not read: %v", names)
	}
	spec, _ := readRules(t)
	var queries []struct{ where, expr string }
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			queries = append(queries, struct{ where, expr string }{"rule " + r.Alert, r.Expr})
		}
	}
	for i, q := range dashboardQueries(t) {
		queries = append(queries, struct{ where, expr string }{fmt.Sprintf("dashboard query %d", i+1), q})
	}
	used := map[string]bool{}
	for _, q := range queries {
		for _, n := range metricName.FindAllString(q.expr, -1) {
			family := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(n, suffix); ok && names[base] {
					family = base
				}
			}
			used[family] = true
			if !names[family] {
				t.Errorf("%s uses %s, which serve does not export", q.where, n)
			}
		}
	}
	// The alerts the issue asks for read the series exported for them.
	for _, n := range []string{"waldur_gitops_leader", "waldur_gitops_leader_transitions_total", "waldur_gitops_consecutive_failed_runs",
		"waldur_gitops_order_oldest_waiting_seconds", "waldur_gitops_last_run_guard_refused", "waldur_gitops_events_consumer_connected",
		"waldur_gitops_interval_seconds", "waldur_gitops_orders_waiting", "waldur_gitops_events_commit_latency_seconds"} {
		if !used[n] {
			t.Errorf("neither the rules nor the dashboard read %s", n)
		}
	}
	t.Logf("%d queries read %d metrics: %v", len(queries), len(used), slices.Sorted(maps.Keys(used)))
}
