package diagnose_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/internal/testenv/registrytest"
	"github.com/waldur/waldur-gitops/kube"
)

// noDeps fails every other client: only the registry check matters here.
var noDeps = diagnose.Deps{
	Waldur:   func(*config.Offering) (diagnose.WaldurAPI, error) { return nil, errors.New("not in this test") },
	Git:      func(config.Git) (diagnose.GitRemote, error) { return nil, errors.New("not in this test") },
	Keycloak: func(config.KeycloakSettings) (diagnose.Keycloak, error) { return nil, errors.New("not in this test") },
	Cluster:  func(kube.Source) (diagnose.ClusterAPI, error) { return nil, errors.New("not in this test") },
}

// In the OCI layout diagnose checks the registry with the configured
// credentials: a pass names the shard repository it tried, a refusal fails
// with the credential's key and never its value.
func TestRegistryCheck(t *testing.T) {
	const user, pw = "pusher", "diag-registry-7c1d"
	host := registrytest.Start(t, registrytest.BasicAuth(user, pw))
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "registry-password")
	for _, tc := range []struct {
		name, password string
		ok             bool
	}{{"right password", pw, true}, {"wrong password", "wrong-" + pw, false}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(pwFile, []byte(tc.password), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := config.Parse([]byte(`git:
  url: /srv/t.git
  flux_shards: 2
  flux_oci_repository: `+host+`/site/tenants
  flux_oci_insecure: true
  flux_oci_username: `+user+`
  flux_oci_password_file: registry-password
offerings:
- name: Plain
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: `+string(offering)+`
  backend_type: namespace
`), filepath.Join(dir, "c.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var checks []diagnose.Check
			for _, c := range diagnose.Checks(l.Config, "", noDeps) {
				if c.Name == "flux registry" {
					checks = append(checks, c)
				}
			}
			if len(checks) != 1 {
				t.Fatalf("%d registry checks", len(checks))
			}
			r := run(t, checks)[0]
			if r.OK != tc.ok || !strings.Contains(r.Credential, "git.flux_oci_password_file") || strings.Contains(r.Detail+r.Credential, pw) {
				t.Errorf("result %+v", r)
			}
			if tc.ok && (!strings.Contains(r.Detail, "/site/tenants/waldur-plain-cluster-00:latest") || !strings.Contains(r.Detail, "push accepted")) {
				t.Errorf("detail %q", r.Detail)
			}
		})
	}
}
