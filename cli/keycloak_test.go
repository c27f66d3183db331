package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/metrics/metricstest"
)

// keycloakConfig writes the example config with its Keycloak offerings pointed
// at url and, with creds, logging in as the fake's admin; keycloakKeys are
// further keys of each keycloak mapping.
func keycloakConfig(t *testing.T, url, keycloakKeys string, creds bool) string {
	t.Helper()
	return keycloakConfigFrom(t, exampleConfig, url, keycloakKeys, creds)
}

// keycloakConfigFrom is keycloakConfig over another copy of the example config.
func keycloakConfigFrom(t *testing.T, src, url, keycloakKeys string, creds bool) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../examples/site-templates")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(l, "keycloak_username:"), strings.Contains(l, "keycloak_password:"):
			continue
		case strings.Contains(l, "keycloak_url:"):
			ind := l[:len(l)-len(strings.TrimLeft(l, " "))]
			l = ind + "keycloak_url: " + url + "\n" + ind + "requests_per_second: 0"
			if creds {
				l += "\n" + ind + "keycloak_username: admin\n" + ind + "keycloak_password: admin"
			}
			if keycloakKeys != "" {
				l += "\n" + ind + keycloakKeys
			}
		case strings.Contains(l, "templates_dir: site-templates"):
			l = strings.Replace(l, "site-templates", abs, 1)
		}
		lines = append(lines, l)
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, p, strings.Join(lines, "\n"))
	return p
}

// addExampleUsers creates, in the fake, every team member the example renders
// into a group, in the realm of the member's offering.
func addExampleUsers(t *testing.T, s *kctest.Server, cfgPath string) int {
	t.Helper()
	l, st := exampletest.Load(t, cfgPath, exampleSnapshot)
	res := exampletest.Render(t, l.Config, st)
	realms := map[string]string{}
	for _, o := range l.Offerings {
		realms[o.Name] = o.Settings.Common().Keycloak.Realm
	}
	seen := map[string]bool{}
	for _, g := range res.Groups {
		for _, m := range g.Members {
			if key := realms[g.Offering] + "/" + m; !seen[key] {
				seen[key] = true
				s.AddUser(realms[g.Offering], m)
			}
		}
	}
	s.AddRealm("hpc")
	return len(res.Groups)
}

func TestKeycloakCommand(t *testing.T) {
	s := kctest.NewServer()
	defer s.Close()
	cfg := keycloakConfig(t, s.URL, "", true)
	groups := addExampleUsers(t, s, cfg)
	if groups == 0 {
		t.Fatal("the example renders no groups")
	}
	args := []string{"keycloak", "--config", cfg, "--snapshot", exampleSnapshot}

	code, stdout, stderr := run(t, append(args, "--dry-run")...)
	if code != ExitDiff || !strings.Contains(stdout, "+ KeycloakGroup /ns_") || !strings.Contains(stdout, "+ KeycloakMembership ") ||
		!strings.Contains(stdout, "keycloak (dry run): +") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if s.Writes() != 0 {
		t.Fatalf("the dry run wrote %d times", s.Writes())
	}

	code, stdout, stderr = run(t, append(args, "--output", "json")...)
	if code != ExitOK {
		t.Fatalf("first run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep struct {
		Command string `json:"command"`
		Stages  []struct {
			Name  string         `json:"name"`
			Calls map[string]int `json:"calls"`
		} `json:"stages"`
		Counts map[string]map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(rep.Stages) != 3 || rep.Stages[2].Name != "keycloak" || rep.Stages[2].Calls["groups.create"] == 0 || rep.Counts["keycloak"]["create"] == 0 {
		t.Errorf("report: %+v", rep)
	}
	if n := len(s.Paths(kctest.Realm)) + len(s.Paths("hpc")); n != groups {
		t.Errorf("%d groups in Keycloak, the example renders %d", n, groups)
	}

	s.ResetCounts()
	code, stdout, stderr = run(t, args...)
	if code != ExitOK || s.Writes() != 0 || !strings.Contains(stdout, "keycloak") {
		t.Errorf("second run: exit %d, %d writes\n%s\n%s", code, s.Writes(), stdout, stderr)
	}
}

func TestKeycloakCommandFailures(t *testing.T) {
	s := kctest.NewServer()
	down := s.URL
	s.Close()
	s = kctest.NewServer()
	defer s.Close()
	cfg := keycloakConfig(t, s.URL, "", true)
	addExampleUsers(t, s, cfg)

	empty := kctest.NewServer() // no users: every member is missing
	defer empty.Close()
	empty.AddRealm("hpc")
	noCreds := keycloakConfig(t, s.URL, "", false)
	disabled := filepath.Join(t.TempDir(), "disabled.yaml")
	b, _ := os.ReadFile(cfg)
	writeFile(t, disabled, strings.ReplaceAll(string(b), "keycloak_enabled: true", "keycloak_enabled: false"))

	tests := []struct {
		name       string
		config     string
		extra      []string
		code       int
		wantStderr string
	}{
		{"Keycloak down", keycloakConfig(t, down, "max_retries: 1", true), nil, ExitKeycloak, "gave up after 2 attempts"},
		{"no credentials", noCreds, nil, ExitUsage, "set keycloak_username and keycloak_password, or client_secret"},
		{"bad output", cfg, []string{"--output", "xml"}, ExitUsage, "--output must be text, json or yaml"},
		{"missing users", keycloakConfig(t, empty.URL, "", true), nil, ExitPartial, "Keycloak group(s) or membership(s) skipped"},
		{"Keycloak disabled", disabled, nil, ExitOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.ResetCounts()
			code, stdout, stderr := run(t, append([]string{"keycloak", "--config", tc.config, "--snapshot", exampleSnapshot}, tc.extra...)...)
			if code != tc.code || !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("exit %d, want %d with %q\n%s\n%s", code, tc.code, tc.wantStderr, stdout, stderr)
			}
			if tc.name == "Keycloak disabled" && s.Requests() != 0 {
				t.Errorf("Keycloak disabled, yet %d requests", s.Requests())
			}
		})
	}
}

// The keycloak command, run as a CronJob of its own, pushes its metrics to the
// group of its command, so that it does not overwrite those of sync or apply.
func TestKeycloakCommandPushesMetrics(t *testing.T) {
	s := kctest.NewServer()
	defer s.Close()
	var (
		mu     sync.Mutex
		pushes []string
		bodies [][]byte
	)
	pgw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		pushes = append(pushes, r.Method+" "+r.URL.EscapedPath())
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	defer pgw.Close()
	cfg := keycloakConfig(t, s.URL, "", true)
	addExampleUsers(t, s, cfg)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, string(b)+"\nmetrics:\n  pushgateway_url: "+pgw.URL+"\n")
	args := []string{"keycloak", "--config", cfg, "--snapshot", exampleSnapshot}
	if code, stdout, stderr := run(t, append(args, "--dry-run")...); code != ExitDiff {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if len(pushes) != 0 {
		t.Fatalf("the dry run pushed: %v", pushes)
	}
	if code, stdout, stderr := run(t, args...); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pushes) != 1 || !strings.HasPrefix(pushes[0], "PUT ") {
		t.Fatalf("pushes %v, want one PUT", pushes)
	}
	if labels, _ := metricstest.GroupingLabels(pushes[0]); !maps.Equal(labels, map[string]string{"job": "waldur-gitops", "command": "keycloak"}) {
		t.Errorf("pushed to %s, want the group of job waldur-gitops, command keycloak", pushes[0])
	}
	m := parseMetrics(t, bytes.NewReader(bodies[0]))
	if got, _ := m.Value("waldur_gitops_last_run_objects", map[string]string{"stage": "keycloak", "kind": "KeycloakGroup", "action": "create"}); got == 0 {
		t.Error("no created Keycloak group in the pushed metrics")
	}
	if got, _ := m.Value("waldur_gitops_api_requests_total", map[string]string{"api": "keycloak", "call": "groups.create"}); got == 0 {
		t.Error("no Keycloak requests in the pushed metrics")
	}
}
