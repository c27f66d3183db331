package render

import (
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/waldur"
)

// agentTeam is the site agent test suite's role fixture: alice manager, bob
// member, carol observer (a role only a custom mapping knows).
func agentTeam() []waldur.TeamMember {
	return []waldur.TeamMember{member("alice", "PROJECT.MANAGER"), member("bob", "member"), member("carol", "observer")}
}

const utComponents = `  backend_components:
    cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}
    ram: {type: ram, measured_unit: GiB, accounting_type: limit, label: RAM}
    storage: {type: storage, measured_unit: GiB, accounting_type: limit, label: Storage}
    gpu: {type: gpu, measured_unit: GPU, accounting_type: limit, label: GPU}
`

func utLimits() waldur.Limits { return limits("cpu", 4, "ram", 8, "storage", 100, "gpu", 1) }

// TestGolden renders one scenario per profile feature and compares the whole
// tree, the Keycloak groups and the skipped resources with a golden file.
func TestGolden(t *testing.T) {
	tests := []struct {
		name, backend, settings, extra string
		st                             *waldur.State
	}{
		{
			name: "k8s-ut/keycloak-users", backend: "k8s-ut-namespace", extra: utComponents,
			settings: "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc.example.com/auth}\nsync_users_to_cr: true\nrole_mapping: {observer: readonly}\nnamespace_labels: {env: prod, team: hpc}\nnamespace_annotations: {contact: admin@example.com}\n",
			st:       state([]waldur.Resource{resource(1, "test-ns", utLimits())}, nil, agentTeam()...),
		},
		{
			name: "k8s-ut/no-keycloak", backend: "k8s-ut-namespace", extra: utComponents,
			st: state([]waldur.Resource{resource(1, "test-ns", limits("cpu", 0, "ram", 0, "storage", 0, "gpu", 0))}, nil, agentTeam()...),
		},
		{
			name: "k8s-ut/custom-mapping", backend: "k8s-ut-namespace",
			extra:    utComponents + "    vram: {type: vram, measured_unit: GiB, accounting_type: limit, label: VRAM}\n",
			settings: "component_quota_mapping: {vram: nvidia.com/vram}\nsync_users_to_cr: true\ncr_user_identity_field: civil_number\ncr_user_identity_lowercase: true\n",
			st:       state([]waldur.Resource{resource(1, "test-ns", limits("cpu", 2, "ram", 4, "vram", 16))}, nil, agentTeam()...),
		},
		{
			name: "k8s-ut/lifecycle", backend: "k8s-ut-namespace", extra: utComponents,
			settings: "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc.example.com/auth/}\n",
			st:       lifecycleState(),
		},
		{
			name: "namespace/groups-and-users", backend: "namespace",
			extra:    "  backend_components:\n    gpu_a100: {type: gpu, k8s_resource: nvidia.com/gpu, measured_unit: GPU, accounting_type: limit, label: A100}\n",
			settings: "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc.example.com/}\ngroup_prefix: 'oidc:'\nuser_prefix: 'oidc:'\nrole_mapping: {observer: readonly}\n",
			st:       state([]waldur.Resource{resource(1, "web", limits("cpu", 4, "ram", 16, "storage", 200, "gpu_a100", 2))}, nil, agentTeam()...),
		},
		{
			name: "namespace/users-only-email", backend: "namespace",
			settings: "user_identity_field: email\nquota_name: compute\ncluster_roles: {readwrite: tenant-editor}\n",
			st:       state([]waldur.Resource{resource(1, "web", limits("cpu", 1.5, "ram", 2))}, nil, agentTeam()...),
		},
		{
			name: "okd/role-bindings", backend: "okd",
			extra: "  backend_components:\n    cpu: {measured_unit: cores, accounting_type: limit, label: CPU}\n    memory: {measured_unit: GiB, accounting_type: limit, label: Memory}\n    storage: {measured_unit: GiB, accounting_type: limit, label: Storage}\n    pods: {measured_unit: pods, accounting_type: limit, label: Pods}\n",
			st: state([]waldur.Resource{resource(1, "alloc-123", limits("cpu", 4, "memory", 8, "storage", 50, "pods", 20))}, nil,
				member("owner", "CUSTOMER.OWNER"), member("manny", "PROJECT.MANAGER"), member("mem", "PROJECT.MEMBER"), member("adm", "PROJECT.ADMIN"),
				waldur.TeamMember{UUID: "ee000000000040008000000000000001", Role: "member", OfferingUserUsername: "John.Doe@Example.COM", OfferingUserState: "OK"}),
		},
		{
			name: "rancher/keycloak-gpu", backend: "rancher",
			extra: "  backend_components:\n    cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}\n    memory: {type: ram, measured_unit: GiB, accounting_type: limit, label: Memory}\n" +
				"    storage: {type: storage, measured_unit: GiB, accounting_type: limit, label: Storage}\n    pods: {type: pods, measured_unit: pods, accounting_type: limit, label: Pods}\n" +
				"    gpu_h100: {type: gpu, k8s_resource: nvidia.com/gpu-h100, measured_unit: GPU, accounting_type: limit, label: H100}\n    gpu_h200: {type: gpu, k8s_resource: nvidia.com/gpu-h200, measured_unit: GPU, accounting_type: limit, label: H200}\n",
			settings: "cluster_id: c-m-test123\nkeycloak_enabled: true\nkeycloak: {keycloak_url: https://kc.example.com/auth/}\nnamespace_labels: {gpu-pool: h100-2x}\n",
			st: state([]waldur.Resource{
				resource(1, "test-resource", limits("cpu", 4, "memory", 8, "storage", 100, "pods", 50, "gpu_h100", 2, "gpu_h200", 4)),
				withBackendID(resource(2, "adopted", limits("cpu", 1)), "c-m-test123:p-x7k2q"),
				resource(3, "", limits("storage", 10)),
			}, nil, agentTeam()...),
		},
		{
			name: "rancher/legacy-binding-no-keycloak", backend: "rancher",
			settings: "cluster_id: local\nbinding_namespace: project\nproject_prefix: ''\n",
			st:       state([]waldur.Resource{resource(1, "plain", limits("cpu", 2, "ram", 3))}, nil, agentTeam()...),
		},
		{
			name: "bad-input", backend: "k8s-ut-namespace", extra: utComponents,
			settings: "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc.example.com/auth/}\n",
			st:       badInputState(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustConfig(t, tt.backend, tt.settings, tt.extra)
			golden(t, tt.name, dump(mustRender(t, cfg, tt.st)))
		})
	}
}

func withBackendID(r waldur.Resource, id string) waldur.Resource {
	r.BackendID = id
	return r
}

// lifecycleState covers every resource state and the order rules.
func lifecycleState() *waldur.State {
	paused := resource(1, "paused", utLimits())
	paused.Paused = true
	down := resource(2, "downscaled", utLimits())
	down.Downscaled = true
	restored := resource(3, "restored", utLimits()) // neither: real limits come back
	updating := resource(4, "updating", utLimits())
	updating.State = waldur.ResourceUpdating
	creatingApproved := resource(5, "creating-approved", utLimits())
	creatingApproved.State = waldur.ResourceCreating
	creatingPending := resource(6, "creating-pending", utLimits())
	creatingPending.State = waldur.ResourceCreating
	terminating := resource(7, "terminating", utLimits())
	terminating.State = waldur.ResourceTerminating
	erred := resource(8, "erred", utLimits())
	erred.State = waldur.ResourceErred
	restricted := resource(9, "restricted", utLimits())
	restricted.RestrictMemberAccess = true
	order := func(i int, typ, st string, r waldur.Resource, l waldur.Limits) waldur.Order {
		return waldur.Order{UUID: waldur.UUID(strings.Replace(string(resUUID(i)), "a", "d", 1)), Type: typ, State: st, MarketplaceResourceUUID: r.UUID, Limits: l}
	}
	return state(
		[]waldur.Resource{paused, down, restored, updating, creatingApproved, creatingPending, terminating, erred, restricted},
		[]waldur.Order{
			order(1, waldur.OrderUpdate, waldur.OrderExecuting, updating, limits("cpu", 16, "ram", 64, "storage", 100, "gpu", 2)),
			order(2, waldur.OrderUpdate, waldur.OrderPendingProvider, restored, limits("cpu", 99)),
			order(3, waldur.OrderCreate, waldur.OrderExecuting, creatingApproved, nil),
			order(4, waldur.OrderCreate, waldur.OrderPendingProvider, creatingPending, nil),
			order(5, waldur.OrderTerminate, waldur.OrderExecuting, terminating, nil),
		},
		member("alice", "PROJECT.ADMIN"), member("bob", "PROJECT.MEMBER"),
		waldur.TeamMember{UUID: "ee000000000040008000000000000002", Role: "PROJECT.MEMBER", OfferingUserUsername: "", OfferingUserState: "Requested"},
		waldur.TeamMember{UUID: "ee000000000040008000000000000003", Role: "PROJECT.MEMBER", OfferingUserUsername: "gone", OfferingUserState: "Deleted"},
	)
}

// badInputState holds one good resource and one of every kind of bad input.
func badInputState() *waldur.State {
	rs := []waldur.Resource{
		resource(1, "good", utLimits()),
		resource(2, "", utLimits()),
		resource(3, strings.Repeat("a", 57), utLimits()),
		resource(4, "Waldur-Test", utLimits()),
		resource(5, "bad_name!", utLimits()),
		resource(6, "bad-", utLimits()),
		resource(7, "negative", limits("cpu", -1, "ram", 8)),
		resource(8, "not-a-number", limits("cpu", "four", "ram", 8)),
		resource(9, "unmapped", limits("cpu", 1, "fpga", 2)),
		resource(10, "good", utLimits()), // same slug as 1, created later
		resource(11, "evil\n---\nkind: Secret", utLimits()),
		resource(12, "bad-uuid", utLimits()),
	}
	rs[11].UUID = "not-a-uuid"
	return state(rs, nil, member("alice", "manager"))
}

// TestSiteAgentQuotaCases checks the site agent's own k8s-ut-namespace and rancher
// conversions value by value.
func TestSiteAgentQuotaCases(t *testing.T) {
	tests := []struct {
		name, backend, settings, extra string
		limits                         waldur.Limits
		kind                           string
		path                           []string
		want                           map[string]any
	}{
		{"k8s-ut units", "k8s-ut-namespace", "", utComponents, utLimits(), "ManagedNamespace", []string{"spec", "quota"},
			map[string]any{"cpu": "4", "memory": "8Gi", "storage": "100Gi", "gpu": "1"}},
		{"k8s-ut zeros", "k8s-ut-namespace", "", utComponents, limits("cpu", 0, "ram", 0, "storage", 0, "gpu", 0), "ManagedNamespace", []string{"spec", "quota"},
			map[string]any{"cpu": "0", "memory": "0Gi", "storage": "0Gi", "gpu": "0"}},
		{"k8s-ut custom mapping merges over defaults", "k8s-ut-namespace", "component_quota_mapping: {vram: nvidia.com/vram}", utComponents,
			limits("cpu", 8, "ram", 16, "vram", 3), "ManagedNamespace", []string{"spec", "quota"},
			map[string]any{"cpu": "8", "memory": "16Gi", "nvidia.com/vram": "3"}},
		{"rancher formats", "rancher", "cluster_id: c-m-test123",
			"  backend_components:\n    memory: {type: ram, measured_unit: GiB, accounting_type: limit, label: M}\n",
			limits("cpu", 4, "memory", 8, "storage", 100, "gpu", 2), "ResourceQuota", []string{"spec", "hard"},
			map[string]any{"limits.cpu": "4000m", "limits.memory": "8192Mi", "requests.storage": "102400Mi", "requests.nvidia.com/gpu": "2"}},
		{"okd doubles limits", "okd", "", "", limits("cpu", 3, "memory", 5, "storage", 7, "pods", 9), "ResourceQuota", []string{"spec", "hard"},
			map[string]any{"requests.cpu": "3", "limits.cpu": "6", "requests.memory": "5Gi", "limits.memory": "10Gi", "requests.storage": "7Gi", "pods": "9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRender(t, mustConfig(t, tt.backend, tt.settings, tt.extra), state([]waldur.Resource{resource(1, "test-ns", tt.limits)}, nil))
			if len(res.Skipped) > 0 {
				t.Fatalf("skipped: %v", res.Skipped)
			}
			obj := findObject(t, res, tt.kind)
			got := nested(obj, tt.path...)
			if len(got) != len(tt.want) {
				t.Fatalf("%s = %v, want %v", strings.Join(tt.path, "."), got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s[%s] = %v, want %v", strings.Join(tt.path, "."), k, got[k], v)
				}
			}
		})
	}
}

func findObject(t *testing.T, res *Result, kind string) manifest.Object {
	t.Helper()
	for _, tn := range res.Tenants {
		for _, o := range tn.Objects {
			if o.Kind() == kind {
				return o
			}
		}
	}
	t.Fatalf("no %s rendered", kind)
	return nil
}

func nested(o manifest.Object, path ...string) map[string]any {
	cur := map[string]any(o)
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}
