// Package argocd is the end-to-end test of examples/argocd: waldur-gitops
// commits synthetic tenants to a Git server, a real Argo CD
// (internal/testenv/argotest) runs the example ApplicationSet against a real
// kube-apiserver (internal/testenv/kubetest), and the test checks what reaches
// the cluster.
//
// It needs Argo CD built into the cache (several minutes the first time) and
// takes one to two minutes more, so plain `go test ./...` skips it:
// `make e2e-argocd` prepares the cache and runs it with
// WALDUR_GITOPS_E2E_ARGOCD=1.
package argocd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/cli"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/argotest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/waldur"
)

// Env turns the test on.
const Env = "WALDUR_GITOPS_E2E_ARGOCD"

// tenantsEnv overrides the number of tenants (default 100).
const tenantsEnv = "WALDUR_GITOPS_E2E_ARGOCD_TENANTS"

const (
	gitPasswordEnv = "WALDUR_GITOPS_E2E_GIT_PASSWORD"
	exampleRepoURL = "https://git.example.org/platform/tenants.git"
	inCluster      = "https://kubernetes.default.svc"
	refreshAppSet  = "argocd.argoproj.io/application-set-refresh"
	refreshApp     = "argocd.argoproj.io/refresh"
)

var (
	applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	appSets      = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}
	namespaces   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	quotas       = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
)

// tenant is one tenant directory of the repository, as rendered.
type tenant struct {
	// app is the Application name the example's template gives it.
	app string
	// dir is its directory relative to git.path: <offering>/cluster/<name>.
	dir string
	// namespace and quota are its Namespace and ResourceQuota.
	namespace string
	quota     *unstructured.Unstructured
}

// TestArgoCDApplicationSet: the first sync gives exactly one Synced/Healthy
// Application per tenant (none for the Flux entry points) and every rendered
// quota in the cluster; a one-tenant change reaches the cluster after a
// refresh; a removed tenant's Application and namespace go away.
func TestArgoCDApplicationSet(t *testing.T) {
	if os.Getenv(Env) == "" {
		t.Skipf("the Argo CD end-to-end test runs with %s=1 (make e2e-argocd)", Env)
	}
	n := 100
	if v := os.Getenv(tenantsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 3 {
			t.Fatalf("%s=%q: want a number of tenants >= 3", tenantsEnv, v)
		}
	}
	began := time.Now()
	st := startStack(t)
	ctx, dist, cluster, dc, srv, repoURL, repo := st.ctx, st.dist, st.cluster, st.dc, st.srv, st.repoURL, st.repo
	reader, err := kube.NewReader(cluster.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}

	// Synthetic tenants of the namespace profile, with Flux shards so that
	// waldur/_flux exists and the ApplicationSet must leave it out.
	opts := synth.Options{Tenants: n, Seed: 20, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	cfg := writeConfig(t, opts, repoURL, srv.User())
	snap := synth.Snapshot(opts)
	state := writeSnapshot(t, snap)

	step := time.Now()
	syncCLI(t, cfg, state)
	head := gittest.Head(t, repo, "main")
	want := tenants(t, repo, head)
	if len(want) != n {
		t.Fatalf("the first sync rendered %d tenant directories, want %d", len(want), n)
	}
	if !hasFlux(t, repo, head) {
		t.Fatal("the repository has no waldur/_flux entry points: the exclusion is not tested")
	}
	t.Logf("first sync: %d tenants committed in %s", n, time.Since(step).Round(10*time.Millisecond))

	step = time.Now()
	argo, err := argotest.Start(ctx, dist, cluster, argotest.Options{RepoURL: repoURL, Username: srv.User(), Password: srv.Password()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Argo CD logs:\n%s", argo.Logs())
		}
		argo.Stop()
	})
	t.Logf("Argo CD up in %s", time.Since(step).Round(10*time.Millisecond))

	// The example, pointed at the test's repository and cluster: Argo CD runs
	// outside the cluster, where https://kubernetes.default.svc does not answer.
	example, err := os.ReadFile("../../examples/argocd/applicationset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(strings.ReplaceAll(string(example), exampleRepoURL, repoURL), inCluster, cluster.URL)
	if strings.Count(edited, repoURL) != 3 || strings.Count(edited, cluster.URL) != 2 {
		t.Fatalf("examples/argocd/applicationset.yaml: want the repository URL 3 times and the in-cluster address twice to rewrite:\n%s", edited)
	}
	appsetFile := filepath.Join(t.TempDir(), "applicationset.yaml")
	if err := os.WriteFile(appsetFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	step = time.Now()
	if _, err := cluster.ApplyFiles(ctx, appsetFile); err != nil {
		t.Fatal(err)
	}
	waitSynced(ctx, t, dc, want, head, func(string) bool { return true })
	t.Logf("first sync: %d Applications Synced/Healthy at %.7s %s after the ApplicationSet was applied", n, head, time.Since(step).Round(10*time.Millisecond))
	// orders.complete_when: applied with Argo CD as the consumer.
	consumer := &orders.ArgoCD{Apps: reader, Namespace: argotest.Namespace, RepoURL: repoURL, Path: "waldur"}
	for _, tn := range want {
		checkTenant(ctx, t, dc, tn)
		checkApplied(ctx, t, consumer, orders.Target{Dir: tn.dir, Commit: head}, true)
	}
	usage(t, argo, "after the first sync")

	// One tenant's CPU limit changes in Waldur.
	changed := firstRendered(t, snap, 0)
	cpu, err := changed.Limits["cpu"].Int()
	if err != nil {
		t.Fatalf("resource %s: cpu limit: %v", changed.UUID, err)
	}
	changed.Limits["cpu"] = waldur.Amount(strconv.FormatInt(cpu+7, 10))
	state = writeSnapshot(t, snap)
	syncCLI(t, cfg, state)
	prev, head := head, gittest.Head(t, repo, "main")
	after := tenants(t, repo, head)
	diff := changedTenants(want, after)
	if len(diff) != 1 || len(after) != n {
		t.Fatalf("the change of one resource changed tenants %v (%d tenants now), want one", diff, len(after))
	}
	tn := after[diff[0]]
	if got := tn.quota.Object["spec"]; reflect.DeepEqual(got, want[diff[0]].quota.Object["spec"]) {
		t.Fatalf("tenant %s: the rendered quota did not change", tn.app)
	}
	// Argo CD polls every three minutes: before the refresh the order of the
	// change is not applied.
	checkApplied(ctx, t, consumer, orders.Target{Dir: tn.dir, Commit: head}, false)
	step = time.Now()
	annotate(ctx, t, dc, applications, tn.app, refreshApp, "normal")
	waitFor(ctx, t, "the changed quota of "+tn.app, func() (bool, error) {
		return quotaMatches(ctx, dc, tn)
	})
	t.Logf("one-tenant change %.7s..%.7s: quota in the cluster %s after the refresh", prev, head, time.Since(step).Round(10*time.Millisecond))
	waitSynced(ctx, t, dc, after, head, func(app string) bool { return app == tn.app })
	checkApplied(ctx, t, consumer, orders.Target{Dir: tn.dir, Commit: head}, true)
	want = after

	// One tenant disappears from Waldur (1 of n: under the deletion guard).
	gone := firstRendered(t, snap, 1)
	for i := range snap.Offerings {
		snap.Offerings[i].Resources = slices.DeleteFunc(snap.Offerings[i].Resources, func(r waldur.Resource) bool { return r.UUID == gone.UUID })
	}
	state = writeSnapshot(t, snap)
	syncCLI(t, cfg, state)
	head = gittest.Head(t, repo, "main")
	after = tenants(t, repo, head)
	removed := changedTenants(want, after)
	if len(removed) != 1 || len(after) != n-1 {
		t.Fatalf("the removal of one resource changed tenants %v (%d tenants now), want one removed", removed, len(after))
	}
	old := want[removed[0]]
	checkApplied(ctx, t, consumer, orders.Target{Dir: old.dir, Commit: head, Gone: true}, false)
	step = time.Now()
	annotate(ctx, t, dc, appSets, "waldur-tenants", refreshAppSet, "true")
	waitFor(ctx, t, "the deletion of Application "+old.app+" and namespace "+old.namespace, func() (bool, error) {
		_, aerr := dc.Resource(applications).Namespace(argotest.Namespace).Get(ctx, old.app, metav1.GetOptions{})
		_, nerr := dc.Resource(namespaces).Get(ctx, old.namespace, metav1.GetOptions{})
		return apierrors.IsNotFound(aerr) && apierrors.IsNotFound(nerr), nil
	})
	t.Logf("one tenant removed: Application and namespace %s gone %s after the refresh", old.namespace, time.Since(step).Round(10*time.Millisecond))
	checkApplied(ctx, t, consumer, orders.Target{Dir: old.dir, Commit: head, Gone: true}, true)
	waitSynced(ctx, t, dc, after, head, func(string) bool { return false })
	for _, tn := range after {
		checkTenant(ctx, t, dc, tn)
	}
	usage(t, argo, "at the end")
	t.Logf("whole test: %s", time.Since(began).Round(time.Second))
}

// writeConfig writes the synthetic config, committing to repoURL with four
// Flux shards.
func writeConfig(t *testing.T, opts synth.Options, repoURL, user string) string {
	t.Helper()
	text := string(synth.ConfigYAML(opts))
	git := "git:\n  url: " + exampleRepoURL + "\n  path: waldur\n"
	if !strings.Contains(text, git) {
		t.Fatalf("the synthetic config has no %q block to rewrite", git)
	}
	text = strings.Replace(text, git, "git:\n  url: "+repoURL+"\n  username: "+user+"\n  password_env: "+gitPasswordEnv+"\n  path: waldur\n  flux_shards: 4\n", 1)
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeSnapshot(t *testing.T, s *waldur.Snapshot) string {
	t.Helper()
	var b bytes.Buffer
	if err := waldur.WriteSnapshot(&b, s); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// syncCLI runs `waldur-gitops sync` as a site does.
func syncCLI(t *testing.T, cfg, state string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main([]string{"sync", "--config", cfg, "--snapshot", state}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("sync: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// firstRendered returns the i-th resource of s (in order) that renders: OK,
// with a CPU limit.
func firstRendered(t *testing.T, s *waldur.Snapshot, i int) *waldur.Resource {
	t.Helper()
	for o := range s.Offerings {
		for r := range s.Offerings[o].Resources {
			res := &s.Offerings[o].Resources[r]
			if res.State != "OK" || res.Limits["cpu"] == "" {
				continue
			}
			if i == 0 {
				return res
			}
			i--
		}
	}
	t.Fatal("the synthetic state has too few OK resources")
	return nil
}

// tenants reads the tenant directories the example's generator matches
// (waldur/*/cluster/*) at commit, by Application name.
func tenants(t *testing.T, repo, commit string) map[string]tenant {
	t.Helper()
	dirs := map[string]map[string]string{}
	for p, content := range gittest.Files(t, repo, commit) {
		parts := strings.Split(p, "/")
		if len(parts) != 5 || parts[0] != "waldur" || parts[2] != "cluster" {
			continue
		}
		dir := path.Join(parts[:4]...)
		if dirs[dir] == nil {
			dirs[dir] = map[string]string{}
		}
		dirs[dir][parts[4]] = content
	}
	out := map[string]tenant{}
	for dir, files := range dirs {
		if _, ok := files["kustomization.yaml"]; !ok {
			continue
		}
		parts := strings.Split(dir, "/")
		tn := tenant{app: parts[1] + "-" + parts[3], dir: path.Join(parts[1:]...)}
		for name, content := range files {
			for doc := range strings.SplitSeq(content, "\n---") {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
					t.Fatalf("%s/%s: %v", dir, name, err)
				}
				switch u.GetKind() {
				case "Namespace":
					tn.namespace = u.GetName()
				case "ResourceQuota":
					tn.quota = u
				}
			}
		}
		if tn.namespace == "" || tn.quota == nil {
			t.Fatalf("%s: no Namespace or no ResourceQuota rendered", dir)
		}
		out[tn.app] = tn
	}
	return out
}

func hasFlux(t *testing.T, repo, commit string) bool {
	t.Helper()
	for p := range gittest.Files(t, repo, commit) {
		if strings.HasPrefix(p, "waldur/_flux/") {
			return true
		}
	}
	return false
}

// changedTenants returns the Application names whose tenant was added,
// removed or changed between a and b, sorted.
func changedTenants(a, b map[string]tenant) []string {
	var out []string
	for k, x := range a {
		if y, ok := b[k]; !ok || !reflect.DeepEqual(x, y) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// waitSynced waits until the Applications are exactly those of want, each
// Synced and Healthy, those atCommit selects at commit. Argo CD
// compares an Application it was not asked to refresh with the branch's new
// tip only at its next resync (every 2-3 minutes): until then it reports the
// commit it last compared, unchanged for its directory.
func waitSynced(ctx context.Context, t *testing.T, dc dynamic.Interface, want map[string]tenant, commit string, atCommit func(app string) bool) {
	t.Helper()
	var last string
	waitFor(ctx, t, fmt.Sprintf("%d Applications Synced/Healthy (some at %.7s)", len(want), commit), func() (bool, error) {
		list, err := dc.Resource(applications).Namespace(argotest.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var extra, missing, pending []string
		seen := map[string]bool{}
		for _, app := range list.Items {
			name := app.GetName()
			seen[name] = true
			if _, ok := want[name]; !ok {
				extra = append(extra, name)
				continue
			}
			sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
			rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
			health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
			if sync != "Synced" || health != "Healthy" || rev == "" || (rev != commit && atCommit(name)) {
				pending = append(pending, fmt.Sprintf("%s %s/%s@%.7s", name, sync, health, rev))
			}
		}
		for name := range want {
			if !seen[name] {
				missing = append(missing, name)
			}
		}
		sort.Strings(extra)
		sort.Strings(missing)
		sort.Strings(pending)
		last = fmt.Sprintf("%d Applications; extra %v; missing %d; pending %d %v", len(list.Items), extra, len(missing), len(pending), pending[:min(len(pending), 5)])
		if len(extra) > 0 {
			return false, fmt.Errorf("Applications that are no tenant: %v", extra)
		}
		return len(missing) == 0 && len(pending) == 0, nil
	}, func() string { return last })
}

// checkTenant checks that the namespace exists and the quota in the cluster
// equals the rendered one.
func checkTenant(ctx context.Context, t *testing.T, dc dynamic.Interface, tn tenant) {
	t.Helper()
	if _, err := dc.Resource(namespaces).Get(ctx, tn.namespace, metav1.GetOptions{}); err != nil {
		t.Errorf("tenant %s: namespace: %v", tn.app, err)
	}
	ok, err := quotaMatches(ctx, dc, tn)
	if err != nil || !ok {
		t.Errorf("tenant %s: the ResourceQuota in the cluster is not the rendered one (%v)", tn.app, err)
	}
}

// quotaMatches says whether the cluster's ResourceQuota of tn has the
// rendered spec: the same hard limits as quantities, the rest equal.
func quotaMatches(ctx context.Context, dc dynamic.Interface, tn tenant) (bool, error) {
	got, err := dc.Resource(quotas).Namespace(tn.quota.GetNamespace()).Get(ctx, tn.quota.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	gs, _, _ := unstructured.NestedMap(got.Object, "spec")
	ws, _, _ := unstructured.NestedMap(tn.quota.Object, "spec")
	gh, _, _ := unstructured.NestedStringMap(gs, "hard")
	wh, _, _ := unstructured.NestedStringMap(ws, "hard")
	if len(gh) != len(wh) || len(wh) == 0 {
		return false, nil
	}
	for k, w := range wh {
		g, ok := gh[k]
		if !ok {
			return false, nil
		}
		gq, err1 := resource.ParseQuantity(g)
		wq, err2 := resource.ParseQuantity(w)
		if err1 != nil || err2 != nil || gq.Cmp(wq) != 0 {
			return false, nil
		}
	}
	delete(gs, "hard")
	delete(ws, "hard")
	return reflect.DeepEqual(gs, ws), nil
}

// checkApplied checks what the Argo CD consumer of orders.complete_when:
// applied says of target.
func checkApplied(ctx context.Context, t *testing.T, c orders.Consumer, target orders.Target, want bool) {
	t.Helper()
	ok, detail, err := c.AppliedAt(ctx, target)
	if err != nil || ok != want {
		t.Errorf("%s at %.7s (gone %v): applied %v (%q, %v), want %v", target.Dir, target.Commit, target.Gone, ok, detail, err, want)
	}
}

func annotate(ctx context.Context, t *testing.T, dc dynamic.Interface, gvr schema.GroupVersionResource, name, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if _, err := dc.Resource(gvr).Namespace(argotest.Namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate %s %s: %v", gvr.Resource, name, err)
	}
}

// waitFor polls cond every half second for up to five minutes; detail, if
// given, describes the last state seen in the failure.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error), detail ...func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			msg := ""
			for _, d := range detail {
				msg = d()
			}
			t.Fatalf("timed out waiting for %s: %s", what, msg)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// usage logs each Argo CD process's CPU and peak memory so far.
func usage(t *testing.T, argo *argotest.Instance, when string) {
	u := argo.Usage()
	names := make([]string, 0, len(u))
	for k := range u {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.Logf("%s %s: %.1f CPU-s (children %.1f), peak RSS %d MiB", when, k, u[k].CPU.Seconds(), u[k].ChildrenCPU.Seconds(), u[k].PeakRSS>>20)
	}
}

// testLog writes build progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
