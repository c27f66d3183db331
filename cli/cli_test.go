package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/localtree"
	"github.com/waldur/waldur-gitops/render"
)

const (
	exampleConfig   = "../examples/config.yaml"
	exampleSnapshot = "../examples/snapshot.json"
)

// run executes the CLI and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRenderExampleToDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := run(t, "render", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "+ Tenant ut-namespaces/cluster/waldur-genomics-pipeline") || !strings.Contains(stdout, out+": +15") {
		t.Errorf("summary lacks the created tenants:\n%s", stdout)
	}
	first, err := localtree.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := first["rancher-gpu/management/gpu-vision-models/kustomization.yaml"]; !ok {
		t.Errorf("rancher management tenant missing; files: %d", len(first))
	}
	// A second run over an unchanged state changes nothing, and does not even
	// rewrite the directory.
	dirBefore, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = run(t, "render", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--out", out)
	if dirAfter, err := os.Stat(out); err != nil || !os.SameFile(dirBefore, dirAfter) {
		t.Errorf("an unchanged render replaced the output directory (%v)", err)
	}
	if code != ExitOK || !strings.Contains(stdout, out+": =15") || strings.Contains(stdout, "+ Tenant") {
		t.Errorf("second run: exit %d, output:\n%s", code, stdout)
	}
	second, _ := localtree.Read(out)
	if len(first) != len(second) {
		t.Fatalf("second run wrote %d files, first %d", len(second), len(first))
	}
	for p, b := range first {
		if !bytes.Equal(second[p], b) {
			t.Errorf("%s changed between identical runs", p)
		}
	}
}

func TestRenderStreamAndJSON(t *testing.T) {
	code, stdout, stderr := run(t, "render", "--config", exampleConfig, "--snapshot", exampleSnapshot)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stdout, "\n---\n") + 1; n < 40 || !strings.HasPrefix(stdout, "---\n# Source: ") {
		t.Errorf("stream has %d documents or a wrong header:\n%.300s", n, stdout)
	}
	code, stdout, _ = run(t, "render", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--output", "json")
	if code != ExitOK {
		t.Fatalf("json: exit %d", code)
	}
	var rep struct {
		Tenants []struct {
			Dir     string           `json:"dir"`
			Objects []map[string]any `json:"objects"`
		} `json:"tenants"`
		Groups []struct {
			Name    string   `json:"Name"`
			Members []string `json:"Members"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if len(rep.Tenants) != 15 || len(rep.Groups) == 0 || len(rep.Tenants[0].Objects) == 0 {
		t.Errorf("json report: %d tenants, %d groups", len(rep.Tenants), len(rep.Groups))
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	writeFile(t, badConfig, "offerings:\n- name: x\n  waldur_api_url: ftp://nope\n  backend_type: nope\n  bogus: 1\n")
	partial := filepath.Join(dir, "partial.json")
	snap, err := os.ReadFile(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, partial, strings.Replace(string(snap), `"slug": "genomics-pipeline"`, `"slug": "Not_Valid"`, 1))
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStderr []string
	}{
		{"no config flag", []string{"render"}, ExitUsage, []string{"--config is required"}},
		{"every config problem at once", []string{"render", "--config", badConfig}, ExitUsage, []string{
			"offerings[0].waldur_api_url", "offerings[0].backend_type", "offerings[0].bogus", "offerings[0].waldur_offering_uuid (line 2): required",
		}},
		{"missing snapshot", []string{"render", "--config", exampleConfig, "--snapshot", filepath.Join(dir, "none.json")}, ExitUsage, []string{"none.json"}},
		{"bad output flag", []string{"render", "--config", exampleConfig, "--output", "xml"}, ExitUsage, []string{"-o/--output must be text, json or yaml"}},
		{"partial render", []string{"render", "--config", exampleConfig, "--snapshot", partial, "--out", filepath.Join(dir, "out")}, ExitPartial, []string{
			`skipped ut-namespaces/3cfe5210e4db306c7aabcd8103b2ad22 ("Genomics pipeline"): namespace name "waldur-Not_Valid"`,
		}},
		{"unknown command", []string{"frobnicate"}, ExitUsage, []string{"unknown command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestFailedRunLeavesOutputAlone checks that --out is replaced atomically and
// only when it holds a tree this tool wrote.
func TestFailedRunLeavesOutputAlone(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign")
	writeFile(t, filepath.Join(foreign, "precious.txt"), "keep me")
	code, _, stderr := run(t, "render", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--out", foreign)
	if code != ExitOutput || !strings.Contains(stderr, "was not written by waldur-gitops") {
		t.Errorf("foreign dir: exit %d\n%s", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(foreign, "precious.txt")); err != nil || string(b) != "keep me" {
		t.Errorf("foreign file touched: %q %v", b, err)
	}

	out := filepath.Join(dir, "out")
	if code, _, stderr := run(t, "render", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--out", out); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	before, _ := localtree.Read(out)
	empty := filepath.Join(dir, "empty.json")
	writeFile(t, empty, `{"format":"waldur-gitops/snapshot/v1","offerings":[]}`)
	code, _, stderr = run(t, "render", "--config", exampleConfig, "--snapshot", empty, "--out", out)
	if code == ExitOK || !strings.Contains(stderr, "refusing to render without it") {
		t.Errorf("empty snapshot: exit %d\n%s", code, stderr)
	}
	after, _ := localtree.Read(out)
	if len(after) != len(before) || after[render.MarkerFile] == nil {
		t.Errorf("failed run changed the output: %d files before, %d after", len(before), len(after))
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := run(t, "version")
	if code != ExitOK || !strings.HasPrefix(stdout, "waldur-gitops ") {
		t.Errorf("exit %d, %q", code, stdout)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
