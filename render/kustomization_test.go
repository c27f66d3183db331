package render

import (
	"encoding/json"
	"reflect"
	"testing"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestKustomizationDoc holds the directly built kustomization to the JSON
// round trip of kustomize's typed value, which the render encoded before:
// the same generic document and the same bytes.
func TestKustomizationDoc(t *testing.T) {
	tests := []struct {
		name, tenant string
		resource     waldur.UUID
		files        []string
	}{
		{name: "one file", tenant: "tenant-a", resource: "0123456789abcdef0123456789abcdef", files: []string{"namespace-a.yaml"}},
		{name: "several files", tenant: "t", resource: "fedcba9876543210fedcba9876543210", files: []string{"a.yaml", "b: c.yaml", "z.yaml"}},
		{name: "no files", tenant: "t", resource: "0123456789abcdef0123456789abcdef"},
		{name: "no name", resource: "0123456789abcdef0123456789abcdef", files: []string{"x.yaml"}},
		{name: "quoting", tenant: "yes", resource: "", files: []string{"true", "1.0", "- a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var files []File
			k := types.Kustomization{
				TypeMeta: types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
				MetaData: &types.ObjectMeta{Name: tc.tenant, Annotations: map[string]string{manifest.LabelResourceUUID: string(tc.resource)}},
			}
			for _, f := range tc.files {
				files = append(files, File{Name: f})
				k.Resources = append(k.Resources, f)
			}
			j, err := json.Marshal(k)
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal(j, &want); err != nil {
				t.Fatal(err)
			}
			got := kustomizationDoc(tc.tenant, tc.resource, files)
			if !reflect.DeepEqual(any(got), want) {
				t.Fatalf("document\n got %#v\nwant %#v", got, want)
			}
			gb, err := manifest.Encode(got)
			if err != nil {
				t.Fatal(err)
			}
			wb, err := manifest.Encode(want)
			if err != nil {
				t.Fatal(err)
			}
			if string(gb) != string(wb) {
				t.Fatalf("bytes\n got %s\nwant %s", gb, wb)
			}
		})
	}
}
