// Package examples_test checks the manifests shipped in examples/: every
// kustomization builds, every Kubernetes object (built or standalone) is
// accepted by a real kube-apiserver in a strict server-side dry run, and the
// deploy overlays keep the properties their README promises.
package examples_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// manifest is one Kubernetes object found in examples/ and where it came from.
type manifest struct {
	// Source is a path relative to examples/: a standalone file, a
	// kustomization directory ("(kustomize build)") or the rendered example.
	Source string
	Obj    *unstructured.Unstructured
}

// String names the object and its source for failure messages.
func (m manifest) String() string {
	id := m.Obj.GetKind() + " " + m.Obj.GetName()
	if ns := m.Obj.GetNamespace(); ns != "" {
		id = m.Obj.GetKind() + " " + ns + "/" + m.Obj.GetName()
	}
	return m.Source + ": " + id
}

// skipped is a YAML file of examples/ that is not validated as a manifest.
type skipped struct{ Path, Reason string }

// findKustomizations returns every directory under root (relative to it,
// sorted) that holds a kustomization file, leaving out testdata, and
// separately those that hold a kustomize Component, which only builds as part
// of a kustomization that includes it.
func findKustomizations(root string) (dirs, components []string, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() || kustomizationFile(p) == "" {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(kustomizationFile(p))
		if err != nil {
			return err
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(data, &head); err != nil {
			return fmt.Errorf("parse %s: %w", kustomizationFile(p), err)
		}
		if head.Kind == types.ComponentKind {
			components = append(components, filepath.ToSlash(rel))
		} else {
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(dirs)
	sort.Strings(components)
	return dirs, components, err
}

// kustomizationFile returns the kustomization file of dir, or "".
func kustomizationFile(dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, n)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// build runs kustomize on dir with the default options (load restrictor
// included) and returns the objects it produces.
func build(dir string) ([]*unstructured.Unstructured, error) {
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: object %s: %w", dir, r.CurId(), err)
		}
		u, err := toUnstructured(m)
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: object %s: %w", dir, r.CurId(), err)
		}
		out = append(out, u)
	}
	return out, nil
}

// consumedFiles returns the files (cleaned paths) that the kustomization in dir
// reads itself: resources, patches, generator sources and the like. Directory
// entries are kustomizations of their own and are left out.
func consumedFiles(dir string) (map[string]bool, error) {
	path := kustomizationFile(dir)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read kustomization %s: %w", path, err)
	}
	var k types.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("parse kustomization %s: %w", path, err)
	}
	var refs []string
	refs = append(refs, k.Resources...)
	refs = append(refs, k.Components...)
	refs = append(refs, k.Crds...)
	refs = append(refs, k.Configurations...)
	refs = append(refs, k.Generators...)
	refs = append(refs, k.Transformers...)
	refs = append(refs, k.Validators...)
	//lint:ignore SA1019 the deprecated fields are still read by kustomize, so their files must exist
	for _, p := range k.PatchesStrategicMerge {
		refs = append(refs, string(p))
	}
	for _, p := range k.Patches {
		refs = append(refs, p.Path)
	}
	//lint:ignore SA1019 as above
	for _, p := range k.PatchesJson6902 {
		refs = append(refs, p.Path)
	}
	gens := make([]types.GeneratorArgs, 0, len(k.ConfigMapGenerator)+len(k.SecretGenerator))
	for _, g := range k.ConfigMapGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range gens {
		for _, f := range g.FileSources {
			if _, after, ok := strings.Cut(f, "="); ok {
				f = after
			}
			refs = append(refs, f)
		}
		refs = append(refs, g.EnvSources...)
	}
	out := map[string]bool{}
	for _, r := range refs {
		if r == "" {
			continue
		}
		p := filepath.Clean(filepath.Join(dir, r))
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			out[p] = true
		}
	}
	return out, nil
}

// toUnstructured turns a decoded object into the JSON types the API
// machinery works with (int64 and float64 numbers, no YAML-only types).
func toUnstructured(m map[string]any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}

// decodeDocuments splits a YAML stream into its non-empty documents.
func decodeDocuments(data []byte) ([]map[string]any, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []map[string]any
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
}

// exampleSet is everything the examples hold.
type exampleSet struct {
	// Builds maps each kustomization directory to its output.
	Builds    map[string][]*unstructured.Unstructured
	Manifests []manifest
	Skipped   []skipped
}

// collect finds every manifest under root: the output of each kustomization,
// each standalone YAML file with apiVersion and kind that no kustomization
// reads, and the objects the example config renders (which is how the site
// templates are validated). Files that are not manifests are listed in Skipped.
func collect(root string) (*exampleSet, error) {
	set := &exampleSet{Builds: map[string][]*unstructured.Unstructured{}}
	dirs, components, err := findKustomizations(root)
	if err != nil {
		return nil, err
	}
	for _, c := range components {
		set.Skipped = append(set.Skipped, skipped{c + "/", "a kustomize Component: built as part of the kustomizations that include it"})
	}
	consumed := map[string]bool{}
	for _, d := range dirs {
		full := filepath.Join(root, d)
		objs, err := build(full)
		if err != nil {
			return nil, err
		}
		set.Builds[d] = objs
		for _, o := range objs {
			set.Manifests = append(set.Manifests, manifest{Source: d + " (kustomize build)", Obj: o})
		}
		files, err := consumedFiles(full)
		if err != nil {
			return nil, err
		}
		for f := range files {
			consumed[f] = true
		}
	}
	templateDirs, err := exampleTemplateDirs(root)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && d.Name() == "testdata":
			set.Skipped = append(set.Skipped, skipped{rel + "/", "test fixtures of this test"})
			return filepath.SkipDir
		case d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")):
			return nil
		case slices.Contains(konfig.RecognizedKustomizationFileNames(), d.Name()):
			return nil // built above
		case consumed[filepath.Clean(p)]:
			return nil // part of a kustomization's output
		case d.Name() == "config.yaml":
			set.Skipped = append(set.Skipped, skipped{rel, "a waldur-gitops config, not a manifest (loaded by config.Load in the config and deploy tests)"})
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// Site templates hold waldur-gitops template expressions; Argo CD's
		// ApplicationSets hold Argo CD's own in quoted strings, and are
		// manifests as they stand.
		if templateDirs[filepath.Dir(filepath.Clean(p))] && bytes.Contains(data, []byte("{{")) {
			set.Skipped = append(set.Skipped, skipped{rel, "a site template: validated through its render from config.yaml and snapshot.json"})
			return nil
		}
		docs, err := decodeDocuments(data)
		if err != nil && bytes.Contains(data, []byte("{{")) {
			set.Skipped = append(set.Skipped, skipped{rel, "a template that is not YAML as it stands: not validated"})
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		for i, m := range docs {
			if m["apiVersion"] == nil || m["kind"] == nil {
				set.Skipped = append(set.Skipped, skipped{fmt.Sprintf("%s (document %d)", rel, i+1), "no apiVersion and kind: not a Kubernetes object"})
				continue
			}
			u, err := toUnstructured(m)
			if err != nil {
				return fmt.Errorf("%s, document %d: %w", rel, i+1, err)
			}
			set.Manifests = append(set.Manifests, manifest{Source: rel, Obj: u})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rendered, err := renderExample(root)
	if err != nil {
		return nil, err
	}
	set.Manifests = append(set.Manifests, rendered...)
	return set, nil
}

// exampleTemplateDirs returns the (cleaned) templates_dir of every offering
// of the example config.
func exampleTemplateDirs(root string) (map[string]bool, error) {
	cfg, err := config.Load(filepath.Join(root, "config.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, o := range cfg.Offerings {
		if o.TemplatesDir != "" {
			out[filepath.Clean(o.TemplatesDir)] = true
		}
	}
	return out, nil
}

// renderExample renders config.yaml (site templates included) from
// snapshot.json with the project's renderer and returns every object.
func renderExample(root string) ([]manifest, error) {
	cfg, err := config.Load(filepath.Join(root, "config.yaml"))
	if err != nil {
		return nil, err
	}
	snap, err := waldur.LoadSnapshot(filepath.Join(root, "snapshot.json"))
	if err != nil {
		return nil, err
	}
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("load the templates of config.yaml: %w", err)
	}
	res, err := render.New(cfg.Config, tpls).Render(&snap.State)
	if err != nil {
		return nil, fmt.Errorf("render config.yaml from snapshot.json: %w", err)
	}
	if len(res.Skipped) > 0 {
		return nil, fmt.Errorf("render config.yaml from snapshot.json skipped resources: %v", res.Skipped)
	}
	var out []manifest
	for _, tn := range res.Tenants {
		for _, o := range tn.Objects {
			u, err := toUnstructured(o)
			if err != nil {
				return nil, fmt.Errorf("tenant %s: %s %s: %w", tn.Dir, o.Kind(), o.Name(), err)
			}
			out = append(out, manifest{Source: "render of config.yaml: " + tn.Dir, Obj: u})
		}
	}
	return out, nil
}

// Every kustomization under examples/ builds with kustomize's default options,
// and the collection finds the manifests this test is meant to cover.
func TestExampleKustomizationsBuild(t *testing.T) {
	dirs, components, err := findKustomizations(".")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(components, []string{"deploy/components/image"}) {
		t.Errorf("components %v, want deploy/components/image", components)
	}
	for _, want := range []string{"deploy/base", "deploy/overlays/direct", "deploy/overlays/gitops", "deploy/overlays/serve", "deploy/overlays/serve-ha", "flux", "rbac"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("kustomization %s not found; found %v", want, dirs)
		}
	}
	for _, d := range dirs {
		t.Run(d, func(t *testing.T) {
			objs, err := build(d)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) == 0 {
				t.Fatalf("kustomize build %s: no objects", d)
			}
		})
	}
	set, err := collect(".")
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]int{}
	for _, m := range set.Manifests {
		sources[m.Source]++
		if m.Obj.GetAPIVersion() == "" || m.Obj.GetKind() == "" || m.Obj.GetName() == "" {
			t.Errorf("%s: object without apiVersion, kind or name", m)
		}
		if m.Obj.GetKind() == "Secret" && (m.Obj.Object["data"] != nil || m.Obj.Object["stringData"] != nil) {
			t.Errorf("%s: a Secret with data in the examples; create Secrets by hand", m)
		}
	}
	// Standalone files, and files a kustomization reads, each appear once:
	// rbac/apply.yaml through the rbac kustomization only.
	for _, want := range []string{"argocd/applicationset.yaml", "argocd/applicationset-rancher.yaml", "rbac/report.yaml", "rbac/validate-server.yaml", "rbac/capacity.yaml", "rbac (kustomize build)", "flux (kustomize build)"} {
		if sources[want] == 0 {
			t.Errorf("no manifest collected from %s; sources %v", want, sources)
		}
	}
	for _, notWant := range []string{"rbac/apply.yaml", "flux/gitrepository.yaml", "deploy/overlays/gitops/secrets.yaml", "deploy/base/cronjob.yaml"} {
		if sources[notWant] != 0 {
			t.Errorf("%s is read by a kustomization but was collected as a standalone file too", notWant)
		}
	}
	policies := 0
	for _, m := range set.Manifests {
		if strings.HasPrefix(m.Source, "render of config.yaml") && m.Obj.GetKind() == "NetworkPolicy" && m.Obj.GetName() == "default-deny-ingress" {
			policies++
		}
	}
	if policies == 0 {
		t.Error("the render of config.yaml holds no NetworkPolicy from site-templates/networkpolicy.yaml")
	}
	for _, s := range set.Skipped {
		t.Logf("skipped %s: %s", s.Path, s.Reason)
	}
	if !slices.ContainsFunc(set.Skipped, func(s skipped) bool {
		return s.Path == "site-templates/networkpolicy.yaml" && strings.HasPrefix(s.Reason, "a site template")
	}) {
		t.Errorf("site-templates/networkpolicy.yaml is not recognised as a site template: skipped %v", set.Skipped)
	}
}
