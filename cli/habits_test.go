package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubectlHabits: -o is the output format on every command that prints a
// result, --out has no short form, --dry-run server (with a space) names the
// right spelling, every command shows examples, and the root help lists the
// commands in the order of a first hour and points to the docs.
func TestKubectlHabits(t *testing.T) {
	root := (&app{}).rootCommand()
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" || c.Name() == "version" {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			if strings.TrimSpace(c.Example) == "" {
				t.Error("no Example block")
			}
			if f := c.Flags().Lookup("out"); f != nil && f.Shorthand != "" {
				t.Errorf("--out has the short form -%s", f.Shorthand)
			}
			if c.Name() == "snapshot" || c.Name() == "serve" {
				return
			}
			if f := c.Flags().ShorthandLookup("o"); f == nil || f.Name != "output" {
				t.Errorf("-o is not --output: %v", f)
			}
		})
	}
	help := root.UsageString()
	last := -1
	for _, name := range []string{"render", "snapshot", "diagnose", "sync", "apply", "keycloak", "report", "serve"} {
		i := strings.Index(help, "\n  "+name+" ")
		if i < last {
			t.Errorf("root help lists %s out of the workflow order:\n%s", name, help)
		}
		last = i
	}
	if !strings.Contains(root.Long, "docs/README.md") {
		t.Error("the root help does not point to docs/README.md")
	}

	dir := t.TempDir()
	t.Chdir(dir)
	code, stdout, stderr := run(t, "render", "--config", filepath.Join(startDir, exampleConfig), "--snapshot", filepath.Join(startDir, exampleSnapshot), "-o", "json")
	var v map[string]any
	if code != ExitOK || json.Unmarshal([]byte(stdout), &v) != nil {
		t.Errorf("render -o json: exit %d, not JSON\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "json")); err == nil {
		t.Error("render -o json wrote a directory named json")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"apply", "--config", "x.yaml", "--dry-run", "server"}, "--dry-run=server"},
		{[]string{"sync", "--config", "x.yaml", "-o", "xml"}, "-o/--output must be text, json or yaml"},
		{[]string{"render", "--config", "x.yaml", "-o", "wide"}, "-o/--output must be text, json or yaml"},
	} {
		if code, _, stderr := run(t, tc.args...); code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", tc.args, code, ExitUsage, tc.want, stderr)
		}
	}
}

// startDir is the package directory, whatever a test changes to.
var startDir, _ = os.Getwd()
