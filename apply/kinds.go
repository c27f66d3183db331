package apply

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/config"
)

// inventoryKinds are the kinds an offering's templates can render, by target:
// those its backend registers (backend.Backend.Kinds) and those its site
// templates declare. They
// are inventoried whether or not a tenant renders them now, so that the last
// object of a kind is pruned too.
func (r *run) inventoryKinds(off *config.Offering) map[string][]schema.GroupVersionKind {
	out := map[string][]schema.GroupVersionKind{}
	if b := backend.Lookup(off.BackendType); b != nil {
		for t, ks := range b.Kinds {
			out[t] = slices.Clone(ks)
		}
	}
	if off.TemplatesDir == "" {
		return out
	}
	site, err := templateKinds(off.TemplatesDir, backend.DefaultTargetOf(off.BackendType))
	if err != nil {
		r.o.Log.Warn("could not read the kinds of the site templates; objects of a kind no tenant renders now are not pruned",
			"offering", off.Name, "templates_dir", off.TemplatesDir, "error", err.Error())
	}
	for t, ks := range site {
		for _, k := range ks {
			if !slices.Contains(out[t], k) {
				out[t] = append(out[t], k)
			}
		}
	}
	return out
}

// templateKinds reads the apiVersion, kind and x-render.target of every
// document of the templates in dir. Templated values (with "{{") cannot be
// known before rendering and are left out.
func templateKinds(dir, defaultTarget string) (map[string][]schema.GroupVersionKind, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]schema.GroupVersionKind{}
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc struct {
				APIVersion string `yaml:"apiVersion"`
				Kind       string `yaml:"kind"`
				XRender    struct {
					Target string `yaml:"target"`
				} `yaml:"x-render"`
			}
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
			if doc.Kind == "" || strings.Contains(doc.Kind+doc.APIVersion, "{{") {
				continue
			}
			gvk := schema.FromAPIVersionAndKind(doc.APIVersion, doc.Kind)
			t := doc.XRender.Target
			if t == "" {
				t = defaultTarget
			}
			if !slices.Contains(out[t], gvk) {
				out[t] = append(out[t], gvk)
			}
		}
	}
	return out, errors.Join(errs...)
}
