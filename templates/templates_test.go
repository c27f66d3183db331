package templates

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// defaultFiles are the embedded templates of every profile.
var defaultFiles = map[string][]string{
	"k8s-ut-namespace": {"managednamespace.yaml"},
	"namespace":        {"limitrange.yaml", "namespace.yaml", "resourcequota.yaml", "rolebinding.yaml"},
	"okd":              {"namespace.yaml", "resourcequota.yaml", "rolebinding.yaml"},
	"rancher":          {"namespace.yaml", "project.yaml", "projectroletemplatebinding.yaml", "resourcequota.yaml"},
}

func TestDefaults(t *testing.T) {
	for profile, files := range defaultFiles {
		ts, err := Defaults(profile)
		if err != nil {
			t.Errorf("%s: %v", profile, err)
			continue
		}
		var got []string
		for _, tp := range ts {
			got = append(got, tp.File)
			if want := "default:" + profile + "/" + tp.File; tp.Name != want {
				t.Errorf("name %q, want %q", tp.Name, want)
			}
		}
		if !reflect.DeepEqual(got, files) {
			t.Errorf("%s: files %q, want %q", profile, got, files)
		}
	}
	// Every embedded directory is a profile listed above.
	entries, err := defaultFS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := defaultFiles[e.Name()]; !ok {
			t.Errorf("embedded directory %s is not covered", e.Name())
		}
	}
	for _, bad := range []string{"nope", "", ".", "Namespace", "namespace/", "../templates"} {
		if _, err := Defaults(bad); err == nil || err.Error() != `no default templates for backend type "`+bad+`"` {
			t.Errorf("Defaults(%q): %v", bad, err)
		}
	}
}

// TestExampleSiteTemplate: the example shipped in examples/ parses and renders.
func TestExampleSiteTemplate(t *testing.T) {
	ts, err := LoadFS(os.DirFS("../examples"), "site-templates", "examples/")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Name != "examples/site-templates/networkpolicy.yaml" {
		t.Fatalf("templates %+v", ts)
	}
	objs, err := ts[0].Execute(newData(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "NetworkPolicy",
		"metadata":   map[string]any{"name": "default-deny-ingress", "namespace": "tenant-alpha"},
		"spec": map[string]any{
			"podSelector": map[string]any{},
			"policyTypes": []any{"Ingress"},
			"ingress": []any{map[string]any{"from": []any{map[string]any{
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "tenant-alpha"}},
			}}}},
		},
	}
	if len(objs) != 1 || objs[0].Target != "cluster" || !reflect.DeepEqual(objs[0].Body, want) {
		t.Errorf("objects %#v", objs)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestForOffering(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		// Replaces the default of the same file name.
		"namespace.yaml": object("data:\n  site: \"yes\"\n"),
		// Added, in file-name order among the defaults.
		"networkpolicy.yaml": object(""),
		"aaa-first.yml":      object(""),
		"zz-last.yaml":       object(""),
		// Not templates: other extensions, directories, and files in them.
		"README.md":                "# notes\n",
		"namespace.yaml.orig":      "not: yaml: at all",
		"sub/rolebinding.yaml":     "broken: [",
		"resourcequota.yaml.d/x":   "ignored",
		"notes.txt":                "ignored",
		"disabled.yaml.bak":        "ignored",
		"resourcequota.json":       "{}",
		".hidden-but-valid.yaml":   object(""),
		"upper-case-EXT.YAML":      "ignored: the extension is case-sensitive",
		"rolebinding.yml.disabled": "ignored",
	})
	ts, err := ForOffering("namespace", dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tp := range ts {
		got = append(got, tp.Name)
	}
	want := []string{
		dir + "/.hidden-but-valid.yaml",
		dir + "/aaa-first.yml",
		"default:namespace/limitrange.yaml",
		dir + "/namespace.yaml",
		dir + "/networkpolicy.yaml",
		"default:namespace/resourcequota.yaml",
		"default:namespace/rolebinding.yaml",
		dir + "/zz-last.yaml",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("templates\n%q\nwant\n%q", got, want)
	}
	// The replacement is the site's file.
	objs, err := ts[3].Execute(newData(), "cluster")
	if err != nil || len(objs) != 1 || objs[0].Body["kind"] != "ConfigMap" {
		t.Errorf("namespace.yaml: %v %+v", err, objs)
	}

	// The defaults are not changed by a replacement: a second load still has them.
	defs, err := ForOffering("namespace", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 4 || defs[1].Name != "default:namespace/namespace.yaml" {
		t.Errorf("defaults after a site load: %+v", defs)
	}
}

// TestForOfferingYmlDoesNotReplaceYaml: replacement goes by the exact file name.
func TestForOfferingYmlDoesNotReplaceYaml(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"namespace.yml": object("")})
	ts, err := ForOffering("namespace", dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tp := range ts {
		got = append(got, tp.File)
	}
	if want := []string{"limitrange.yaml", "namespace.yaml", "namespace.yml", "resourcequota.yaml", "rolebinding.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

func TestForOfferingErrors(t *testing.T) {
	if _, err := ForOffering("nope", ""); err == nil || err.Error() != `no default templates for backend type "nope"` {
		t.Errorf("unknown backend: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := ForOffering("namespace", missing); err == nil || !strings.HasPrefix(err.Error(), "read templates "+missing+"/") {
		t.Errorf("missing directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file.yaml")
	writeFiles(t, filepath.Dir(file), map[string]string{"file.yaml": object("")})
	if _, err := ForOffering("namespace", file); err == nil {
		t.Error("a file as templates_dir: no error")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"good.yaml": object(""), "bad.yaml": "apiVersion: v1\nkind: X\n"})
	_, err := ForOffering("rancher", dir)
	if want := "template " + dir + "/bad.yaml, document 1: object has no metadata"; err == nil || err.Error() != want {
		t.Errorf("bad site template:\n got %v\nwant %s", err, want)
	}
	// An empty site directory adds nothing.
	empty := t.TempDir()
	ts, err := ForOffering("rancher", empty)
	if err != nil || len(ts) != len(defaultFiles["rancher"]) {
		t.Errorf("empty directory: %d templates, %v", len(ts), err)
	}
}
