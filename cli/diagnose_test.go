package cli

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

type diagCluster struct{ err error }

func (c diagCluster) Version(context.Context) (string, error) { return "v1.33.13", nil }
func (c diagCluster) CanList(context.Context) error           { return c.err }
func (c diagCluster) Allowed(context.Context, kube.Access) (bool, error) {
	return true, nil
}

// diagnoseSetup serves Waldur and a Git repository and writes a config naming
// both; the clusters are faked (kubeconfig "ok" works, any other is refused).
func diagnoseSetup(t *testing.T, gitPassword string) string {
	t.Helper()
	srv := waldurtest.New(t, waldurtest.AllowPath("/api/users/me/"), waldurtest.AllowPath("/api/marketplace-provider-offerings/"))
	srv.AddOffering(waldur.ProviderOffering{UUID: usageOffering, Name: "Plain", Components: []waldur.OfferingComponent{{Type: "cpu", BillingType: "limit"}}})
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	git := gittest.NewServer(t)
	url := git.CreateRepo(t, "tenants.git", "main")
	gittest.Commit(t, git.RepoDir("tenants.git"), "main", map[string]string{"README.md": "x\n"}, "seed")
	pw := gitPassword
	if pw == "" {
		pw = git.Password()
	}
	t.Setenv(gitPasswordEnv, pw)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, `git:
  url: `+url+`
  username: `+git.User()+`
  password_env: `+gitPasswordEnv+`
offerings:
- name: Plain
  waldur_api_url: `+srv.URL()+`
  waldur_offering_uuid: `+usageOffering+`
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
  backend_settings:
    kubeconfig_path: /etc/kube/site.yaml
`)
	old := diagnoseDeps
	diagnoseDeps = func(a *app, timeout time.Duration) diagnose.Deps {
		d := old(a, timeout)
		d.Cluster = func(s kube.Source) (diagnose.ClusterAPI, error) {
			if s.Path == "/etc/kube/site.yaml" {
				return diagCluster{}, nil
			}
			return diagCluster{err: errors.New("namespaces is forbidden")}, nil
		}
		return d
	}
	t.Cleanup(func() { diagnoseDeps = old })
	return cfg
}

func TestDiagnoseAllPass(t *testing.T) {
	cfg := diagnoseSetup(t, "")
	code, stdout, stderr := run(t, "diagnose", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"waldur token", "waldur offering", "git read", "git write", "cluster", "/etc/kube/site.yaml", "5 check(s), 0 failed, 0 skipped",
		"Plain", "$WALDUR_API_TOKEN", "git.password_env $" + gitPasswordEnv, "kubeconfig /etc/kube/site.yaml"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestDiagnoseFailuresExitNonZero(t *testing.T) {
	cfg := diagnoseSetup(t, "wrong-password")
	code, stdout, stderr := run(t, "diagnose", "--config", cfg, "--kubeconfig", "/other", "--output", "json")
	if code != ExitCheckFailed || !strings.Contains(stderr, "2 of 5 check(s) failed, 1 skipped") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var out struct {
		Checks []diagnose.Result `json:"checks"`
		Failed int               `json:"failed"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Checks {
		want := map[string]string{"git read": diagnose.StatusFail, "git write": diagnose.StatusSkipped, "cluster": diagnose.StatusFail}[r.Name]
		if want == "" {
			want = diagnose.StatusPass
		}
		if r.Status != want || r.OK != (want == diagnose.StatusPass) || (!r.OK && r.Detail == "") {
			t.Errorf("%s: status %s, want %s: %+v", r.Name, r.Status, want, r)
		}
		if r.Name == "git write" && r.Detail != "skipped: git read failed" {
			t.Errorf("git write repeats the read's failure instead of saying skipped: %+v", r)
		}
		if strings.Contains(r.Detail, "wrong-password") {
			t.Errorf("the password leaked: %+v", r)
		}
	}
}

// TestDiagnoseTimeoutReachesTheClusterClient: an offering without
// kubeconfig_path has its cluster checked with the default rules
// ($KUBECONFIG here), and --timeout is that client's request timeout.
func TestDiagnoseTimeoutReachesTheClusterClient(t *testing.T) {
	srv := waldurtest.New(t, waldurtest.AllowPath("/api/users/me/"), waldurtest.AllowPath("/api/marketplace-provider-offerings/"))
	srv.AddOffering(waldur.ProviderOffering{UUID: usageOffering, Name: "Plain"})
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	t.Setenv("KUBECONFIG", kubeconfig)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, `offerings:
- name: Plain
  waldur_api_url: `+srv.URL()+`
  waldur_offering_uuid: `+usageOffering+`
  backend_type: namespace
`)
	code, stdout, stderr := run(t, "diagnose", "--config", cfg, "--timeout", "4s", "--output", "json")
	var out struct {
		Checks []diagnose.Result `json:"checks"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	var cluster *diagnose.Result
	for i := range out.Checks {
		if out.Checks[i].Name == "cluster" {
			cluster = &out.Checks[i]
		}
	}
	if code != ExitCheckFailed || cluster == nil || cluster.Offerings[0] != "Plain" || !strings.Contains(cluster.Detail, "timeout=4s") || strings.Contains(cluster.Detail, "32s") {
		t.Errorf("exit %d, cluster row %+v\n%s", code, cluster, stderr)
	}
}
