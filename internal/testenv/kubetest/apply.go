package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyFiles server-side applies, as admin, every object in the YAML files
// (documents separated by ---), and waits until the CustomResourceDefinitions
// among them are served. It returns the objects as applied.
func (c *Cluster) ApplyFiles(ctx context.Context, files ...string) ([]*unstructured.Unstructured, error) {
	cfg := c.RESTConfig(Admin)
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	groups, err := restmapper.GetAPIGroupResources(disco)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for i, doc := range bytes.Split(data, []byte("\n---")) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return nil, fmt.Errorf("%s, document %d: %w", filepath.Base(f), i+1, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			gvk := u.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return nil, fmt.Errorf("%s, document %d: %w", filepath.Base(f), i+1, err)
			}
			var ri dynamic.ResourceInterface = dc.Resource(m.Resource)
			if ns := u.GetNamespace(); ns != "" {
				ri = dc.Resource(m.Resource).Namespace(ns)
			}
			got, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "kubetest", Force: true})
			if err != nil {
				return nil, fmt.Errorf("apply %s %s: %w", gvk.Kind, u.GetName(), err)
			}
			out = append(out, got)
		}
	}
	for _, u := range out {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		name := u.GetName()
		if err := waitFor(ctx, func() (bool, error) {
			crd, err := dc.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, cd := range conds {
				if m, _ := cd.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return nil, fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return out, nil
}

// waitFor polls cond every 100 ms until it holds, fails, or a minute passes.
func waitFor(ctx context.Context, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.New("timed out")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
