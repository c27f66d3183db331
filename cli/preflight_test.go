package cli

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// gitSection matches the git: section of a config, comments included.
var gitSection = regexp.MustCompile(`(?m)^git:\n(?:(?:[ #].*)?\n)*`)

// countRequests counts every request the Waldur test server receives, and
// those that write (any method but GET).
func countRequests(srv *waldurtest.Server) (all, writes *atomic.Int32) {
	all, writes = new(atomic.Int32), new(atomic.Int32)
	srv.OnRequest(func(r *http.Request, _ []byte) {
		all.Add(1)
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
	})
	return all, writes
}

// TestIncompleteConfigWritesNothing: a config that lacks a key or credential
// the command needs exits 2 naming it before a single request: no site-agent
// registration, no order moved, no push.
func TestIncompleteConfigWritesNothing(t *testing.T) {
	tests := []struct {
		name string
		args []string
		edit func(t *testing.T, text string) string
		want string
	}{
		{"sync without git:", []string{"sync"}, func(t *testing.T, text string) string {
			return gitSection.ReplaceAllString(text, "")
		}, "git.url is not set"},
		{"sync with the git password unset", []string{"sync"}, func(t *testing.T, text string) string {
			t.Setenv(gitPasswordEnv, "")
			return text
		}, "git.password_env"},
		{"sync without a Waldur token", []string{"sync"}, func(t *testing.T, text string) string {
			t.Setenv("WALDUR_API_TOKEN", "")
			return text
		}, "no Waldur token"},
		{"sync with the Keycloak password unset", []string{"sync"}, func(t *testing.T, text string) string {
			t.Setenv("KC_PASSWORD_UNSET", "")
			text = strings.ReplaceAll(text, "keycloak_enabled: false", "keycloak_enabled: true")
			return strings.Replace(text, `keycloak_password: ""`, "keycloak_password_env: KC_PASSWORD_UNSET", 1)
		}, "keycloak.keycloak_password_env"},
		{"keycloak with the Keycloak password unset", []string{"keycloak"}, func(t *testing.T, text string) string {
			t.Setenv("KC_PASSWORD_UNSET", "")
			text = strings.ReplaceAll(text, "keycloak_enabled: false", "keycloak_enabled: true")
			return strings.Replace(text, `keycloak_password: ""`, "keycloak_password_env: KC_PASSWORD_UNSET", 1)
		}, "keycloak.keycloak_password_env"},
		{"sync with the Pushgateway password unset", []string{"sync"}, func(t *testing.T, text string) string {
			t.Setenv("PUSH_PASSWORD_UNSET", "")
			return text + "\nmetrics:\n  pushgateway_url: http://127.0.0.1:9\n  username: pusher\n  password_env: PUSH_PASSWORD_UNSET\n"
		}, "metrics.password_env"},
		{"report with the Pushgateway password unset", []string{"report"}, func(t *testing.T, text string) string {
			t.Setenv("PUSH_PASSWORD_UNSET", "")
			return text + "\nmetrics:\n  pushgateway_url: http://127.0.0.1:9\n  username: pusher\n  password_env: PUSH_PASSWORD_UNSET\n"
		}, "metrics.password_env"},
		{"apply with a missing kubeconfig", []string{"apply", "--kubeconfig", filepath.Join(t.TempDir(), "absent")}, func(t *testing.T, text string) string {
			return text
		}, "load kubeconfig"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wsrv, waldurCfg := serveExample(t)
			gsrv, _, url := gitRepo(t)
			cfg := withGit(t, waldurCfg, gsrv, url)
			writeFile(t, cfg, tc.edit(t, string(mustRead(t, cfg))))
			all, writes := countRequests(wsrv)

			code, _, stderr := run(t, append(tc.args, "--config", cfg)...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d naming %q\n%s", code, ExitUsage, tc.want, stderr)
			}
			if all.Load() != 0 || writes.Load() != 0 {
				t.Errorf("Waldur got %d request(s), %d of them writes", all.Load(), writes.Load())
			}
			if i, s, p := wsrv.AgentObjects(); i+s+p != 0 {
				t.Errorf("%d identities, %d services, %d processors registered", i, s, p)
			}
			if gsrv.Pushes() != 0 {
				t.Errorf("%d push(es)", gsrv.Pushes())
			}
		})
	}
}

// TestUnknownOfferingIsAnErrorForItAlone: an offering uuid Waldur does not
// know, beside known ones, is an error for that offering: found by reading
// the offering (its listings answer empty pages), it is treated as not read
// (its tenants kept in Git byte for byte, no agent identity registered for
// it), the others commit and move their orders, and the run exits 3 naming
// it and the Waldur it is missing from.
func TestUnknownOfferingIsAnErrorForItAlone(t *testing.T) {
	const unknown = "0bad0bad0bad4bad8bad0bad0bad0bad"
	wsrv, waldurCfg := serveExample(t)
	gsrv, repo, url := gitRepo(t)
	cfg := withGit(t, waldurCfg, gsrv, url)
	if code, _, stderr := run(t, "sync", "--config", cfg); code != ExitOK {
		t.Fatalf("first sync: exit %d\n%s", code, stderr)
	}
	before := gittest.Files(t, repo, "main")

	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	var fresh, okdOrder waldur.UUID
	for _, o := range snap.Offerings {
		r := o.Resources[0]
		switch o.Name {
		case "UT namespaces":
			res := wsrv.AddResource(waldur.Resource{OfferingUUID: o.OfferingUUID, Slug: "fresh-analysis", Name: "Fresh analysis",
				State: waldur.ResourceCreating, ProjectUUID: r.ProjectUUID, ProjectSlug: r.ProjectSlug, ProjectName: r.ProjectName,
				CustomerUUID: r.CustomerUUID, CustomerSlug: r.CustomerSlug, CustomerName: r.CustomerName, Limits: waldur.Limits{"cpu": "1"}})
			fresh = wsrv.AddOrder(o.OfferingUUID, waldur.Order{Type: waldur.OrderCreate, MarketplaceResourceUUID: res})
		case "OKD projects":
			// The config now names a uuid Waldur does not know instead.
			okdOrder = wsrv.AddOrder(o.OfferingUUID, waldur.Order{Type: waldur.OrderUpdate, MarketplaceResourceUUID: r.UUID,
				Limits: waldur.Limits{"cpu": "9"}})
			text := string(mustRead(t, cfg))
			text = strings.Replace(strings.Replace(text, o.OfferingUUID.Dashed(), unknown, 1), string(o.OfferingUUID), unknown, 1)
			writeFile(t, cfg, text)
		}
	}

	code, stdout, stderr := run(t, "sync", "--config", cfg, "--output", "json")
	want := "offering " + unknown + " not found at " + wsrv.URL() + "/api/"
	if code != ExitPartial || !strings.Contains(stderr, want) || !strings.Contains(stderr, `offering "OKD projects" not read`) {
		t.Fatalf("exit %d, want %d naming %q\n%s", code, ExitPartial, want, stderr)
	}
	rep := readReport(t, []byte(stdout))
	var named bool
	for _, e := range rep.Changes {
		named = named || (e.Stage == "waldur" && e.Kind == "Offering" && e.Subject == "OKD projects" && strings.Contains(e.Reason, want))
	}
	if !named || rep.Commit == "" {
		t.Errorf("report: offering named %v, commit %q", named, rep.Commit)
	}
	after := gittest.Files(t, repo, "main")
	for path, data := range before {
		if strings.HasPrefix(path, "waldur/okd-projects/") && after[path] != data {
			t.Errorf("%s changed although its offering was not found", path)
		}
	}
	for path := range after {
		if _, ok := before[path]; !ok && strings.HasPrefix(path, "waldur/okd-projects/") {
			t.Errorf("%s appeared although its offering was not found", path)
		}
	}
	if st := orderState(t, wsrv, string(fresh)); st != waldur.OrderDone {
		t.Errorf("the known offering's new order is %s, want done", st)
	}
	if st := orderState(t, wsrv, string(okdOrder)); st != waldur.OrderPendingProvider {
		t.Errorf("the unknown offering's order is %s, want it unmoved", st)
	}
	for _, id := range wsrv.AgentIdentities() {
		if id.Offering == unknown {
			t.Errorf("agent identity %q registered for the unknown offering", id.Name)
		}
	}
}
