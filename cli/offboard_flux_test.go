package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/fluxtest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// fluxSite is a real Flux (source-controller and kustomize-controller, run
// out of cluster) on a real kube-apiserver, reading a smart-HTTP Git server
// through the GitRepository and shard root of examples/flux.
type fluxSite struct {
	cluster *kubetest.Cluster
	dc      dynamic.Interface
	git     *gittest.Server
	url     string // of the repository
}

const fluxRepo = "tenants.git"

// startFlux starts the site; the controllers and the cluster stop with b.
func startFlux(b testing.TB) *fluxSite {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	bins, err := fluxtest.EnsureBinaries(ctx, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	crds, err := fluxtest.CRDs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s := &fluxSite{cluster: kubetest.StartForTest(b, kubetest.Options{}), git: gittest.NewServer(b)}
	if _, err := s.cluster.ApplyFiles(ctx, crds...); err != nil {
		b.Fatal(err)
	}
	s.url = s.git.CreateRepo(b, fluxRepo, "main")
	gr := string(readTB(b, "../examples/flux/gitrepository.yaml"))
	gr = regexp.MustCompile(`(?m)^  url: .*$`).ReplaceAllString(gr, "  url: "+s.url)
	objs := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n---\n" +
		fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: waldur-tenants-git\n  namespace: flux-system\nstringData:\n  username: %s\n  password: %s\n---\n", s.git.User(), s.git.Password()) +
		gr + "\n---\n" + string(readTB(b, "../examples/flux/waldur-shards.yaml"))
	f := filepath.Join(b.TempDir(), "flux-objects.yaml")
	writeTB(b, f, objs)
	if _, err := s.cluster.ApplyFiles(ctx, f); err != nil {
		b.Fatal(err)
	}
	flux, err := fluxtest.Start(ctx, bins, s.cluster.KubeconfigPath(kubetest.Admin))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(flux.Stop)
	if s.dc, err = dynamic.NewForConfig(s.cluster.RESTConfig(kubetest.Admin)); err != nil {
		b.Fatal(err)
	}
	return s
}

// head is the branch tip of the repository.
func (s *fluxSite) head() string {
	out, _ := exec.Command("git", "-C", s.git.RepoDir(fluxRepo), "rev-parse", "main").Output()
	return strings.TrimSpace(string(out))
}

// applied says whether every Kustomization (the shard root and the shards)
// is Ready with commit applied, or what is not.
func (s *fluxSite) applied(ctx context.Context, commit string) (bool, string) {
	gvr := schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	l, err := s.dc.Resource(gvr).Namespace(fluxtest.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) < 2 {
		return false, fmt.Sprintf("kustomizations: %v (%d)", err, len(l.Items))
	}
	for _, u := range l.Items {
		rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		if rev != "main@sha1:"+commit {
			return false, u.GetName() + " applied " + rev
		}
	}
	return true, ""
}

// fluxOffboardConfig is synth's config for opts, reading Waldur from wsrv
// and its events from the broker's web-STOMP port, pushing to the site's
// repository in shards with the reconcile request on, and proving
// removals at the cluster (order_done_on: applied).
func fluxOffboardConfig(b testing.TB, s *fluxSite, opts synth.Options, wsrv *waldurtest.Server, stomp int) string {
	dir := b.TempDir()
	pw := filepath.Join(dir, "git-password")
	writeTB(b, pw, s.git.Password())
	kcfg := s.cluster.KubeconfigPath(kubetest.Admin)
	text := string(synth.ConfigYAML(opts))
	text = strings.ReplaceAll(text, "waldur_api_url: https://waldur.example.org/api/", "waldur_api_url: "+wsrv.URL())
	text = strings.ReplaceAll(text, "waldur_api_token: synthetic-token", "waldur_api_token: "+wsrv.Token())
	text = regexp.MustCompile(`(\n(\s*)waldur_offering_uuid: .*)`).ReplaceAllString(text, fmt.Sprintf("$1\n${2}stomp_ws_port: %d\n${2}order_done_on: applied", stomp))
	text = strings.ReplaceAll(text, "    backend_settings:\n", "    backend_settings:\n      kubeconfig_path: "+kcfg+"\n")
	text = strings.Replace(text, "  url: https://git.example.org/platform/tenants.git\n",
		fmt.Sprintf("  url: %s\n  branch: main\n  username: %s\n  password_file: %s\n  flux_shards: 4\n  flux_reconcile: true\n  flux_kubeconfig_path: %s\n", s.url, s.git.User(), pw, kcfg), 1)
	cfg := filepath.Join(dir, "config.yaml")
	writeTB(b, cfg, text)
	return cfg
}

// fluxOffboard is serve --events running on a fluxSite: synth's state in
// the in-repo Waldur, publishing through a real RabbitMQ.
type fluxOffboard struct {
	tb     testing.TB
	site   *fluxSite
	wsrv   *waldurtest.Server
	state  *waldur.State
	stderr *syncBuffer
	// limit bounds the wait for one user's set_deleted (0: 10 minutes).
	limit time.Duration
}

// startFluxOffboard starts the stack at n tenants and waits for serve's
// first run, for Flux to apply its commit and for the event subscription.
func startFluxOffboard(tb testing.TB, n int) *fluxOffboard {
	ctx := context.Background()
	broker := rmq.Need(tb)
	f := &fluxOffboard{tb: tb, site: startFlux(tb), stderr: &syncBuffer{}}
	opts := synth.Options{Tenants: n, Seed: 20261127, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	f.state = synth.Generate(opts)
	f.wsrv = waldurtest.New(tb, waldurtest.WithEventBroker(broker), waldurtest.LogViolations())
	f.wsrv.Seed(f.state)
	cfg := fluxOffboardConfig(tb, f.site, opts, f.wsrv, broker.Ports.WebSTOMP)
	a := &app{stdout: f.stderr, stderr: f.stderr}
	root := a.rootCommand()
	root.SetArgs([]string{"serve", "--listen", "127.0.0.1:0", "--config", cfg, "--events", "--events-window", "250ms", "--interval", "1h"})
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = root.ExecuteContext(sctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	start := time.Now()
	f.waitFor("the first run", 10*time.Minute, func() (bool, string) { return len(runLines(f.stderr.String())) >= 1, "" })
	tb.Logf("first full run at %d tenants: %s", n, runLines(f.stderr.String())[0].Duration)
	first := f.site.head()
	f.waitFor("Flux applies the first commit", 15*time.Minute, func() (bool, string) { return f.site.applied(ctx, first) })
	tb.Logf("the first commit applied by Flux %.1fs after serve started", time.Since(start).Seconds())
	f.waitFor("subscriptions", time.Minute, func() (bool, string) {
		for _, q := range f.wsrv.EventQueues() {
			if info, err := broker.Queue(ctx, q.VHost, q.Name); err != nil || info.Consumers == 0 {
				return false, q.Name
			}
		}
		return len(f.wsrv.EventQueues()) == 1, "queues"
	})
	return f
}

// waitFor polls ok until it holds; on timeout it fails with ok's last word
// and serve's log.
func (f *fluxOffboard) waitFor(what string, within time.Duration, ok func() (bool, string)) {
	f.tb.Helper()
	deadline := time.Now().Add(within)
	for {
		good, why := ok()
		if good {
			return
		}
		if time.Now().After(deadline) {
			f.tb.Fatalf("%s: not within %s (%s):\n%s", what, within, why, tail(f.stderr.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// users are up to count offering users in OK.
func (f *fluxOffboard) users(count int) []waldur.UUID {
	var out []waldur.UUID
	for _, u := range f.state.Offerings[0].OfferingUsers {
		if u.State == "OK" && u.Username != "" && len(out) < count {
			out = append(out, u.UUID)
		}
	}
	return out
}

// subject is the RoleBinding subject name of offering user id.
func (f *fluxOffboard) subject(id waldur.UUID) string {
	for _, u := range f.state.Offerings[0].OfferingUsers {
		if u.UUID == id {
			return "oidc:" + u.Username // synth's user_prefix
		}
	}
	f.tb.Fatalf("no offering user %s", id)
	return ""
}

// offboard requests the deletion of id and returns the time until Waldur
// holds the user Deleted and the time until the cluster's RoleBindings no
// longer named the user (read once a second: Flux applied the removal).
func (f *fluxOffboard) offboard(id waldur.UUID) (deleted, clean time.Duration) {
	name := f.subject(id)
	t0, before := time.Now(), f.site.head()
	var pushed, read time.Duration // since t0
	f.wsrv.SetOfferingUserState(id, waldur.OfferingUserRequestedDeletion)
	f.waitFor("user "+string(id)+" deleted", cmp.Or(f.limit, 10*time.Minute), func() (bool, string) {
		now := time.Since(t0)
		if h := f.site.head(); pushed == 0 && h != before {
			pushed = now
		}
		if clean == 0 && now-read >= time.Second {
			read = now
			if f.site.bindingsNaming(f.tb, name) == 0 {
				clean = now
			}
		}
		st := f.wsrv.OfferingUserState(id)
		return st == waldur.OfferingUserDeleted, st
	})
	deleted = time.Since(t0)
	f.tb.Logf("%s: request → set_deleted %s (pushed at %s, the cluster clean at %s, read once a second)",
		name, deleted.Round(time.Millisecond), pushed.Round(time.Millisecond), clean.Round(time.Millisecond))
	return deleted, clean
}

// TestOffboardingWithFlux: with serve --events, the real Flux applying the
// commits (git.flux_reconcile on) and order_done_on: applied, a deletion
// request ends with set_deleted once, and only once, the cluster's
// RoleBindings no longer name the user: the run that pushed the removal
// waits for Flux instead of leaving the user Deleting until the next run.
func TestOffboardingWithFlux(t *testing.T) {
	f := startFluxOffboard(t, 20)
	f.limit = 90 * time.Second
	id := f.users(1)[0]
	name := f.subject(id)
	if n := f.site.bindingsNaming(t, name); n == 0 {
		t.Fatalf("no RoleBinding in the cluster names %s before the request", name)
	}
	if took, _ := f.offboard(id); took > time.Minute {
		t.Errorf("request → set_deleted took %s", took)
	}
	if n := f.site.bindingsNaming(t, name); n != 0 {
		t.Errorf("Waldur holds the user Deleted while %d RoleBindings in the cluster still name %s", n, name)
	}
}

// bindingsNaming counts the cluster's RoleBindings with a subject name.
func (s *fluxSite) bindingsNaming(t testing.TB, name string) int {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
	l, err := s.dc.Resource(gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, u := range l.Items {
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, sub := range subjects {
			if m, _ := sub.(map[string]any); m["name"] == name {
				n++
			}
		}
	}
	return n
}

// BenchmarkOffboardingFluxEventToDeleted measures serve --events
// offboarding at 1,000 tenants with the real Flux applying the commits: the
// in-repo Waldur (seeded with synth's state, one namespace offering with
// order_done_on: applied) publishes through a real RabbitMQ; serve consumes
// over web-STOMP, pushes to a Git server, asks Flux to fetch at once
// (git.flux_reconcile) and proves each removal at the cluster: set_deleted
// waits until the RoleBindings read from the kube-apiserver no longer name
// the user, that is until source-controller fetched the commit and
// kustomize-controller applied the user's shards. For users requested for
// deletion one after another it reports request → set_deleted as p50 and
// p99:
//
//	go run ./internal/testenv/rabbittest/prepare
//	go test ./cli -run '^$' -bench BenchmarkOffboardingFluxEventToDeleted -benchtime 1x -timeout 40m
//
// $WALDUR_GITOPS_BENCH_TENANTS changes the number of tenants (default
// 1,000), $WALDUR_GITOPS_BENCH_USERS the number of requests (default 5).
func BenchmarkOffboardingFluxEventToDeleted(b *testing.B) {
	n := envInt("WALDUR_GITOPS_BENCH_TENANTS", 1000)
	f := startFluxOffboard(b, n)
	users := f.users(envInt("WALDUR_GITOPS_BENCH_USERS", 5))
	var lat, flux []time.Duration
	for b.Loop() {
		lat, flux = lat[:0], flux[:0]
		for _, id := range users {
			if f.wsrv.OfferingUserState(id) != "OK" {
				continue // the loop's earlier rounds took it
			}
			deleted, clean := f.offboard(id)
			lat = append(lat, deleted)
			if clean > 0 { // 0: the proof saw it first, between two reads
				flux = append(flux, clean)
			}
			time.Sleep(500 * time.Millisecond) // let the run end before the next request
		}
	}
	if len(lat) == 0 {
		b.Fatal("no user was offboarded")
	}
	b.ReportMetric(float64(percentile(lat, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Milliseconds()), "p99-ms")
	b.Logf("%d users at %d tenants, Flux applying: deletion requested → set_deleted p50 %s, p99 %s, max %s",
		len(lat), n, percentile(lat, 0.5).Round(time.Millisecond), percentile(lat, 0.99).Round(time.Millisecond), percentile(lat, 1).Round(time.Millisecond))
	if len(flux) > 0 {
		b.Logf("of which Flux: request → the cluster clean (read once a second) p50 %s, p99 %s over %d users",
			percentile(flux, 0.5).Round(time.Millisecond), percentile(flux, 0.99).Round(time.Millisecond), len(flux))
	}
}

func readTB(tb testing.TB, p string) []byte {
	tb.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func writeTB(tb testing.TB, p, data string) {
	tb.Helper()
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
}
