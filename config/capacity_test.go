package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
)

// A capacity section gets its defaults: the pool named after the cluster
// of the backend's capacity target, cpu and memory, wait, 24h, and the
// documented overcommit ratios.
func TestCapacityDefaults(t *testing.T) {
	tests := []struct {
		name, backend, settings, capacity string
		pool                              string
		resources                         []string
	}{
		{"namespace with a context", "namespace", "      kubeconfig_context: gpu-east\n", "    capacity: {}\n", "gpu-east", []string{"cpu", "memory"}},
		{"no kubeconfig", "okd", "", "    capacity: {resources: [nvidia.com/gpu]}\n", "in-cluster", []string{"nvidia.com/gpu"}},
		{"rancher: the downstream cluster", "rancher", "      cluster_id: c-1\n      kubeconfig_context: downstream\n      management_kubeconfig_context: rancher\n", "    capacity: {}\n", "downstream", []string{"cpu", "memory"}},
		{"named pool", "namespace", "", "    capacity: {pool: gpus}\n", "gpus", []string{"cpu", "memory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := mustParse(t, oneOffering(tc.backend, tc.settings, tc.capacity))
			c := l.Config.Offerings[0].Capacity
			if c == nil {
				t.Fatal("no capacity section")
			}
			if c.Pool != tc.pool {
				t.Errorf("pool = %q, want %q", c.Pool, tc.pool)
			}
			if strings.Join(c.Resources, ",") != strings.Join(tc.resources, ",") {
				t.Errorf("resources = %v, want %v", c.Resources, tc.resources)
			}
			if c.OnExceeded != config.CapacityWait || c.Bypass() != 24*time.Hour {
				t.Errorf("on_exceeded %q, max_bypass %v; want wait, 24h", c.OnExceeded, c.Bypass())
			}
			if c.Ratio("cpu") != 2 || c.Ratio("memory") != 1 || c.Ratio("nvidia.com/gpu") != 1 {
				t.Errorf("ratios cpu %v memory %v gpu %v, want 2, 1, 1", c.Ratio("cpu"), c.Ratio("memory"), c.Ratio("nvidia.com/gpu"))
			}
		})
	}
	if c := mustParse(t, oneOffering("okd", "", "")).Config.Offerings[0].Capacity; c != nil {
		t.Errorf("an offering without a capacity section has one: %+v", c)
	}
}

// Every capacity key is checked, and a problem names its key.
func TestCapacityProblems(t *testing.T) {
	const at = "offerings[0].capacity."
	tests := []struct {
		name, capacity, path, message string
	}{
		{"on_exceeded", "{on_exceeded: queue}", at + "on_exceeded", `must be one of wait, reject`},
		{"max_bypass", "{max_bypass: a day}", at + "max_bypass", "must be a duration"},
		{"negative max_bypass", "{max_bypass: -1h}", at + "max_bypass", "must be a duration"},
		{"node_selector", "{node_selector: 'gpu in (a'}", at + "node_selector", "is not a label selector"},
		{"bad resource", "{resources: [GPU!]}", at + "resources[0]", "is not a resource name"},
		{"resource twice", "{resources: [cpu, cpu]}", at + "resources[1]", "listed twice"},
		{"a limit key", "{resources: [limits.cpu]}", at + "resources[0]", "name the resource (cpu)"},
		{"storage without a total", "{resources: [requests.storage]}", at + "resources[0]", "give its total in capacity.fixed"},
		{"fixed not accounted", "{resources: [cpu], fixed: {memory: 1Gi}}", at + "fixed.memory", "not one of capacity.resources"},
		{"fixed not a quantity", "{resources: [cpu], fixed: {cpu: lots}}", at + "fixed.cpu", "is not a quantity"},
		{"fixed negative", "{resources: [cpu], fixed: {cpu: '-4'}}", at + "fixed.cpu", "must not be negative"},
		{"overcommit zero", "{overcommit: {cpu: 0}}", at + "overcommit.cpu", "above 0"},
		{"overcommit not accounted", "{overcommit: {nvidia.com/gpu: 1.5}}", at + "overcommit.nvidia.com/gpu", "not one of capacity.resources"},
		{"unknown key", "{pools: x}", at + "pools", "unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := mustFail(t, oneOffering("namespace", "", "    capacity: "+tc.capacity+"\n"))
			if len(problems) != 1 {
				t.Errorf("got %d problems, want 1:\n%s", len(problems), listProblems(problems))
			}
			p := findProblem(t, problems, tc.path)
			if !strings.Contains(p.Message, tc.message) {
				t.Errorf("message %q does not contain %q", p.Message, tc.message)
			}
		})
	}
}

// Offerings that share a pool must describe it alike; a pool's storage may
// come from fixed.
func TestCapacitySharedPool(t *testing.T) {
	second := func(capacity string) string {
		o := oneOffering("namespace", "", "    capacity: "+capacity+"\n")[len("offerings:\n"):]
		return strings.Replace(o, "name: Test offering", "name: Second", 1)
	}
	ok := oneOffering("okd", "", "    capacity: {pool: p, resources: [cpu, requests.storage], fixed: {requests.storage: 10Ti}}\n") +
		second("{pool: p, resources: [cpu, requests.storage], fixed: {requests.storage: 10Ti}}")
	l := mustParse(t, ok)
	if q, found := l.Config.Offerings[1].Capacity.Total("requests.storage"); !found || q.String() != "10Ti" {
		t.Errorf("fixed requests.storage = %v (%v), want 10Ti", q.String(), found)
	}
	_, problems := mustFail(t, oneOffering("okd", "", "    capacity: {pool: p}\n")+second("{pool: p, overcommit: {cpu: 4}}"))
	p := findProblem(t, problems, "offerings[1].capacity.overcommit")
	if !strings.Contains(p.Message, `pool "p" is described differently by offerings[0]`) {
		t.Errorf("message %q", p.Message)
	}
}
