package engine_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
)

// TestFromConfigChecksWhatTheVerbNeeds: FromConfig refuses, as a config
// error naming the key, a config that lacks what the seams it wires will
// use, and accepts the same config for a verb that does not use it.
func TestFromConfigChecksWhatTheVerbNeeds(t *testing.T) {
	dir := t.TempDir()
	snapshot := filepath.Join(dir, "state.json") // never read: FromConfig makes no call
	parse := func(t *testing.T, extra string) *config.Config {
		t.Helper()
		l, err := config.Parse([]byte(extra+`offerings:
- name: Plain
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: `+offeringUUID+`
  backend_type: namespace
  backend_settings:
    keycloak_enabled: true
    keycloak: {keycloak_url: "https://keycloak.example.org/", keycloak_realm: hpc}
`), filepath.Join(dir, "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return l.Config
	}
	tests := []struct {
		name  string
		extra string
		env   map[string]string
		opts  engine.Options
		want  string // "" for no error
	}{
		{"render --out needs nothing more", "", nil, engine.Options{Snapshot: snapshot, Publish: engine.Directory, Dir: dir}, ""},
		{"a Git publish needs git.url", "", nil, engine.Options{Snapshot: snapshot, Publish: engine.Git}, "git.url is not set"},
		{"a Git publish needs its credential", "git: {url: https://git.example.org/t.git, username: bot, password_env: GIT_UNSET}\n",
			map[string]string{"GIT_UNSET": ""}, engine.Options{Snapshot: snapshot, Publish: engine.Git}, "git.password_env"},
		{"the API needs a token", "", map[string]string{"WALDUR_API_TOKEN": ""}, engine.Options{Publish: engine.Directory, Dir: dir}, "offering Plain: no Waldur token"},
		{"an apply needs its clusters", "", nil, engine.Options{Snapshot: snapshot, Publish: engine.Cluster,
			Apply: apply.Options{Kubeconfig: filepath.Join(dir, "absent")}}, "load kubeconfig"},
		{"Keycloak needs credentials", "", nil, engine.Options{Snapshot: snapshot, Identities: true}, "unusable Keycloak connection settings"},
		{"a dry run leaves a realm without credentials out", "", nil, engine.Options{Snapshot: snapshot, Identities: true, DryRun: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WALDUR_API_TOKEN", "0123456789abcdef0123456789abcdef01234567")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := engine.FromConfig(parse(t, tc.extra), tc.opts)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want) || failure.ExitCode(err) != failure.ExitUsage:
				t.Fatalf("error %v (exit %d), want exit %d naming %q", err, failure.ExitCode(err), failure.ExitUsage, tc.want)
			case !strings.HasPrefix(err.Error(), "the config is incomplete for this command, nothing was done: "):
				t.Errorf("error %q does not say that nothing was done", err)
			}
		})
	}
}
