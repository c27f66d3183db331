package cli

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/internal/gittest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

type diagCluster struct{ err error }

func (c diagCluster) Version(context.Context) (string, error) { return "v1.33.13", nil }
func (c diagCluster) CanList(context.Context) error           { return c.err }

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
	diagnoseDeps = func(a *app) diagnose.Deps {
		d := old(a)
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
	for _, want := range []string{"waldur token", "waldur offering", "git read", "git write", "cluster", "/etc/kube/site.yaml", "5 check(s), 0 failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestDiagnoseFailuresExitNonZero(t *testing.T) {
	cfg := diagnoseSetup(t, "wrong-password")
	code, stdout, stderr := run(t, "diagnose", "--config", cfg, "--kubeconfig", "/other", "--output", "json")
	if code != ExitCheckFailed || !strings.Contains(stderr, "3 of 5 check(s) failed") {
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
		wantOK := strings.HasPrefix(r.Name, "waldur")
		if r.OK != wantOK || (!r.OK && r.Detail == "") {
			t.Errorf("%+v", r)
		}
		if strings.Contains(r.Detail, "wrong-password") {
			t.Errorf("the password leaked: %+v", r)
		}
	}
}
