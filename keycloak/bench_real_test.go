package keycloak_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/keycloaktest"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// BenchmarkKeycloakReal (BENCHMARKS.md, "Keycloak against a real server"): N
// namespace tenants × 3 role groups, teams of 3 (one member per role group), in
// a fresh realm of a real Keycloak (internal/testenv/keycloaktest), users
// loaded with partialImport, admin events recorded (as docs/keycloak.md
// recommends for a large realm).
//
//	go test ./keycloak -run '^$' -bench BenchmarkKeycloakReal -benchtime 1x -timeout 60m
//
// Phases, one after the other on the same realm:
//
//   - first: an empty realm, at the settings docs/keycloak.md recommends for
//     a large site (requests_per_second 500, concurrency 8), with a memory;
//   - remembered: the memory the first pass left (read from its state file,
//     as a CronJob's next run would), default settings, with the clock moved
//     on by serve's default interval (15 minutes), so that the pass re-reads
//     the share of keycloak.verify_every a real one would; twice;
//   - full: a pass without memory at default settings, as every pass was
//     before; at 10,000 tenants only with WALDUR_GITOPS_BENCH_FULL=1 (it
//     takes over six minutes).
func BenchmarkKeycloakReal(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			kc := realKC.Need(b)
			for range b.N {
				benchReal(b, kc, n)
			}
		})
	}
}

// serveInterval is serve's default --interval.
const serveInterval = 15 * time.Minute

func benchReal(b *testing.B, kc *keycloaktest.Server, n int) {
	ctx := context.Background()
	realm := fmt.Sprintf("bench%d-%d", n, time.Now().UnixNano()%1e6)
	users := benchRealm(b, kc, realm, n)
	defer deleteRealm(kc, realm)
	res := benchRealWorld(n, users)
	now := time.Now()
	clock := func() time.Time { return now }
	mem := keycloak.NewMemory(filepath.Join(b.TempDir(), "state.json"))
	phase := func(name, keys string, o keycloak.Options) {
		cfg := benchRealConfig(b, kc, realm, keys)
		o.Now = clock
		start := time.Now()
		r, err := keycloak.Reconcile(ctx, cfg, res, o)
		wall := time.Since(start)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		if name != "first" && keycloak.Writes(r.Calls) != 0 {
			b.Errorf("%s pass wrote: %v", name, r.Calls)
		}
		b.ReportMetric(wall.Seconds(), name+"-s")
		b.ReportMetric(float64(keycloak.Total(r.Calls)), name+"-requests")
		b.Logf("%d tenants, %s pass (%s): %s, %d requests, %d writes, calls %v", n, name, strings.TrimSpace(keys), wall.Round(100*time.Millisecond), keycloak.Total(r.Calls), keycloak.Writes(r.Calls), r.Calls)
	}
	b.ResetTimer()
	phase("first", "requests_per_second: 500, concurrency: 8", keycloak.Options{Memory: mem})
	if st, err := os.Stat(mem.Path()); err == nil {
		b.Logf("state file after the first pass: %d bytes", st.Size())
	}
	now = now.Add(serveInterval)
	// A new Memory on the same file: a CronJob's next run.
	phase("remembered", "", keycloak.Options{Memory: keycloak.NewMemory(mem.Path())})
	now = now.Add(serveInterval)
	phase("remembered-again", "", keycloak.Options{Memory: keycloak.NewMemory(mem.Path())})
	if n <= 1000 || os.Getenv("WALDUR_GITOPS_BENCH_FULL") != "" {
		phase("full", "", keycloak.Options{})
	}
	b.StopTimer()
}

// benchRealm makes a realm that records admin events, with n*3/5 users
// (u00000, …), and returns their user names.
func benchRealm(b *testing.B, kc *keycloaktest.Server, realm string, n int) []string {
	b.Helper()
	ctx := context.Background()
	gc := gocloak.NewClient(kc.URL)
	login := func() string {
		tok, err := gc.LoginAdmin(ctx, keycloaktest.AdminUser, kc.AdminPassword, keycloaktest.AdminRealm)
		if err != nil {
			b.Fatal(err)
		}
		return tok.AccessToken
	}
	tok := login()
	if _, err := gc.CreateRealm(ctx, tok, gocloak.RealmRepresentation{Realm: gocloak.StringP(realm), Enabled: gocloak.BoolP(true), AdminEventsEnabled: gocloak.BoolP(true)}); err != nil {
		b.Fatalf("create realm %s: %v", realm, err)
	}
	names := make([]string, n*3/5)
	for i := range names {
		names[i] = fmt.Sprintf("u%05d", i)
	}
	for from := 0; from < len(names); from += 500 {
		var us []map[string]any
		for _, u := range names[from:min(from+500, len(names))] {
			us = append(us, map[string]any{"username": u, "enabled": true})
		}
		resp, err := gc.RestyClient().R().SetContext(ctx).SetAuthToken(login()).
			SetBody(map[string]any{"ifResourceExists": "SKIP", "users": us}).
			Post(kc.URL + "/admin/realms/" + realm + "/partialImport")
		if err != nil || resp.IsError() {
			b.Fatalf("import users: %v %s", err, resp.String())
		}
	}
	return names
}

func deleteRealm(kc *keycloaktest.Server, realm string) {
	ctx := context.Background()
	gc := gocloak.NewClient(kc.URL)
	if tok, err := gc.LoginAdmin(ctx, keycloaktest.AdminUser, kc.AdminPassword, keycloaktest.AdminRealm); err == nil {
		_ = gc.DeleteRealm(ctx, tok.AccessToken, realm)
	}
}

// benchRealWorld is the render of n tenants whose teams of 3 each put one
// user into each role group.
func benchRealWorld(n int, users []string) *render.Result {
	res := &render.Result{Skipped: map[waldur.UUID]string{}, Terminations: map[waldur.UUID][]waldur.UUID{}}
	for t := range n {
		r := waldur.UUID(fmt.Sprintf("a0000000000040008000%012d", t))
		res.Tenants = append(res.Tenants, &render.Tenant{Offering: "Bench", Resource: r})
		for j, role := range config.NamespaceRoles {
			res.Groups = append(res.Groups, render.Group{
				Name: fmt.Sprintf("ns_t%05d_%s", t, role), Offering: "Bench", Resources: []waldur.UUID{r},
				Description: "Namespace t" + fmt.Sprint(t) + " " + role + " access",
				Members:     []string{users[(t*3+j)%len(users)]},
			})
		}
	}
	return res
}

func benchRealConfig(b *testing.B, kc *keycloaktest.Server, realm, keys string) *config.Config {
	b.Helper()
	if keys != "" {
		keys = ", " + keys
	}
	text := fmt.Sprintf(`offerings:
- name: Bench
  waldur_api_url: https://waldur.example.org/api/
  waldur_offering_uuid: %s
  backend_type: namespace
  backend_settings:
    keycloak_enabled: true
    keycloak_use_user_id: false
    keycloak: {keycloak_url: %q, keycloak_realm: %q, keycloak_user_realm: master, keycloak_username: %q, keycloak_password_env: BENCH_KC_PASSWORD%s}
`, nsOffering, kc.URL, realm, keycloaktest.AdminUser, keys)
	b.Setenv("BENCH_KC_PASSWORD", kc.AdminPassword)
	l, err := config.Parse([]byte(text), filepath.Join(b.TempDir(), "config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	return l.Config
}

// BenchmarkKeycloakRealFirstContact (BENCHMARKS.md, "Keycloak: first
// contact"): the first pass of 1,000 tenants into a fresh realm of the real
// Keycloak, each setting on a realm of its own, in one run: the defaults
// (no fixed rate, the adaptive window up to 16 calls), a window allowed up
// to 64 with no rate (as near to no limit as the client goes), and the
// former defaults (100 calls/s, 4 in flight). The defaults are to stay
// within 2× of the unlimited pass.
//
//	go test ./keycloak -run '^$' -bench BenchmarkKeycloakRealFirstContact -benchtime 1x -timeout 30m
func BenchmarkKeycloakRealFirstContact(b *testing.B) {
	const n = 1000
	kc := realKC.Need(b)
	settings := []struct{ name, keys string }{
		{"defaults", ""},
		{"unlimited", "requests_per_second: 0, concurrency: 64"},
		{"former-defaults", "requests_per_second: 100, concurrency: 4"},
	}
	pass := func(name, keys string, n int) (float64, int) {
		realm := fmt.Sprintf("first%d-%s-%d", n, name, time.Now().UnixNano()%1e6)
		users := benchRealm(b, kc, realm, n)
		defer deleteRealm(kc, realm)
		cfg := benchRealConfig(b, kc, realm, keys)
		start := time.Now()
		r, err := keycloak.Reconcile(context.Background(), cfg, benchRealWorld(n, users), keycloak.Options{})
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return time.Since(start).Seconds(), keycloak.Total(r.Calls)
	}
	// A pass first that is not measured: a Keycloak just started is slower
	// until its JIT has warmed up, which would favour whichever setting
	// runs last.
	pass("warm-up", "requests_per_second: 0, concurrency: 16", 300)
	for range b.N {
		secs := map[string]float64{}
		for _, s := range settings {
			var requests int
			secs[s.name], requests = pass(s.name, s.keys, n)
			b.ReportMetric(secs[s.name], s.name+"-s")
			b.Logf("%s (%s): %.1f s, %d requests", s.name, s.keys, secs[s.name], requests)
		}
		b.ReportMetric(secs["defaults"]/secs["unlimited"], "defaults-vs-unlimited")
	}
}
