package diagnose_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/kube"
)

// A capacity pool whose totals come from Nodes gets a row that asks
// whether the account may list Nodes, one per pool with every offering
// that shares it; a pool of fixed totals reads no Nodes and has none.
func TestCapacityChecks(t *testing.T) {
	text := `offerings:
- {name: A, waldur_api_url: https://w.example.org, waldur_offering_uuid: 0ff00000000040008000000000000001, backend_type: namespace,
   backend_settings: {kubeconfig_path: /k/gpu.yaml}, capacity: {pool: gpus, resources: [nvidia.com/gpu]}}
- {name: B, waldur_api_url: https://w.example.org, waldur_offering_uuid: 0ff00000000040008000000000000002, backend_type: okd,
   backend_settings: {kubeconfig_path: /k/gpu.yaml}, capacity: {pool: gpus, resources: [nvidia.com/gpu]}}
- {name: C, waldur_api_url: https://w.example.org, waldur_offering_uuid: 0ff00000000040008000000000000003, backend_type: namespace,
   capacity: {pool: fixed, resources: [cpu], fixed: {cpu: "100"}}}
`
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		denied map[string]bool
		status string
		detail string
	}{
		{"allowed", nil, "pass", "may list nodes"},
		{"denied", map[string]bool{"list nodes": true}, "fail", "this account may not list nodes: pool gpus cannot be totalled and its orders would wait"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checks := diagnose.CapacityChecks(l.Config, "", func(kube.Source) (diagnose.ClusterAPI, error) {
				return fakeCluster{version: "v1.33.13", denied: tc.denied}, nil
			})
			if len(checks) != 1 || strings.Join(checks[0].Offerings, ",") != "A,B" || checks[0].Target != "pool gpus: /k/gpu.yaml" {
				t.Fatalf("rows: %+v", checks)
			}
			r := run(t, checks)[0]
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("%s: %q, want %s with %q", r.Name, r.Detail, tc.status, tc.detail)
			}
		})
	}
}
