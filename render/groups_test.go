package render

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// groupPaths lists the paths of the result's groups.
func groupPaths(res *Result) []string {
	var out []string
	for _, g := range res.Groups {
		out = append(out, g.Path())
	}
	return out
}

// TestGroupNamePatterns renders one resource per case and checks the Keycloak
// group names and the places the manifests refer to them.
func TestGroupNamePatterns(t *testing.T) {
	const kc = "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc.example.com/}\n"
	tests := []struct {
		name, backend, settings string
		wantGroups              []string
		// wantInFiles are strings the rendered tree must contain.
		wantInFiles []string
		wantSkip    string
	}{
		{
			name: "site-agent namespace defaults", backend: "k8s-ut-namespace", settings: kc,
			wantGroups:  []string{"/ns_web_admin", "/ns_web_readonly", "/ns_web_readwrite"},
			wantInFiles: []string{"adminGroups:\n  - ns_web_admin"},
		},
		{
			name: "namespace pattern over uuids", backend: "k8s-ut-namespace",
			settings:   kc + "keycloak_groups: {namespace: 'ut-{customer_slug}-{resource_uuid}-{role}'}\n",
			wantGroups: []string{"/ut-test-customer-" + string(resUUID(1)) + "-admin", "/ut-test-customer-" + string(resUUID(1)) + "-readonly", "/ut-test-customer-" + string(resUUID(1)) + "-readwrite"},
		},
		{
			name: "namespace RoleBindings follow the pattern", backend: "namespace",
			settings:    kc + "group_prefix: 'oidc:'\nkeycloak_groups: {namespace: 'k8s_{namespace}_{role}'}\n",
			wantGroups:  []string{"/k8s_waldur-web_admin", "/k8s_waldur-web_readonly", "/k8s_waldur-web_readwrite"},
			wantInFiles: []string{"name: oidc:k8s_waldur-web_admin"},
		},
		{
			name: "namespace binds pattern groups without Keycloak", backend: "namespace",
			settings:    "bind_groups: true\nkeycloak_groups: {namespace: 'k8s_{slug}_{role}'}\n",
			wantInFiles: []string{"name: k8s_web_readonly"},
		},
		{
			name: "rancher site-agent defaults", backend: "rancher", settings: "cluster_id: c-m-test123\n" + kc,
			wantGroups:  []string{"/c_cmtest12", "/c_cmtest12/project_test-project_workloads-manage"},
			wantInFiles: []string{"groupPrincipalName: keycloakoidc_group://project_test-project_workloads-manage"},
		},
		{
			name: "rancher mastermind preset", backend: "rancher",
			settings:    "cluster_id: c-m-test123\n" + kc + "keycloak_groups: {preset: mastermind, cluster_uuid: 5e5e5e5e-0000-4000-8000-000000000001}\n",
			wantGroups:  []string{"/c_5e5e5e5e000040008000000000000001", "/c_5e5e5e5e000040008000000000000001/p_" + projectUUID + "_workloads-manage"},
			wantInFiles: []string{"groupPrincipalName: keycloakoidc_group://p_" + projectUUID + "_workloads-manage"},
		},
		{
			name: "rancher pattern with an empty variable skips the resource", backend: "rancher",
			settings: "cluster_id: c-m-test123\n" + kc + "keycloak_groups: {child: 'p_{project_slug}_{customer_uuid}'}\n",
			wantSkip: "{customer_uuid} is empty",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustConfig(t, tc.backend, tc.settings, "")
			r := resource(1, "web", limits("cpu", 1))
			if tc.wantSkip != "" {
				r.CustomerUUID = ""
			}
			res := mustRender(t, cfg, state([]waldur.Resource{r}, nil, agentTeam()...))
			if tc.wantSkip != "" {
				if reason, ok := res.Skipped[r.UUID]; !ok || !strings.Contains(reason, tc.wantSkip) {
					t.Fatalf("skipped = %v, want the resource skipped with %q", res.Skipped, tc.wantSkip)
				}
				if len(res.Groups) != 0 {
					t.Errorf("a skipped resource has groups: %v", groupPaths(res))
				}
				return
			}
			if len(res.Skipped) > 0 {
				t.Fatalf("skipped: %v", res.Skipped)
			}
			if got := groupPaths(res); !slices.Equal(got, tc.wantGroups) {
				t.Errorf("groups %v, want %v", got, tc.wantGroups)
			}
			files := string(res.Stream())
			for _, s := range tc.wantInFiles {
				if !strings.Contains(files, s) {
					t.Errorf("the manifests lack %q:\n%s", s, files)
				}
			}
		})
	}
}

// Two offerings that need a group of the same path get one entry each: they
// may live in different realms.
func TestGroupsArePerOffering(t *testing.T) {
	text := ""
	for i, name := range []string{"First", "Second"} {
		text += fmt.Sprintf("- name: %s\n  waldur_api_url: https://waldur.example.com/api/\n  waldur_offering_uuid: %032d\n  backend_type: rancher\n"+
			"  backend_settings: {cluster_id: c-m-1, keycloak_enabled: true, keycloak: {keycloak_url: 'https://kc%d.example.com/'}}\n", name, i+1, i)
	}
	l, err := config.Parse([]byte("offerings:\n"+text), t.TempDir()+"/c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &waldur.State{}
	for i, name := range []string{"First", "Second"} {
		r := resource(i+1, fmt.Sprintf("r%d", i), limits("cpu", 1))
		r.OfferingUUID = waldur.UUID(fmt.Sprintf("%032d", i+1))
		st.Offerings = append(st.Offerings, waldur.OfferingState{Name: name, OfferingUUID: r.OfferingUUID, Resources: []waldur.Resource{r},
			Teams: map[waldur.UUID][]waldur.TeamMember{projectUUID: {member(strings.ToLower(name), "member")}}})
	}
	res := mustRender(t, l.Config, st)
	var got []string
	for _, g := range res.Groups {
		got = append(got, g.Offering+" "+g.Path()+" "+strings.Join(g.Members, ","))
	}
	want := []string{"First /c_cm1 ", "Second /c_cm1 ", "First /c_cm1/project_test-project_workloads-manage first", "Second /c_cm1/project_test-project_workloads-manage second"}
	if !slices.Equal(got, want) {
		t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTreeResourceUUIDs(t *testing.T) {
	cfg := mustConfig(t, "namespace", "", "")
	res := mustRender(t, cfg, state([]waldur.Resource{resource(1, "a", limits("cpu", 1)), resource(2, "b", limits("cpu", 1))}, nil))
	got := res.Tree(nil).ResourceUUIDs()
	if len(got) != 2 || !got[resUUID(1)] || !got[resUUID(2)] {
		t.Errorf("resources in the tree: %v", got)
	}
	if n := len(Tree{"x/y/z/kustomization.yaml": []byte("not: [yaml")}.ResourceUUIDs()); n != 0 {
		t.Errorf("a broken kustomization gave %d resources", n)
	}
}
