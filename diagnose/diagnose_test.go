package diagnose_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/diagnose"
	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

const offering = waldur.UUID("0ff0000000004000800000000000000c")

func run(t *testing.T, checks []diagnose.Check) []diagnose.Result {
	t.Helper()
	return diagnose.Run(context.Background(), checks, diagnose.Options{Timeout: 10 * time.Second})
}

func offeringConfig(t *testing.T, url string, components string) *config.Offering {
	t.Helper()
	text := "offerings:\n- name: Plain\n  waldur_api_url: " + url + "\n  waldur_offering_uuid: " + string(offering) +
		"\n  backend_type: namespace\n  backend_components:\n" + components
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return &l.Offerings[0]
}

func waldurClient(t *testing.T, srv *waldurtest.Server, token string) *waldur.Client {
	t.Helper()
	opts := waldur.DefaultClientOptions()
	opts.BaseURL, opts.Token, opts.RetryMax = srv.URL(), token, 0
	c, err := waldur.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWaldurChecks(t *testing.T) {
	srv := waldurtest.New(t, waldurtest.AllowPath("/api/users/me/"), waldurtest.AllowPath("/api/marketplace-provider-offerings/"))
	srv.AddOffering(waldur.ProviderOffering{UUID: offering, Name: "Plain k8s", Type: "Marketplace.Slurm",
		Components: []waldur.OfferingComponent{{Type: "cpu", BillingType: "limit"}}})
	srv.SetCurrentUser(waldur.User{Username: "svc-gitops"})

	o := offeringConfig(t, srv.URL(), "    cpu: {accounting_type: limit}\n    setup: {accounting_type: one}\n")
	rs := run(t, diagnose.WaldurChecks(o, waldurClient(t, srv, srv.Token()), nil))
	if diagnose.Failed(rs) != 0 || rs[0].Detail != "authenticated as svc-gitops" || !strings.Contains(rs[1].Detail, `"Plain k8s", state Active`) {
		t.Errorf("healthy: %+v", rs)
	}

	rs = run(t, diagnose.WaldurChecks(o, waldurClient(t, srv, strings.Repeat("0", 40)), nil))
	if diagnose.Failed(rs) != 1 || !strings.Contains(rs[0].Detail, "401") || !strings.Contains(rs[0].Detail, "check waldur_api_token") ||
		rs[1].Status != diagnose.StatusSkipped || rs[1].Detail != "skipped: waldur token failed" {
		t.Errorf("bad token: the offering check must be skipped, not repeat the failure: %+v", rs)
	}

	other := offeringConfig(t, srv.URL(), "    cpu: {accounting_type: limit}\n")
	other.WaldurOfferingUUID = "0ff0000000004000800000000000dead"
	rs = run(t, diagnose.WaldurChecks(other, waldurClient(t, srv, srv.Token()), nil))
	if rs[0].OK == false || rs[1].OK || !strings.Contains(rs[1].Detail, "not its provider") {
		t.Errorf("unknown offering: %+v", rs)
	}

	gpu := offeringConfig(t, srv.URL(), "    cpu: {accounting_type: limit}\n    gpu: {accounting_type: limit}\n")
	rs = run(t, diagnose.WaldurChecks(gpu, waldurClient(t, srv, srv.Token()), nil))
	if rs[1].OK || !strings.Contains(rs[1].Detail, "components the offering lacks: gpu") {
		t.Errorf("missing component: %+v", rs)
	}

	rs = run(t, diagnose.WaldurChecks(o, nil, errors.New("offering Plain: no Waldur token")))
	if diagnose.Failed(rs) != 1 || rs[0].Detail != "offering Plain: no Waldur token" || rs[1].Detail != "skipped: waldur token failed" {
		t.Errorf("no client: %+v", rs)
	}
}

func gitConfig(t *testing.T, url, user, password string) config.Git {
	t.Helper()
	t.Setenv("DIAGNOSE_TEST_GIT_PASSWORD", password)
	return config.Git{URL: url, Branch: "main", Username: user, PasswordEnv: "DIAGNOSE_TEST_GIT_PASSWORD"}
}

func gitChecks(t *testing.T, g config.Git) []diagnose.Result {
	t.Helper()
	remote, err := diagnose.NewGitRemote(g)
	return run(t, diagnose.GitChecks(g, remote, err))
}

func TestGitChecks(t *testing.T) {
	srv := gittest.NewServer(t)
	url := srv.CreateRepo(t, "tenants.git", "main")

	rs := gitChecks(t, gitConfig(t, url, srv.User(), srv.Password()))
	if diagnose.Failed(rs) != 0 || !strings.Contains(rs[0].Detail, "branch main does not exist yet") {
		t.Errorf("empty repository: %+v", rs)
	}
	head := gittest.Commit(t, srv.RepoDir("tenants.git"), "main", map[string]string{"README.md": "hi\n"}, "seed")
	rs = gitChecks(t, gitConfig(t, url, srv.User(), srv.Password()))
	if diagnose.Failed(rs) != 0 || rs[0].Detail != "branch main at "+head[:12] || !strings.Contains(rs[1].Detail, "push session accepted") {
		t.Errorf("healthy: %+v", rs)
	}
	if srv.Pushes() != 0 {
		t.Errorf("the write check pushed %d time(s)", srv.Pushes())
	}

	rs = gitChecks(t, gitConfig(t, url, srv.User(), "wrong-password"))
	if diagnose.Failed(rs) != 1 || !strings.Contains(rs[0].Detail, "authentication") || strings.Contains(rs[0].Detail, "wrong-password") ||
		rs[1].Detail != "skipped: git read failed" {
		t.Errorf("wrong password: %+v", rs)
	}

	// A host that lets these credentials fetch but not push.
	target, _ := urlParse(srv.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	readOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, "service=git-receive-pack") || strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			http.Error(w, "Permission to tenants.git denied", http.StatusForbidden)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(readOnly.Close)
	rs = gitChecks(t, gitConfig(t, readOnly.URL+"/tenants.git", srv.User(), srv.Password()))
	if !rs[0].OK || rs[1].OK || !strings.Contains(rs[1].Detail, "open a push session") {
		t.Errorf("read-only credentials: %+v", rs)
	}

	// A local repository.
	local := filepath.Join(t.TempDir(), "local.git")
	gittest.InitBare(t, local, "main")
	rs = gitChecks(t, config.Git{URL: local, Branch: "main"})
	if diagnose.Failed(rs) != 0 {
		t.Errorf("local: %+v", rs)
	}
	rs = gitChecks(t, config.Git{URL: filepath.Join(t.TempDir(), "missing.git"), Branch: "main"})
	if rs[0].OK {
		t.Errorf("missing local repository: %+v", rs)
	}
}

func urlParse(s string) (*url.URL, error) { return url.Parse(s) }

// keycloakFake answers the token endpoint of realm master and the groups of
// realm hpc, for user admin with password pw.
func keycloakFake(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/auth/realms/master/protocol/openid-connect/token":
			_ = r.ParseForm()
			if r.Form.Get("grant_type") != "password" || r.Form.Get("username") != "admin" || r.Form.Get("password") != "pw" {
				w.WriteHeader(http.StatusUnauthorized)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "Invalid user credentials"})
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-123", "expires_in": 60, "token_type": "Bearer"})
		case r.URL.Path == "/auth/admin/realms/hpc/groups" && r.Header.Get("Authorization") == "Bearer tok-123":
			_ = json.NewEncoder(w).Encode([]map[string]string{{"id": "g1", "name": "ns_a_admin"}})
		case strings.HasPrefix(r.URL.Path, "/auth/admin/realms/"):
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "Realm not found."})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestKeycloakChecks(t *testing.T) {
	kc := keycloakFake(t)
	settings := func(realm, password string) config.KeycloakSettings {
		timeout := 5
		return config.KeycloakSettings{URL: kc.URL + "/auth/", Realm: realm, UserRealm: "master", ClientID: "admin-cli",
			Username: "admin", Password: config.Secret(password), TimeoutSeconds: &timeout}
	}
	check := func(k config.KeycloakSettings) []diagnose.Result {
		c, err := diagnose.NewKeycloak(k, 0)
		return run(t, diagnose.KeycloakChecks(k, c, err))
	}
	rs := check(settings("hpc", "pw"))
	if diagnose.Failed(rs) != 0 || rs[0].Detail != "logged in as admin" || rs[1].Detail != "groups readable" {
		t.Errorf("healthy: %+v", rs)
	}
	rs = check(settings("hpc", "nope"))
	if diagnose.Failed(rs) != 1 || !strings.Contains(rs[0].Detail, "401") || strings.Contains(rs[0].Detail, "nope") ||
		rs[1].Detail != "skipped: keycloak login failed" {
		t.Errorf("wrong password: %+v", rs)
	}
	rs = check(settings("missing", "pw"))
	if !rs[0].OK || rs[1].OK || !strings.Contains(rs[1].Detail, "404") {
		t.Errorf("missing realm: %+v", rs)
	}
	rs = check(config.KeycloakSettings{URL: kc.URL + "/auth/", Realm: "hpc", UserRealm: "master", ClientID: "admin-cli"})
	if rs[0].OK || !strings.Contains(rs[0].Detail, "no credentials") {
		t.Errorf("no credentials: %+v", rs)
	}
}

type fakeCluster struct {
	version string
	listErr error
	// denied holds what the account may not do (kube.Access.String).
	denied map[string]bool
}

func (f fakeCluster) Version(context.Context) (string, error) { return f.version, nil }
func (f fakeCluster) CanList(context.Context) error           { return f.listErr }
func (f fakeCluster) Allowed(_ context.Context, a kube.Access) (bool, error) {
	return !f.denied[a.String()], nil
}

// With order_done_on: applied and Flux and Argo CD as consumers, the
// cluster row of the waiting offering also asks whether the account may read
// the shard Kustomizations and the Applications, and names the Roles that
// grant what it may not; an offering that does not wait asks nothing more.
// With git.flux_reconcile a row checks the reconcile requests in Flux's
// cluster.
func TestConsumerAccessChecks(t *testing.T) {
	text := `git:
  url: https://git.example.org/t.git
  flux_shards: 4
  flux_reconcile: true
  flux_kubeconfig_path: /k/flux.yaml
  flux_oci_repository: registry.example.org/site/tenants
  argocd_namespace: argo
offerings:
- name: Waits
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: 0ff00000000040008000000000000001
  backend_type: namespace
  order_done_on: applied
  backend_settings: {kubeconfig_path: /k/waits.yaml}
- name: Commits
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: 0ff00000000040008000000000000002
  backend_type: namespace
  backend_settings: {kubeconfig_path: /k/commits.yaml}
`
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const (
		getKs     = "get kustomizations.kustomize.toolkit.fluxcd.io in namespace flux-system"
		listApps  = "list applications.argoproj.io in namespace argo"
		patchGit  = "patch gitrepositories.source.toolkit.fluxcd.io/waldur-tenants in namespace flux-system"
		patchOCIs = "patch ocirepositories.source.toolkit.fluxcd.io in namespace flux-system"
	)
	tests := []struct {
		name   string
		denied []string
		want   map[string]string // row target → status and a piece of its detail
	}{
		{"all granted", nil, map[string]string{
			"/k/waits.yaml":   "pass: may " + getKs + "; may " + listApps,
			"/k/commits.yaml": "pass: server v1.33.13; namespaces and resourcequotas readable",
			"/k/flux.yaml":    "pass: may " + patchGit + ", " + patchOCIs,
		}},
		{"none granted", []string{getKs, listApps, patchGit, patchOCIs}, map[string]string{
			"/k/waits.yaml":   "fail: order_done_on: applied reads the GitOps consumer and this account may not " + getKs + ", nor " + listApps + " (the Roles in examples/rbac/consumers grant it)",
			"/k/commits.yaml": "pass: server v1.33.13; namespaces and resourcequotas readable",
			"/k/flux.yaml":    "fail: this account may not " + patchGit + ", nor " + patchOCIs,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			denied := map[string]bool{}
			for _, d := range tc.denied {
				denied[d] = true
			}
			checks := diagnose.Checks(l.Config, "", diagnose.Deps{
				Waldur: func(*config.Offering) (diagnose.WaldurAPI, error) { return fakeWaldur{}, nil },
				Git:    func(config.Git) (diagnose.GitRemote, error) { return nil, errors.New("no git here") },
				Cluster: func(kube.Source) (diagnose.ClusterAPI, error) {
					return fakeCluster{version: "v1.33.13", denied: denied}, nil
				},
			})
			got := map[string]string{}
			for _, r := range run(t, checks) {
				if r.Name == "cluster" || r.Name == "flux reconcile" {
					got[r.Target] = r.Status + ": " + r.Detail
				}
			}
			for target, want := range tc.want {
				status, piece, _ := strings.Cut(want, ": ")
				if !strings.HasPrefix(got[target], status+": ") || !strings.Contains(got[target], piece) {
					t.Errorf("%s: %q, want %s with %q", target, got[target], status, piece)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("rows %v", got)
			}
		})
	}
}

func TestClusterCheckAndTable(t *testing.T) {
	open := func(s kube.Source) (diagnose.ClusterAPI, error) {
		switch s.Path {
		case "good":
			return fakeCluster{version: "v1.33.13"}, nil
		case "forbidden":
			return fakeCluster{version: "v1.33.13", listErr: errors.New(`list resourcequotas: resourcequotas is forbidden: User "x" cannot list`)}, nil
		}
		return nil, errors.New("load kubeconfig " + s.Path + ": no such file")
	}
	slow := diagnose.Check{Name: "slow", Target: "t", Run: func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}
	rs := diagnose.Run(context.Background(), []diagnose.Check{
		diagnose.ClusterCheck(kube.Source{Path: "good"}, open),
		diagnose.ClusterCheck(kube.Source{Path: "forbidden", Context: "prod"}, open),
		diagnose.ClusterCheck(kube.Source{Path: "missing"}, open),
		slow,
	}, diagnose.Options{Timeout: 50 * time.Millisecond})
	if !rs[0].OK || rs[0].Detail != "server v1.33.13; namespaces and resourcequotas readable" {
		t.Errorf("good: %+v", rs[0])
	}
	if rs[1].OK || rs[1].Target != "forbidden (context prod)" || !strings.Contains(rs[1].Detail, "forbidden") {
		t.Errorf("forbidden: %+v", rs[1])
	}
	if rs[2].OK || !strings.Contains(rs[2].Detail, "no such file") {
		t.Errorf("missing: %+v", rs[2])
	}
	if rs[3].OK || !strings.Contains(rs[3].Detail, "no answer within 50ms") {
		t.Errorf("slow: %+v", rs[3])
	}
	var b strings.Builder
	if err := diagnose.WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "CHECK") || !strings.Contains(out, "pass") || strings.Count(out, "FAIL") != 3 || !strings.HasSuffix(out, "4 check(s), 3 failed, 0 skipped\n") {
		t.Errorf("table:\n%s", out)
	}
}

// TestTargetsAndDetailsAreRedacted: a URL with user information (which Load
// refuses, but a config built in code might carry) and a registered secret
// echoed by a failing check never reach a result, in the table or in JSON.
func TestTargetsAndDetailsAreRedacted(t *testing.T) {
	const pw = "diag-pa55word-e41f"
	redact.Register("diag-registered-secret-9a")
	o := &config.Offering{Name: "Plain", WaldurAPIURL: "https://ana:" + pw + "@waldur.example.org/api/", WaldurOfferingUUID: string(offering)}
	checks := diagnose.WaldurChecks(o, nil, errors.New("dial with diag-registered-secret-9a failed at https://u:"+pw+"@h/"))
	kc := config.KeycloakSettings{URL: "https://admin:" + pw + "@sso.example.org/", Realm: "waldur", UserRealm: "master"}
	checks = append(checks, diagnose.KeycloakChecks(kc, nil, errors.New("no client"))...)
	checks = append(checks, diagnose.Check{Name: "ok", Target: "x", Run: func(context.Context) (string, error) {
		return "token " + url.QueryEscape("diag-registered-secret-9a"), nil
	}})
	rs := run(t, checks)
	var table strings.Builder
	if err := diagnose.WriteTable(&table, rs); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(rs)
	for _, out := range []string{table.String(), string(js)} {
		for _, s := range []string{pw, "diag-registered-secret-9a"} {
			if strings.Contains(out, s) {
				t.Errorf("output shows %q:\n%s", s, out)
			}
		}
	}
	if !strings.Contains(table.String(), "Plain (https://waldur.example.org/api/)") || !strings.Contains(table.String(), "https://sso.example.org realm master") {
		t.Errorf("targets lost their host:\n%s", table.String())
	}
}

type fakeKeycloak struct{}

func (fakeKeycloak) Login(context.Context) error             { return errors.New("401 invalid_grant") }
func (fakeKeycloak) ReadGroups(context.Context) (int, error) { return 0, errors.New("401") }

type fakeWaldur struct{}

func (fakeWaldur) CurrentUser(context.Context) (*waldur.User, error) {
	return &waldur.User{Username: "svc"}, nil
}
func (fakeWaldur) GetProviderOffering(context.Context, waldur.UUID) (*waldur.ProviderOffering, error) {
	return &waldur.ProviderOffering{Name: "x", State: "Active"}, nil
}

// TestChecksNameOfferingsAndCredentials: two offerings on one Keycloak, each
// with its own realm and password, give rows that say which offering and
// which credential each tests; the cluster of an offering without
// kubeconfig_path is checked with client-go's default rules.
func TestChecksNameOfferingsAndCredentials(t *testing.T) {
	t.Setenv(config.TokenEnv, "")
	text := `git:
  url: https://git.example.org/t.git
  username: bot
  token_file: /run/git/token
offerings:
- name: Alpha
  waldur_api_url: https://waldur.example.org/api/
  waldur_api_token_file: /run/waldur/alpha
  waldur_offering_uuid: 0ff00000000040008000000000000001
  backend_type: namespace
  backend_settings:
    kubeconfig_path: /k/alpha.yaml
    keycloak_enabled: true
    keycloak:
      keycloak_url: https://sso.example.org/
      keycloak_realm: alpha
      keycloak_username: gitops-alpha
      keycloak_password_env: KC_ALPHA
- name: Beta
  waldur_api_url: https://waldur.example.org/api/
  waldur_api_token_file: /run/waldur/beta
  waldur_offering_uuid: 0ff00000000040008000000000000002
  backend_type: namespace
  backend_settings:
    keycloak_enabled: true
    keycloak:
      keycloak_url: https://sso.example.org/
      keycloak_realm: beta
      client_id: gitops
      client_secret_file: /run/kc/beta
`
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		opened []kube.Source
	)
	checks := diagnose.Checks(l.Config, "", diagnose.Deps{
		Waldur:   func(*config.Offering) (diagnose.WaldurAPI, error) { return fakeWaldur{}, nil },
		Git:      func(config.Git) (diagnose.GitRemote, error) { return nil, errors.New("no git here") },
		Keycloak: func(config.KeycloakSettings) (diagnose.Keycloak, error) { return fakeKeycloak{}, nil },
		Cluster: func(s kube.Source) (diagnose.ClusterAPI, error) {
			mu.Lock()
			opened = append(opened, s)
			mu.Unlock()
			return fakeCluster{version: "v1.33.13"}, nil
		},
	})
	rs := run(t, checks)
	type row struct{ name, offerings, credential, status, detail string }
	var got []row
	for _, r := range rs {
		got = append(got, row{r.Name, strings.Join(r.Offerings, ","), r.Credential, r.Status, r.Detail})
	}
	want := []row{
		{"waldur token", "Alpha", "waldur_api_token_file /run/waldur/alpha", "pass", "authenticated as svc"},
		{"waldur offering", "Alpha", "waldur_api_token_file /run/waldur/alpha", "pass", `"x", state Active, 0 component(s)`},
		{"waldur token", "Beta", "waldur_api_token_file /run/waldur/beta", "pass", "authenticated as svc"},
		{"waldur offering", "Beta", "waldur_api_token_file /run/waldur/beta", "pass", `"x", state Active, 0 component(s)`},
		{"git read", "", "git.username bot, git.token_file /run/git/token", "fail", "no git here"},
		{"git write", "", "git.username bot, git.token_file /run/git/token", "skipped", "skipped: git read failed"},
		{"keycloak login", "Alpha", "keycloak_username gitops-alpha, keycloak_password_env $KC_ALPHA", "fail", "401 invalid_grant"},
		{"keycloak realm", "Alpha", "keycloak_username gitops-alpha, keycloak_password_env $KC_ALPHA", "skipped", "skipped: keycloak login failed"},
		{"keycloak login", "Beta", "client gitops, client_secret_file /run/kc/beta", "fail", "401 invalid_grant"},
		{"keycloak realm", "Beta", "client gitops, client_secret_file /run/kc/beta", "skipped", "skipped: keycloak login failed"},
		{"cluster", "Alpha", "kubeconfig /k/alpha.yaml", "pass", "server v1.33.13; namespaces and resourcequotas readable"},
		{"cluster", "Beta", "client-go defaults: $KUBECONFIG, ~/.kube/config, else the pod's service account", "pass", "server v1.33.13; namespaces and resourcequotas readable"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if len(opened) != 2 || !slices.Contains(opened, kube.Source{}) || !slices.Contains(opened, kube.Source{Path: "/k/alpha.yaml"}) {
		t.Errorf("clusters opened: %+v", opened)
	}
	var b strings.Builder
	if err := diagnose.WriteWideTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "OFFERING") || !strings.Contains(b.String(), "CREDENTIAL") || !strings.HasSuffix(b.String(), "12 check(s), 3 failed, 3 skipped\n") {
		t.Errorf("table:\n%s", b.String())
	}

	// --kubeconfig replaces every offering's cluster: one row for both.
	cl := diagnose.Checks(l.Config, "/k/given.yaml", diagnose.Deps{
		Waldur:   func(*config.Offering) (diagnose.WaldurAPI, error) { return fakeWaldur{}, nil },
		Git:      func(config.Git) (diagnose.GitRemote, error) { return nil, errors.New("x") },
		Keycloak: func(config.KeycloakSettings) (diagnose.Keycloak, error) { return fakeKeycloak{}, nil },
	})
	last := cl[len(cl)-1]
	if last.Name != "cluster" || last.Target != "/k/given.yaml" || strings.Join(last.Offerings, ",") != "Alpha,Beta" || cl[len(cl)-2].Name == "cluster" {
		t.Errorf("--kubeconfig: %+v", last)
	}
}

// TestClusterDefaultRulesAndTimeout drives the real cluster client: with no
// kubeconfig_path the default rules are used ($KUBECONFIG here), the request
// timeout is diagnose's (not client-go's 32s), and when the default rules
// find nothing at all the check is skipped, not failed.
func TestClusterDefaultRulesAndTimeout(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("HOME", t.TempDir())
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(s kube.Source) (diagnose.ClusterAPI, error) { return diagnose.NewCluster(s, 3*time.Second) }

	t.Setenv("KUBECONFIG", kubeconfig)
	rs := diagnose.Run(context.Background(), []diagnose.Check{diagnose.ClusterCheck(kube.Source{}, open)}, diagnose.Options{Timeout: 3 * time.Second})
	if rs[0].Status != diagnose.StatusFail || !strings.Contains(rs[0].Detail, "127.0.0.1:1") || !strings.Contains(rs[0].Detail, "timeout=3s") || strings.Contains(rs[0].Detail, "32s") {
		t.Errorf("default rules with $KUBECONFIG: %+v", rs[0])
	}

	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	rs = diagnose.Run(context.Background(), []diagnose.Check{diagnose.ClusterCheck(kube.Source{}, open)}, diagnose.Options{Timeout: 3 * time.Second})
	if rs[0].Status != diagnose.StatusSkipped || !strings.HasPrefix(rs[0].Detail, "skipped: no cluster configured") || diagnose.Failed(rs) != 0 {
		t.Errorf("no cluster anywhere: %+v", rs[0])
	}

	// A kubeconfig_path that does not exist is a failure, not a skip.
	rs = diagnose.Run(context.Background(), []diagnose.Check{diagnose.ClusterCheck(kube.Source{Path: filepath.Join(t.TempDir(), "nope")}, open)}, diagnose.Options{Timeout: 3 * time.Second})
	if rs[0].Status != diagnose.StatusFail {
		t.Errorf("missing kubeconfig_path: %+v", rs[0])
	}
}

// TestTableFitsAHundredColumns: the default table wraps what does not fit
// in 100 columns, keeps every word of the detail, target and credential, and
// breaks a credential between its parts; the wide table does not wrap.
func TestTableFitsAHundredColumns(t *testing.T) {
	long := "https://git.example.org/a-group/with-a-subgroup/and-another-one/the-tenants-repository-of-this-site.git"
	rs := []diagnose.Result{
		{Name: "git read", Target: long, Credential: "git.username waldur-gitops-bot-of-this-site, git.password_file /var/run/secrets/waldur-gitops/git/password",
			Status: diagnose.StatusFail, Detail: "fetch: authentication required: the server refused the credentials of the user named in git.username; check the password file"},
		{Name: "waldur token", Target: "Plain", Offerings: []string{"A rather long offering name", "And another one"}, Status: diagnose.StatusPass, Detail: "authenticated as svc"},
	}
	var narrow, wide strings.Builder
	if err := diagnose.WriteTable(&narrow, rs); err != nil {
		t.Fatal(err)
	}
	if err := diagnose.WriteWideTable(&wide, rs); err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, l := range strings.Split(narrow.String(), "\n") {
		if n := len([]rune(l)); n > diagnose.TableWidth {
			t.Errorf("line of %d columns: %q", n, l)
		}
		words = append(words, strings.Fields(l)...)
	}
	joined := strings.Join(words, " ")
	for _, want := range []string{"credential: git.username waldur-gitops-bot-of-this-site,", "git.password_file /var/run/secrets/waldur-gitops/git/password", "check the password file", "FAIL", "2 check(s), 1 failed, 0 skipped"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the table lacks %q:\n%s", want, narrow.String())
		}
	}
	if !strings.Contains(wide.String(), long) || len(strings.Split(strings.TrimSpace(wide.String()), "\n")) != 4 {
		t.Errorf("wide table:\n%s", wide.String())
	}
}

// In the shard-branch layout with Argo CD (its per-shard form), the cluster
// row of a waiting offering asks only for the Applications: no Flux
// Kustomization is waited for.
func TestConsumerAccessArgoShards(t *testing.T) {
	text := `git:
  url: https://git.example.org/t.git
  flux_shards: 4
  flux_shard_branches: true
  argocd_namespace: argo
offerings:
- name: Waits
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: 0ff00000000040008000000000000001
  backend_type: namespace
  order_done_on: applied
  backend_settings: {kubeconfig_path: /k/waits.yaml}
`
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checks := diagnose.Checks(l.Config, "", diagnose.Deps{
		Waldur:  func(*config.Offering) (diagnose.WaldurAPI, error) { return fakeWaldur{}, nil },
		Git:     func(config.Git) (diagnose.GitRemote, error) { return nil, errors.New("no git here") },
		Cluster: func(kube.Source) (diagnose.ClusterAPI, error) { return fakeCluster{version: "v1.33.13"}, nil },
	})
	var row string
	for _, r := range run(t, checks) {
		if r.Name == "cluster" && r.Target == "/k/waits.yaml" {
			row = r.Status + ": " + r.Detail
		}
	}
	if !strings.HasPrefix(row, "pass: ") || !strings.Contains(row, "may list applications.argoproj.io in namespace argo") || strings.Contains(row, "kustomizations") {
		t.Errorf("cluster row %q: want a pass asking for the Applications alone", row)
	}
}
