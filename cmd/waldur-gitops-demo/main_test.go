package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/cli"
)

const examples = "../../examples"

// TestDemo runs the whole demo, as make demo does, and checks that it shows
// each step it promises and exits 0.
func TestDemo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-examples", examples, "-dir", t.TempDir()}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"$ waldur-gitops sync",
		"$ git log -1 --stat",
		"waldur: +16 tenants",                                 // the first commit
		"/ns_genomics-pipeline_admin",                         // a Keycloak group
		"pending-provider → done",                             // an order turning done
		"-    cpu: \"16\"\n+    cpu: \"32\"",                  // the dry run's diff of the changed limit
		"+ Tenant ut-namespaces/cluster/waldur-demo-workshop", // the ordered resource
		"waldur: +1 ~1 tenants",                               // the second commit
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if !regexp.MustCompile(`Create +Demo workshop +pending-provider → done`).MatchString(out) {
		t.Error("the new order is not shown turning done")
	}
	if strings.Contains(out, "error:") || strings.Contains(stderr.String(), "waldurtest:") {
		t.Errorf("errors or contract violations:\n%s\n%s", out, stderr.String())
	}
}

// TestDemoFailsLoudly checks that the demo exits non-zero, naming what is
// missing, when it cannot find the example.
func TestDemoFailsLoudly(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-examples", t.TempDir(), "-dir", t.TempDir()}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "snapshot.json") {
		t.Errorf("exit %d\n%s", code, stderr.String())
	}
}

// TestBundledExampleDryRun runs render --dry-run on the bundled example (its
// config copied with git.url pointed at a local bare repository) and checks
// that the Keycloak realms without credentials are reported as not read
// instead of failing the run: exit 1 (differences), no error.
func TestBundledExampleDryRun(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "tenants.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(examples, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	templates, _ := filepath.Abs(filepath.Join(examples, "site-templates"))
	text := strings.Replace(string(b), "https://git.example.org/platform/tenants.git", "file://"+repo, 1)
	text = strings.ReplaceAll(text, "templates_dir: site-templates", "templates_dir: "+templates)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := cli.Main([]string{"render", "--dry-run", "--snapshot", filepath.Join(examples, "snapshot.json"), "--config", cfg}, &stdout, &stderr)
	if code != cli.ExitDiff {
		t.Fatalf("exit %d, want %d (differences)\n%s\n%s", code, cli.ExitDiff, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"KeycloakRealm https://keycloak.example.org/auth realm hpc: not read: no Keycloak credentials for offering(s) UT namespaces",
		"KeycloakRealm https://keycloak.example.org/auth realm waldur: not read: no Keycloak credentials for offering(s) Plain namespaces, Rancher GPU",
		"+ Tenant ut-namespaces/cluster/waldur-genomics-pipeline",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stderr.String(), "error") || strings.Contains(stderr.String(), "keycloak.example.org/auth/realms") {
		t.Errorf("the dry run failed or called Keycloak:\n%s", stderr.String())
	}
}
