package config_test

import (
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/config"
)

// groupsSettings are the settings of the test backends below.
type groupsSettings struct {
	config.CommonSettings `yaml:",inline"`
}

// Which keycloak_groups keys apply to a backend is its registration's
// KeycloakGroups, not its name: a backend with settings of its own gets the
// checks of the groups it declares.
func TestKeycloakGroupsFromRegistration(t *testing.T) {
	for typ, groups := range map[string]backend.Groups{
		"groups-none-test": backend.NoGroups, "groups-ns-test": backend.NamespaceGroups, "groups-cluster-test": backend.ClusterGroups,
	} {
		backend.Register(backend.Backend{
			Type: typ, Order: 70, DefaultTarget: backend.TargetCluster, Targets: []string{backend.TargetCluster},
			Settings: func() any { return &groupsSettings{} }, Render: struct{}{}, KeycloakGroups: groups,
		})
		t.Cleanup(func() { backend.Unregister(typ) })
	}
	for _, tc := range []struct {
		name, typ, groups, want string
	}{
		{"namespace pattern where namespace groups are", "groups-ns-test", `{namespace: "g_{slug}_{role}"}`, ""},
		{"parent where namespace groups are", "groups-ns-test", `{parent: "c_x"}`, "keycloak_groups.parent (line 7): has no effect for backend type groups-ns-test"},
		{"cluster variable where namespace groups are", "groups-ns-test", `{namespace: "g_{cluster_id}_{slug}_{role}"}`, "{cluster_id} is only known for backend type rancher"},
		{"namespace pattern without groups", "groups-none-test", `{namespace: "g_{slug}_{role}"}`, "keycloak_groups.namespace (line 7): has no effect for backend type groups-none-test"},
		{"cluster groups", "groups-cluster-test", `{parent: "c_{cluster_id_short}", child: "p_{project_slug}"}`, ""},
		{"cluster groups without a project", "groups-cluster-test", `{child: "p_x"}`, "keycloak_groups.child (line 7): \"p_x\" must contain one of"},
		{"namespace pattern where cluster groups are", "groups-cluster-test", `{namespace: "g_{slug}_{role}"}`, "keycloak_groups.namespace (line 7): has no effect for backend type groups-cluster-test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "offerings:\n  - name: Groups\n    waldur_api_url: https://waldur.example.org\n    waldur_offering_uuid: 66c0217f031fec833da0e057be1c007e\n" +
				"    backend_type: " + tc.typ + "\n    backend_settings:\n      keycloak_groups: " + tc.groups + "\n"
			_, err := config.Parse([]byte(doc), "groups.yaml")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
