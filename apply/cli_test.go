package apply_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/cli"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/waldur"
)

// The apply command end to end, on a cluster without the Rancher CRDs: first
// with a snapshot whose Rancher offering has no resources, then with the whole
// example, whose Rancher tenants then cannot be applied.
func TestApplyCommand(t *testing.T) {
	c := startCluster(t, []string{crdManagedNamespace})
	cfg, st := loadExample(t)
	c.prepareNamespaces(renderState(t, cfg.Config, st))
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	for i := range snap.Offerings {
		if snap.Offerings[i].Name == "Rancher GPU" {
			snap.Offerings[i].Resources = nil
		}
	}
	noRancher := filepath.Join(t.TempDir(), "no-rancher.json")
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noRancher, b, 0o600); err != nil {
		t.Fatal(err)
	}
	kc := c.KubeconfigPath(kubetest.Admin)
	// The example's Keycloak is not reachable from here: apply without it.
	base := []string{"apply", "--config", exampleConfig, "--kubeconfig", kc, "--log-level", "error", "--no-keycloak"}

	steps := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // substrings
		stderr   []string
		notInOut []string
		check    func(t *testing.T, stdout string)
	}{
		{name: "bad dry-run mode", args: []string{"--snapshot", noRancher, "--dry-run=client"}, code: cli.ExitUsage,
			stderr: []string{"--dry-run=client is not supported"}},
		{name: "server dry run of a new cluster", args: []string{"--snapshot", noRancher, "--dry-run"}, code: cli.ExitDiff,
			stdout: []string{"Namespace/tenant-genome-portal created (server dry run)", "ManagedNamespace/waldur-system/waldur-genomics-pipeline created (server dry run)", "apply (server dry run): 33 created, 0 configured, 0 unchanged, 0 deleted, 0 skipped"},
			check: func(t *testing.T, _ string) {
				if c.get(gvrNamespace, "", "tenant-genome-portal") != nil {
					t.Error("the dry run created a namespace")
				}
			}},
		{name: "apply", args: []string{"--snapshot", noRancher}, code: cli.ExitOK,
			stdout: []string{"RoleBinding/tenant-genome-portal/waldur-admin created\n", "apply: 33 created, 0 configured, 0 unchanged, 0 deleted, 0 skipped"}},
		{name: "re-apply", args: []string{"--snapshot", noRancher}, code: cli.ExitOK,
			stdout:   []string{"apply: 0 created, 0 configured, 33 unchanged, 0 deleted, 0 skipped"},
			notInOut: []string{" created", " configured"}},
		// Unchanged objects need no request at all: the inventory shows them.
		{name: "run report as JSON", args: []string{"--snapshot", noRancher, "--output", "json"}, code: cli.ExitOK,
			check: func(t *testing.T, stdout string) {
				var rep struct {
					Command string                    `json:"command"`
					Counts  map[string]map[string]int `json:"counts"`
					Stages  []struct {
						Name  string         `json:"name"`
						Calls map[string]int `json:"calls"`
					} `json:"stages"`
				}
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
					t.Fatalf("%v\n%s", err, stdout)
				}
				var names []string
				for _, st := range rep.Stages {
					names = append(names, st.Name)
				}
				if rep.Command != "apply" || rep.Counts["apply"]["unchanged"] != 33 || strings.Join(names, " ") != "waldur render quota apply" || rep.Stages[3].Calls["apply"] != 0 {
					t.Errorf("report %+v", rep)
				}
			}},
		{name: "missing CRDs", args: []string{"--snapshot", exampleSnapshot}, code: cli.ExitApply,
			stdout: []string{"Namespace/gpu-llm-finetune skipped: not applied: the cluster serves no Project (management.cattle.io/v3), ProjectRoleTemplateBinding (management.cattle.io/v3) (a CRD is missing)\n",
				"apply: 0 created, 0 configured, 33 unchanged, 0 deleted, 12 skipped"},
			stderr: []string{"serves no Project (management.cattle.io/v3): install the CustomResourceDefinition projects.management.cattle.io",
				"rancher-gpu/downstream/gpu-llm-finetune, rancher-gpu/management/gpu-llm-finetune"}},
	}
	for _, s := range steps {
		ok := t.Run(s.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := cli.Main(append(append([]string{}, base...), s.args...), &out, &errb)
			if code != s.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, s.code, out.String(), errb.String())
			}
			for _, want := range s.stdout {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out.String())
				}
			}
			for _, not := range s.notInOut {
				if strings.Contains(out.String(), not) && !strings.Contains(out.String(), "0"+not) {
					t.Errorf("stdout has %q:\n%s", not, out.String())
				}
			}
			for _, want := range s.stderr {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errb.String())
				}
			}
			if s.check != nil {
				s.check(t, out.String())
			}
		})
		if !ok {
			t.FailNow()
		}
	}
}
