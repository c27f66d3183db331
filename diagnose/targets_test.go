package diagnose_test

import (
	"cmp"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/kube"
)

// TestClusterChecksFollowTargets checks the cluster of every target an
// offering's backend registers, as apply talks to them: a rancher offering's
// management cluster is checked when its management_kubeconfig_path or its
// management_kubeconfig_context names another one.
func TestClusterChecksFollowTargets(t *testing.T) {
	for _, tc := range []struct {
		name, backend, settings string
		want                    []kube.Source
	}{
		{"namespace", "namespace", "{kubeconfig_path: /k}", []kube.Source{{Path: "/k"}}},
		{"rancher on one cluster", "rancher", "{cluster_id: c-1, kubeconfig_path: /k}", []kube.Source{{Path: "/k"}}},
		{"rancher management elsewhere", "rancher", "{cluster_id: c-1, kubeconfig_path: /k, kubeconfig_context: a, management_kubeconfig_path: /m}",
			[]kube.Source{{Path: "/k", Context: "a"}, {Path: "/m"}}},
		{"rancher management context only", "rancher", "{cluster_id: c-1, kubeconfig_path: /k, management_kubeconfig_context: local}",
			[]kube.Source{{Path: "/k"}, {Path: "/k", Context: "local"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "offerings:\n- name: Alpha\n  waldur_api_url: https://waldur.example.org/api/\n  waldur_offering_uuid: " + string(offering) +
				"\n  backend_type: " + tc.backend + "\n  backend_settings: " + tc.settings + "\n"
			l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu     sync.Mutex
				opened []kube.Source
			)
			run(t, diagnose.Checks(l.Config, "", diagnose.Deps{
				Waldur:   func(*config.Offering) (diagnose.WaldurAPI, error) { return fakeWaldur{}, nil },
				Git:      func(config.Git) (diagnose.GitRemote, error) { return nil, errors.New("no git here") },
				Keycloak: func(config.KeycloakSettings) (diagnose.Keycloak, error) { return fakeKeycloak{}, nil },
				Cluster: func(s kube.Source) (diagnose.ClusterAPI, error) {
					mu.Lock()
					defer mu.Unlock()
					opened = append(opened, s)
					return fakeCluster{version: "v1.33.13"}, nil
				},
			}))
			slices.SortFunc(opened, func(a, b kube.Source) int {
				return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Context, b.Context))
			})
			if !slices.Equal(opened, tc.want) {
				t.Errorf("clusters checked %+v, want %+v", opened, tc.want)
			}
		})
	}
}
