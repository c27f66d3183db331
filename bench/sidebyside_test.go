//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// The side-by-side benchmark (BENCHMARKS.md, "Beside the site agent"): our
// counterpart of each of the Python site agent's three polling passes, run
// as a fresh process of the real binary the way a CronJob starts it, with
// the config's defaults, against the in-repo Waldur (seeded with synth's
// state), the in-repo Keycloak fake and a real kube-apiserver:
//
//	order_process   → apply (orders, render, server-side apply, Keycloak, write-backs)
//	membership_sync → keycloak (the Keycloak groups and their members alone)
//	report          → report (month-to-date usage, set_usage)
//
// Each pass runs "first" (a Waldur the tool has never seen, an empty
// Keycloak realm and an empty cluster: everything to create), "noop" (the
// same state again) and "one-change" (one thing that pass exists for
// changed in Waldur). The Python agent is not run: its figures from the same
// scenario are kept beside ours in BENCHMARKS.md.
//
//	go run ./internal/testenv/kubetest/kubeup -build
//	go test ./bench -run '^$' -bench BenchmarkSideBySide -benchtime 1x -timeout 60m
//
// $WALDUR_GITOPS_BENCH_SIDE_TENANTS replaces the sizes (default "100,1000").

// sideRealm is the Keycloak realm synth's config names.
const sideRealm = "hpc"

// sideTenants returns the sizes to run.
func sideTenants(b *testing.B) []int {
	v := os.Getenv("WALDUR_GITOPS_BENCH_SIDE_TENANTS")
	if v == "" {
		return []int{100, 1000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("WALDUR_GITOPS_BENCH_SIDE_TENANTS: %q is not a tenant count", f)
		}
		out = append(out, n)
	}
	return out
}

// sidePass is one of our passes beside one of the agent's.
type sidePass struct {
	// name is ours, agent the agent's mode it stands beside.
	name, agent string
	// cluster says whether the pass needs the kube-apiserver.
	cluster bool
	// args are the command line after the binary, without --config.
	args func(w *sideWorld) []string
	// change makes the one change of iteration i in Waldur and returns
	// the check of what the pass must have done about it.
	change func(b *testing.B, w *sideWorld, i int) func(b *testing.B, d sideDelta)
	// first and noop check a first and a no-op pass.
	first, noop func(b *testing.B, w *sideWorld, d sideDelta)
}

var sidePasses = []sidePass{
	{name: "orders", agent: "order_process", cluster: true,
		args: func(w *sideWorld) []string {
			return []string{"apply", "--kubeconfig", w.cluster.KubeconfigPath(kubetest.Admin)}
		},
		change: orderChange, first: ordersFirst, noop: keycloakQuiet},
	{name: "membership", agent: "membership_sync",
		args:   func(*sideWorld) []string { return []string{"keycloak"} },
		change: memberChange, first: keycloakBusy, noop: keycloakQuiet},
	{name: "usage", agent: "report",
		args:   func(*sideWorld) []string { return []string{"report"} },
		change: usageChange, first: usagePosted, noop: usageQuiet},
}

// BenchmarkSideBySide reports, per tenant count, pass and step, the wall
// time and CPU seconds of the process and the requests Waldur and Keycloak
// received from it (see the comment at the head of this file).
func BenchmarkSideBySide(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bin := buildCLI(b, b.TempDir())
	for _, n := range sideTenants(b) {
		for _, p := range sidePasses {
			var w *sideWorld
			b.Cleanup(func() { w.close() })
			name := fmt.Sprintf("%d/%s", n, p.name)
			b.Run(name+"/first", func(b *testing.B) {
				var runs []sideRun
				for b.Loop() {
					b.StopTimer()
					w.close()
					w = newSideWorld(b, n, p.cluster, self, bin)
					b.StartTimer()
					runs = append(runs, w.run(b, p, p.first))
				}
				reportSide(b, runs)
			})
			b.Run(name+"/noop", func(b *testing.B) {
				w = w.ready(b, n, p, self, bin)
				var runs []sideRun
				for b.Loop() {
					runs = append(runs, w.run(b, p, p.noop))
				}
				reportSide(b, runs)
			})
			b.Run(name+"/one-change", func(b *testing.B) {
				w = w.ready(b, n, p, self, bin)
				var runs []sideRun
				i := 0
				for b.Loop() {
					check := p.change(b, w, i)
					i++
					runs = append(runs, w.run(b, p, func(b *testing.B, _ *sideWorld, d sideDelta) { check(b, d) }))
				}
				reportSide(b, runs)
			})
			w.close()
			w = nil
		}
	}
}

// sideWorld is one site: Waldur, Keycloak and (for apply) a cluster, with
// the config that points at them.
type sideWorld struct {
	self, bin, dir, config string
	state                  *waldur.State
	waldur                 *waldurtest.Server
	// complaints collects what the fake Waldur says about the requests.
	complaints *lockedBuffer
	// posts counts the write requests Waldur received, writes them by
	// action (the last segment of the path), for the log.
	posts   atomic.Int64
	writes  actionCounts
	kc      *kctest.Server
	cluster *kubetest.Cluster
}

// newSideWorld starts a site with synth's state of n tenants.
func newSideWorld(b *testing.B, n int, cluster bool, self, bin string) *sideWorld {
	b.Helper()
	opts := synth.Options{Tenants: n, Seed: seed, BackendTypes: []string{config.BackendK8sUTNamespace}}
	// Not b.TempDir: the world outlives the step that made it.
	dir, err := os.MkdirTemp("", "sidebyside")
	if err != nil {
		b.Fatal(err)
	}
	w := &sideWorld{self: self, bin: bin, dir: dir, state: synth.Generate(opts), complaints: &lockedBuffer{}}
	if w.waldur, err = waldurtest.Start(w.complaints); err != nil {
		b.Fatal(err)
	}
	w.waldur.Seed(w.state)
	w.waldur.OnRequest(func(r *http.Request, _ []byte) {
		if r.Method != http.MethodGet {
			w.posts.Add(1)
			w.writes.add(r.Method + " " + path.Base(r.URL.Path))
		}
	})
	w.kc = kctest.NewServer()
	w.kc.AddRealm(sideRealm)
	for _, o := range w.state.Offerings {
		for _, u := range o.OfferingUsers {
			if u.Username != "" {
				// keycloak_use_user_id (the default): Waldur's offering
				// username is the user's Keycloak id.
				w.kc.AddUserWithID(sideRealm, u.Username, u.Username)
			}
		}
	}
	if cluster {
		w.startCluster(b)
	}
	w.config = filepath.Join(w.dir, "config.yaml")
	if err := os.WriteFile(w.config, w.configYAML(b, opts), 0o600); err != nil {
		b.Fatal(err)
	}
	return w
}

// startCluster starts a kube-apiserver with the ManagedNamespace CRD and the
// namespace the CRs live in.
func (w *sideWorld) startCluster(b *testing.B) {
	b.Helper()
	if testing.Short() {
		b.Skip("needs a real kube-apiserver; skipped with -short")
	}
	ctx := context.Background()
	c, err := kubetest.Start(ctx, kubetest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	w.cluster = c
	ns := filepath.Join(w.dir, "namespaces.yaml")
	if err := os.WriteFile(ns, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: waldur-system\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	if _, err := c.ApplyFiles(ctx, "../apply/testdata/crds/managednamespace.yaml", ns); err != nil {
		b.Fatal(err)
	}
}

// configYAML is synth's config pointed at this world's Waldur and Keycloak,
// everything else left at its default.
func (w *sideWorld) configYAML(b *testing.B, opts synth.Options) []byte {
	b.Helper()
	text := string(synth.ConfigYAML(opts))
	// A GitOps repository of its own, where the keycloak pass keeps its
	// memory by default (the state ref), as a site running sync has.
	repo := filepath.Join(w.dir, "tenants.git")
	gittest.InitBare(b, repo, "main")
	for _, r := range [][2]string{
		{"url: https://git.example.org/platform/tenants.git", "url: " + repo},
		{"waldur_api_url: https://waldur.example.org/api/", "waldur_api_url: " + w.waldur.URL()},
		{"waldur_api_token: synthetic-token", "waldur_api_token: " + w.waldur.Token()},
		{"keycloak_url: https://keycloak.example.org/auth/", "keycloak_url: " + w.kc.URL + "/"},
		{"keycloak_realm: " + sideRealm + "\n", "keycloak_realm: " + sideRealm + "\n" +
			"        keycloak_username: " + kctest.AdminUser + "\n        keycloak_password: " + kctest.AdminPassword + "\n"},
	} {
		if !strings.Contains(text, r[0]) {
			b.Fatalf("synth's config has no %q", r[0])
		}
		text = strings.ReplaceAll(text, r[0], r[1])
	}
	return []byte(text)
}

// ready returns w, or when a step runs without the one before it (-bench
// names a single step) a new world after one unmeasured first pass.
func (w *sideWorld) ready(b *testing.B, n int, p sidePass, self, bin string) *sideWorld {
	if w != nil {
		return w
	}
	w = newSideWorld(b, n, p.cluster, self, bin)
	w.run(b, p, p.first)
	return w
}

// close stops what w started; a nil w is fine.
func (w *sideWorld) close() {
	if w == nil {
		return
	}
	w.waldur.Close()
	w.kc.Close()
	if w.cluster != nil {
		w.cluster.Stop()
	}
	os.RemoveAll(w.dir)
}

// sideDelta is what Waldur and Keycloak received during one pass.
type sideDelta struct {
	waldur, waldurWrites, keycloak, keycloakWrites int
	// usagePosts counts set_usage requests.
	usagePosts int
}

// sideRun is one measured pass.
type sideRun struct {
	measurement
	sideDelta
}

const setUsagePath = "/api/marketplace-component-usages/set_usage/"

// run runs pass p as a fresh process through the measuring runner, fails
// unless it exits 0 and check accepts what the servers saw.
func (w *sideWorld) run(b *testing.B, p sidePass, check func(*testing.B, *sideWorld, sideDelta)) sideRun {
	b.Helper()
	mfile := filepath.Join(w.dir, "measurement.json")
	os.Remove(mfile)
	args := append([]string{w.self, w.bin}, p.args(w)...)
	args = append(args, "--config", w.config, "--log-level", "warn")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = w.dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "KUBECONFIG=")
	})
	cmd.Env = append(cmd.Env, measureEnv+"="+mfile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	w.kc.ResetCounts()
	wBefore, uBefore, pBefore := w.waldur.Requests(""), w.waldur.Requests(setUsagePath), w.posts.Load()
	err := cmd.Run()
	raw, rerr := os.ReadFile(mfile)
	if rerr != nil {
		b.Fatalf("waldur-gitops %s: %v %v\n%s", p.args(w)[0], err, rerr, tail(out.Bytes(), 3000))
	}
	var r sideRun
	if err := json.Unmarshal(raw, &r.measurement); err != nil {
		b.Fatal(err)
	}
	if r.ExitCode != 0 {
		b.Fatalf("waldur-gitops %s exited %d\n%s", p.args(w)[0], r.ExitCode, tail(out.Bytes(), 3000))
	}
	if c := w.complaints.String(); c != "" {
		b.Fatalf("the test Waldur saw requests outside its contract:\n%s", tail([]byte(c), 3000))
	}
	r.sideDelta = sideDelta{
		waldur:         w.waldur.Requests("") - wBefore,
		waldurWrites:   int(w.posts.Load() - pBefore),
		keycloak:       w.kc.Requests(),
		keycloakWrites: w.kc.Writes(),
		usagePosts:     w.waldur.Requests(setUsagePath) - uBefore,
	}
	check(b, w, r.sideDelta)
	b.Logf("%s: %s wall, Waldur writes %s", strings.Join(p.args(w)[:1], " "), r.Wall.Round(time.Millisecond), w.writes.take())
	return r
}

// reportSide reports the mean wall time, CPU seconds and requests of runs.
func reportSide(b *testing.B, runs []sideRun) {
	if len(runs) == 0 {
		return
	}
	var wall, cpu time.Duration
	var wr, ww, kr, kw int
	for _, r := range runs {
		ww += r.waldurWrites
		wall += r.Wall
		cpu += r.User + r.Sys
		wr += r.waldur
		kr += r.keycloak
		kw += r.keycloakWrites
	}
	k := float64(len(runs))
	b.ReportMetric(wall.Seconds()/k, "wall-s")
	b.ReportMetric(cpu.Seconds()/k, "cpu-s")
	b.ReportMetric(float64(wr)/k, "waldur-req")
	b.ReportMetric(float64(ww)/k, "waldur-writes")
	b.ReportMetric(float64(kr)/k, "keycloak-req")
	b.ReportMetric(float64(kw)/k, "keycloak-writes")
}

// actionCounts counts requests by a key, safe for concurrent handlers.
type actionCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *actionCounts) add(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[key]++
}

// take returns the counts sorted by key, as text, and starts over.
func (a *actionCounts) take() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a.n)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, a.n[k]))
	}
	clear(a.n)
	return "[" + strings.Join(parts, ", ") + "]"
}

// lockedBuffer is a bytes.Buffer safe for the fake Waldur's handlers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
