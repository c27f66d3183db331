package apply

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/waldur/waldur-gitops/manifest"
)

// upToDate must answer true only when an apply would change nothing; every
// case it cannot be sure of must answer false (and cost one request).
func TestUpToDate(t *testing.T) {
	quota := func() map[string]any {
		return map[string]any{
			"apiVersion": "v1", "kind": "ResourceQuota",
			"metadata": map[string]any{"name": "q", "namespace": "ns", "labels": map[string]any{"app.kubernetes.io/managed-by": "waldur-gitops"}},
			"spec":     map[string]any{"hard": map[string]any{"limits.cpu": "32000m", "pods": "10"}},
		}
	}
	ours := `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}},"f:spec":{"f:hard":{"f:limits.cpu":{},"f:pods":{}}}}`
	binding := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "b", "namespace": "ns"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
		"subjects": []any{map[string]any{"kind": "Group", "name": "g"}},
	}
	cases := []struct {
		name    string
		desired map[string]any
		live    func(map[string]any) // edits a copy of desired into the live object
		fields  string               // our Apply entry's FieldsV1; "" for none
		version string               // its apiVersion (default: desired's)
		builtin bool
		want    bool
	}{
		{name: "same fields, same values", desired: quota(), fields: ours, want: true,
			live: func(m map[string]any) {
				m["spec"].(map[string]any)["hard"].(map[string]any)["limits.cpu"] = "32000m"
				m["status"] = map[string]any{"used": map[string]any{"pods": "3"}}
				m["metadata"].(map[string]any)["annotations"] = map[string]any{"someone-else": "x"}
			}},
		{name: "canonical quantity of a built-in type", desired: quota(), fields: ours, builtin: true, want: true,
			live: func(m map[string]any) { m["spec"].(map[string]any)["hard"].(map[string]any)["limits.cpu"] = "32" }},
		{name: "canonical quantity of a custom type", desired: quota(), fields: ours, builtin: false,
			live: func(m map[string]any) { m["spec"].(map[string]any)["hard"].(map[string]any)["limits.cpu"] = "32" }},
		{name: "a value changed", desired: quota(), fields: ours, builtin: true,
			live: func(m map[string]any) { m["spec"].(map[string]any)["hard"].(map[string]any)["pods"] = "11" }},
		{name: "a field no longer desired is still ours", desired: quota(), builtin: true,
			fields: `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{},"f:old":{}}},"f:spec":{"f:hard":{"f:limits.cpu":{},"f:pods":{}}}}`,
			live:   func(m map[string]any) { m["metadata"].(map[string]any)["labels"].(map[string]any)["old"] = "x" }},
		{name: "a desired field we do not own (taken over)", desired: quota(), builtin: true,
			fields: `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}},"f:spec":{"f:hard":{"f:pods":{}}}}`},
		{name: "no apply of ours", desired: quota(), fields: ""},
		{name: "fields of another version", desired: quota(), fields: ours, version: "v2"},
		{name: "being deleted", desired: quota(), fields: ours, live: func(m map[string]any) {
			m["metadata"].(map[string]any)["deletionTimestamp"] = time.Now().UTC().Format(time.RFC3339)
		}},
		{name: "atomic struct and list", desired: binding, builtin: true, want: true,
			fields: `{"f:roleRef":{},"f:subjects":{}}`},
		{name: "atomic list changed", desired: binding, builtin: true, fields: `{"f:roleRef":{},"f:subjects":{}}`,
			live: func(m map[string]any) { m["subjects"] = []any{} }},
		{name: "a list merged by key", desired: binding, builtin: true,
			fields: `{"f:roleRef":{},"f:subjects":{"k:{\"name\":\"g\"}":{".":{}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			liveObj := copyMap(tc.desired)
			if tc.live != nil {
				tc.live(liveObj)
			}
			live := &unstructured.Unstructured{Object: roundTrip(t, liveObj)}
			mfs := []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}}}
			if tc.fields != "" {
				v := tc.version
				if v == "" {
					v = manifest.Object(tc.desired).APIVersion()
				}
				mfs = append(mfs, metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply,
					APIVersion: v, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(tc.fields)}})
			}
			live.SetManagedFields(mfs)
			if got := upToDate(manifest.Object(tc.desired), live, tc.builtin); got != tc.want {
				t.Errorf("upToDate = %v, want %v", got, tc.want)
			}
		})
	}
}

func roundTrip(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u.Object
}
