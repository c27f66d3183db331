package apply

import (
	"encoding/json"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/waldur/waldur-gitops/manifest"
)

// upToDate reports whether server-side applying desired onto live would change
// nothing, so that the request can be left out: a re-apply of thousands of
// unchanged tenants then costs a few list calls instead of a request per
// object.
//
// That holds when the fields this field manager owns by its last apply are
// exactly the fields desired sets, and each has the desired value in live. Then
// the apply would neither set a new value, nor take a field over (which could
// conflict), nor release one. Whatever the check cannot read with certainty
// (lists merged by key, another version's field set, an object being deleted)
// answers false, and the object is applied as usual; a false "no" costs one
// request, never a missed change.
func upToDate(desired manifest.Object, live *unstructured.Unstructured, builtin bool) bool {
	if live.GetDeletionTimestamp() != nil {
		return false
	}
	var owned map[string]any
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" {
			if mf.APIVersion != desired.APIVersion() || mf.FieldsV1 == nil || json.Unmarshal(mf.FieldsV1.Raw, &owned) != nil {
				return false
			}
		}
	}
	if owned == nil {
		return false
	}
	// The desired object in the types the live one was decoded into.
	raw, err := json.Marshal(map[string]any(desired))
	if err != nil {
		return false
	}
	want := &unstructured.Unstructured{}
	if want.UnmarshalJSON(raw) != nil {
		return false
	}
	c := fieldCheck{builtin: builtin}
	return c.covers(owned, want.Object, live.Object, "")
}

type fieldCheck struct {
	// builtin is set for the API server's own types, which store quantities in
	// canonical form ("32000m" comes back as "32").
	builtin bool
}

// covers checks one level: the owned field set (FieldsV1) names exactly the
// keys of want, and each has its desired value in have.
func (c fieldCheck) covers(owned, want, have map[string]any, path string) bool {
	n := 0
	for k, sub := range owned {
		if k == "." {
			continue // the map itself, besides its fields
		}
		name, ok := strings.CutPrefix(k, "f:")
		if !ok {
			return false // a list element by key, value or index: not read here
		}
		wv, inWant := want[name]
		hv, inHave := have[name]
		if !inWant || !inHave {
			return false
		}
		n++
		children, _ := sub.(map[string]any)
		if isLeaf(children) {
			if !c.equal(wv, hv) {
				return false
			}
			continue
		}
		wm, ok1 := wv.(map[string]any)
		hm, ok2 := hv.(map[string]any)
		if !ok1 || !ok2 || !c.covers(children, wm, hm, strings.TrimPrefix(path+"."+name, ".")) {
			return false
		}
	}
	expected := 0
	for k, v := range want {
		if !isIdentity(path, k, v) {
			expected++
		}
	}
	return n == expected
}

// isIdentity reports whether the field k of the map at path only names the
// object: apiVersion, kind, metadata.name, metadata.namespace, and a metadata
// holding nothing else.
func isIdentity(path, k string, v any) bool {
	switch {
	case path == "" && (k == "apiVersion" || k == "kind"):
		return true
	case path == "metadata" && (k == "name" || k == "namespace"):
		return true
	case path == "" && k == "metadata":
		md, _ := v.(map[string]any)
		for mk, mv := range md {
			if !isIdentity("metadata", mk, mv) {
				return false
			}
		}
		return true
	}
	return false
}

// isLeaf reports whether a field set entry owns a value whole (a scalar, an
// atomic list or struct, an empty map).
func isLeaf(children map[string]any) bool {
	for k := range children {
		if k != "." {
			return false
		}
	}
	return true
}

func (c fieldCheck) equal(want, have any) bool {
	if reflect.DeepEqual(want, have) {
		return true
	}
	if !c.builtin {
		return false
	}
	ws, ok1 := want.(string)
	hs, ok2 := have.(string)
	if !ok1 || !ok2 {
		return false
	}
	wq, err1 := resource.ParseQuantity(ws)
	hq, err2 := resource.ParseQuantity(hs)
	return err1 == nil && err2 == nil && wq.Cmp(hq) == 0
}
