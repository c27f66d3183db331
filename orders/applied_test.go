package orders_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

func fakeCluster() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.NamespacesGVR: "NamespaceList", kube.ResourceQuotasGVR: "ResourceQuotaList",
	})
}

func namespace(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	u.SetLabels(labels)
	return u
}

func quota(ns, name string, hard map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"hard": hard},
	}}
}

// fakeClock advances by the requested sleep and runs a hook on each sleep, so a
// test can let "the GitOps controller" apply something between polls.
type fakeClock struct {
	t      time.Time
	sleeps int
	onPoll func(n int)
}

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.t = c.t.Add(d)
	c.sleeps++
	if c.onPoll != nil {
		c.onPoll(c.sleeps)
	}
	return nil
}

// With order_done_on: applied the Create is done only once the cluster shows
// the namespace with the rendered quota; the wait polls until then.
func TestAppliedWaitsForNamespaceAndQuota(t *testing.T) {
	h := newHarness(t, "  order_done_on: applied\n  order_done_timeout_seconds: 60\n")
	dyn := fakeCluster()
	clock := &fakeClock{t: time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)}
	h.stage.Offerings[0].Cluster = kube.NewReaderFor(dyn)
	h.stage.Now, h.stage.Sleep, h.stage.PollInterval = clock.now, clock.sleep, 5*time.Second
	ctx := context.Background()
	clock.onPoll = func(n int) {
		switch n {
		case 1: // the controller creates the namespace...
			_, _ = dyn.Resource(kube.NamespacesGVR).Create(ctx, namespace("waldur-lambda", nil), metav1.CreateOptions{})
		case 2: // ...then an old quota...
			_, _ = dyn.Resource(kube.ResourceQuotasGVR).Namespace("waldur-lambda").Create(ctx,
				quota("waldur-lambda", "waldur-quota", map[string]any{"limits.cpu": "1", "limits.memory": "2Gi"}), metav1.CreateOptions{})
		case 3: // ...and finally the rendered one (same amounts, other spelling).
			_, _ = dyn.Resource(kube.ResourceQuotasGVR).Namespace("waldur-lambda").Update(ctx,
				quota("waldur-lambda", "waldur-quota", map[string]any{"limits.cpu": "3000m", "limits.memory": "4Gi"}), metav1.UpdateOptions{})
		}
	}
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("lambda", waldur.ResourceCreating, limits("cpu", "3", "ram", "4")), nil)
	c := h.cycle(true, true)
	if c.finishEr != nil {
		t.Fatal(c.finishEr)
	}
	if clock.sleeps != 3 {
		t.Errorf("polled %d times, want 3", clock.sleeps)
	}
	if e := entry(t, c.finish, ord); e.Reason != "done (backend id waldur-lambda)" || h.orderState(ord) != waldur.OrderDone {
		t.Errorf("entry %+v, order %s", e, h.orderState(ord))
	}
}

// When the cluster does not catch up in time the order stays executing, the
// reason says what is missing, and the next run (cluster caught up) finishes it.
func TestAppliedTimeoutLeavesOrderExecuting(t *testing.T) {
	h := newHarness(t, "  order_done_on: applied\n  order_done_timeout_seconds: 20\n")
	dyn := fakeCluster()
	clock := &fakeClock{t: time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)}
	h.stage.Offerings[0].Cluster = kube.NewReaderFor(dyn)
	h.stage.Now, h.stage.Sleep, h.stage.PollInterval = clock.now, clock.sleep, 5*time.Second
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("mu", waldur.ResourceCreating, limits("cpu", "1", "ram", "1")), nil)
	c := h.cycle(true, true)
	e := entry(t, c.finish, ord)
	if e.Action != changeset.Skip || !strings.Contains(e.Reason, "not applied in the cluster after 20s: namespace waldur-mu does not exist yet") {
		t.Errorf("entry %+v", e)
	}
	if clock.sleeps != 4 || h.orderState(ord) != waldur.OrderExecuting {
		t.Errorf("sleeps %d, order %s", clock.sleeps, h.orderState(ord))
	}
	ctx := context.Background()
	_, _ = dyn.Resource(kube.NamespacesGVR).Create(ctx, namespace("waldur-mu", nil), metav1.CreateOptions{})
	_, _ = dyn.Resource(kube.ResourceQuotasGVR).Namespace("waldur-mu").Create(ctx,
		quota("waldur-mu", "waldur-quota", map[string]any{"limits.cpu": "1", "limits.memory": "1Gi"}), metav1.CreateOptions{})
	h.cycle(true, true)
	if h.orderState(ord) != waldur.OrderDone {
		t.Errorf("order %s after the cluster caught up", h.orderState(ord))
	}
}

// A Terminate with order_done_on: applied waits until no namespace of the
// resource is left (found by name and by the resource label).
func TestAppliedTerminateWaitsForNamespaceRemoval(t *testing.T) {
	h := newHarness(t, "  order_done_on: applied\n  order_done_timeout_seconds: 10\n")
	dyn := fakeCluster()
	clock := &fakeClock{t: time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)}
	h.stage.Offerings[0].Cluster = kube.NewReaderFor(dyn)
	h.stage.Now, h.stage.Sleep = clock.now, clock.sleep
	// The order arrives executing, so Waldur has the resource Terminating.
	res := h.resource("nu", waldur.ResourceTerminating, limits("cpu", "1"))
	ctx := context.Background()
	_, _ = dyn.Resource(kube.NamespacesGVR).Create(ctx, namespace("waldur-nu", map[string]string{"waldur.io/resource-uuid": string(res)}), metav1.CreateOptions{})
	ord := h.order(waldur.OrderTerminate, waldur.OrderExecuting, res, nil)
	c := h.cycle(true, true)
	if e := entry(t, c.finish, ord); e.Action != changeset.Skip || !strings.Contains(e.Reason, "namespace waldur-nu of the resource still exists") {
		t.Errorf("entry %+v", e)
	}
	_ = dyn.Resource(kube.NamespacesGVR).Delete(ctx, "waldur-nu", metav1.DeleteOptions{})
	h.cycle(true, true)
	if h.orderState(ord) != waldur.OrderDone {
		t.Errorf("order %s", h.orderState(ord))
	}
}

// With Flux consuming the repository, an order_done_on: applied order is done
// only once its tenant's shard Kustomization reports the pushed commit
// applied, even when the objects already look right; until then the reason
// names the shard and both revisions. In the OCI layout the revision is the
// shard's own artifact's, not the commit's. A shard in parts: the
// Kustomization of the tenant's part, at its shard's revision.
func TestAppliedWaitsForFluxShard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		oci   bool
		parts int
	}{{"git layout", false, 1}, {"oci layout", true, 1}, {"git layout in parts", false, 3}, {"oci layout in parts", true, 3}} {
		t.Run(tc.name, func(t *testing.T) { appliedWaitsForFluxShard(t, tc.oci, tc.parts) })
	}
}

func appliedWaitsForFluxShard(t *testing.T, oci bool, parts int) {
	h := newHarness(t, "  order_done_on: applied\n  order_done_timeout_seconds: 20\n")
	target := gitsync.FluxTarget{Offering: h.cfg.Offerings[0].DirName(), Target: render.TargetCluster}
	layout := gitsync.FluxLayout{Shards: 2, RepoPath: "waldur", Targets: []gitsync.FluxTarget{target}, NamePrefix: "site-", ConfiguredParts: parts}
	h.layout = &layout
	rev := "main@sha1:0123456789abcdef0123456789abcdef01234567"
	h.stage.Flux = &orders.Flux{Layout: layout, Revision: rev}
	shard := layout.ShardName(target, gitsync.ShardOf("waldur-nu", 2))
	kname := layout.PartName(target, gitsync.ShardOf("waldur-nu", 2), gitsync.PartOf("waldur-nu", parts), parts)
	if oci {
		// The other shard's revision is not this tenant's business.
		rev = "latest@sha256:" + strings.Repeat("ab", 32)
		h.stage.Flux.Revisions = map[string]string{shard: rev, layout.ShardName(target, 1-gitsync.ShardOf("waldur-nu", 2)): "latest@sha256:other"}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.NamespacesGVR: "NamespaceList", kube.ResourceQuotasGVR: "ResourceQuotaList", kube.FluxKustomizationsGVR: "KustomizationList",
	})
	clock := &fakeClock{t: time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)}
	h.stage.Offerings[0].Cluster = kube.NewReaderFor(dyn)
	h.stage.Now, h.stage.Sleep, h.stage.PollInterval = clock.now, clock.sleep, 5*time.Second
	ctx := context.Background()
	// The objects are in place from the start: only Flux's word is missing.
	_, _ = dyn.Resource(kube.NamespacesGVR).Create(ctx, namespace("waldur-nu", nil), metav1.CreateOptions{})
	_, _ = dyn.Resource(kube.ResourceQuotasGVR).Namespace("waldur-nu").Create(ctx,
		quota("waldur-nu", "waldur-quota", map[string]any{"limits.cpu": "2", "limits.memory": "2Gi"}), metav1.CreateOptions{})
	ks := func(applied string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": kname, "namespace": "flux-system"},
			"status":   map[string]any{"lastAppliedRevision": applied},
		}}
	}
	_, _ = dyn.Resource(kube.FluxKustomizationsGVR).Namespace("flux-system").Create(ctx, ks("main@sha1:older"), metav1.CreateOptions{})

	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("nu", waldur.ResourceCreating, limits("cpu", "2", "ram", "2")), nil)
	c := h.cycle(true, true)
	e := entry(t, c.finish, ord)
	want := "Flux Kustomization flux-system/" + kname + " has applied main@sha1:older, not yet " + rev
	if e.Action != changeset.Skip || !strings.Contains(e.Reason, want) || h.orderState(ord) != waldur.OrderExecuting {
		t.Fatalf("entry %+v, order %s; want the reason to say %q", e, h.orderState(ord), want)
	}
	clock.onPoll = func(n int) {
		if n == 6 { // kustomize-controller applies the commit
			_, _ = dyn.Resource(kube.FluxKustomizationsGVR).Namespace("flux-system").Update(ctx, ks(rev), metav1.UpdateOptions{})
		}
	}
	h.cycle(true, true)
	if h.orderState(ord) != waldur.OrderDone {
		t.Errorf("order %s after the shard applied the commit", h.orderState(ord))
	}
}

const (
	argoRepo   = "https://git.example.org/site/tenants.git"
	argoCommit = "0123456789abcdef0123456789abcdef01234567"
)

// argoHarness is a harness whose offering waits, with order_done_on:
// applied, for Argo CD Applications in namespace argocd reading argoRepo at
// argoCommit, its cluster a fake holding namespaces, quotas and
// Applications, its clock fake.
func argoHarness(t *testing.T) (*harness, *dynamicfake.FakeDynamicClient, *fakeClock) {
	t.Helper()
	h := newHarness(t, "  order_done_on: applied\n  order_done_timeout_seconds: 20\n")
	h.stage.Argo, h.stage.ArgoCommit = &orders.ArgoCD{Namespace: "argocd", RepoURL: argoRepo, Path: "waldur"}, argoCommit
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.NamespacesGVR: "NamespaceList", kube.ResourceQuotasGVR: "ResourceQuotaList", kube.ArgoApplicationsGVR: "ApplicationList",
	})
	clock := &fakeClock{t: time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)}
	h.stage.Offerings[0].Cluster = kube.NewReaderFor(dyn)
	h.stage.Now, h.stage.Sleep, h.stage.PollInterval = clock.now, clock.sleep, 5*time.Second
	return h, dyn, clock
}

// With Argo CD as the consumer, an order is done only once the tenant's
// Application is Synced at the run's commit and Healthy, even when the
// objects are already in place.
func TestAppliedWaitsForArgoApplication(t *testing.T) {
	h, dyn, clock := argoHarness(t)
	ctx := context.Background()
	_, _ = dyn.Resource(kube.NamespacesGVR).Create(ctx, namespace("waldur-nu", nil), metav1.CreateOptions{})
	_, _ = dyn.Resource(kube.ResourceQuotasGVR).Namespace("waldur-nu").Create(ctx,
		quota("waldur-nu", "waldur-quota", map[string]any{"limits.cpu": "2", "limits.memory": "2Gi"}), metav1.CreateOptions{})
	dir := "waldur/" + h.cfg.Offerings[0].DirName() + "/" + render.TargetCluster + "/waldur-nu"
	app := func(revision, health string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "waldur-nu", "namespace": "argocd"},
			"spec":     map[string]any{"source": map[string]any{"repoURL": argoRepo, "path": dir}},
			"status": map[string]any{
				"sync":   map[string]any{"status": "Synced", "revision": revision},
				"health": map[string]any{"status": health},
			},
		}}
	}
	_, _ = dyn.Resource(kube.ArgoApplicationsGVR).Namespace("argocd").Create(ctx, app("fedcba9876543210fedcba9876543210fedcba98", "Healthy"), metav1.CreateOptions{})

	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("nu", waldur.ResourceCreating, limits("cpu", "2", "ram", "2")), nil)
	c := h.cycle(true, true)
	e := entry(t, c.finish, ord)
	if e.Action != changeset.Skip || !strings.Contains(e.Reason, "argo cd application waldur-nu is Synced at fedcba98") || h.orderState(ord) != waldur.OrderExecuting {
		t.Fatalf("entry %+v, order %s; want it held on the Application's older commit", e, h.orderState(ord))
	}
	clock.onPoll = func(n int) {
		switch n {
		case 2: // synced at the commit, still progressing
			_, _ = dyn.Resource(kube.ArgoApplicationsGVR).Namespace("argocd").Update(ctx, app(argoCommit, "Progressing"), metav1.UpdateOptions{})
		case 5:
			_, _ = dyn.Resource(kube.ArgoApplicationsGVR).Namespace("argocd").Update(ctx, app(argoCommit, "Healthy"), metav1.UpdateOptions{})
		}
	}
	h.cycle(true, true)
	if h.orderState(ord) != waldur.OrderDone {
		t.Errorf("order %s after the Application synced the commit and turned healthy", h.orderState(ord))
	}
}

// However many orders wait for Argo CD, a polling round lists the
// Applications once: at 10,000 tenants a list per order would read the whole
// namespace ten thousand times every few seconds.
func TestAppliedListsArgoApplicationsOncePerRound(t *testing.T) {
	h, dyn, clock := argoHarness(t)
	ctx := context.Background()
	app := func(name, revision string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": name, "namespace": "argocd"},
			"spec":     map[string]any{"source": map[string]any{"repoURL": argoRepo + "/", "path": "waldur/" + h.cfg.Offerings[0].DirName() + "/" + render.TargetCluster + "/" + name}},
			"status": map[string]any{
				"sync":   map[string]any{"status": "Synced", "revision": revision},
				"health": map[string]any{"status": "Healthy"},
			},
		}}
	}
	slugs := []string{"nu", "xi", "omicron", "pi", "rho"}
	var ords []waldur.UUID
	for _, slug := range slugs {
		ns := "waldur-" + slug
		_, _ = dyn.Resource(kube.NamespacesGVR).Create(ctx, namespace(ns, nil), metav1.CreateOptions{})
		_, _ = dyn.Resource(kube.ResourceQuotasGVR).Namespace(ns).Create(ctx,
			quota(ns, "waldur-quota", map[string]any{"limits.cpu": "2", "limits.memory": "2Gi"}), metav1.CreateOptions{})
		_, _ = dyn.Resource(kube.ArgoApplicationsGVR).Namespace("argocd").Create(ctx, app(ns, "fedcba9876543210fedcba9876543210fedcba98"), metav1.CreateOptions{})
		ords = append(ords, h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource(slug, waldur.ResourceCreating, limits("cpu", "2", "ram", "2")), nil))
	}
	lists := func() int {
		n := 0
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "list" && a.GetResource() == kube.ArgoApplicationsGVR {
				n++
			}
		}
		return n
	}
	const syncedAt = 3
	clock.onPoll = func(n int) {
		if n == syncedAt {
			for _, slug := range slugs {
				_, _ = dyn.Resource(kube.ArgoApplicationsGVR).Namespace("argocd").Update(ctx, app("waldur-"+slug, argoCommit), metav1.UpdateOptions{})
			}
		}
	}
	h.cycle(true, true)
	for _, ord := range ords {
		if h.orderState(ord) != waldur.OrderDone {
			t.Errorf("order %s is %s after every Application synced the commit", ord, h.orderState(ord))
		}
	}
	// Rounds 0..syncedAt: the last one finds every order applied.
	if got, want := lists(), syncedAt+1; got != want {
		t.Errorf("%d orders over %d rounds listed the Applications %d times, want %d (once a round)", len(slugs), syncedAt+1, got, want)
	}
}

// argoShardSite is a harness whose offering waits, with order_done_on:
// applied, for the per-shard form of Argo CD (git.flux_shard_branches: two
// shards), wired as sync wires it (orders.Site.Consumers), its cluster a
// fake holding namespaces, quotas and Applications. shardApp returns the
// Application the example generates for a shard, Synced at revision.
func argoShardSite(t *testing.T) (h *harness, dyn *dynamicfake.FakeDynamicClient, clock *fakeClock, shards []string, shardApp func(name, revision string) *unstructured.Unstructured) {
	t.Helper()
	h = newHarness(t, "  order_done_on: applied\n  order_done_timeout_seconds: 20\n")
	target := gitsync.FluxTarget{Offering: h.cfg.Offerings[0].DirName(), Target: render.TargetCluster}
	layout := gitsync.FluxLayout{Shards: 2, RepoPath: "waldur", Targets: []gitsync.FluxTarget{target}, Branches: true, BranchURL: argoRepo}
	h.layout = &layout
	shards = []string{layout.ShardName(target, 0), layout.ShardName(target, 1)}
	dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.NamespacesGVR: "NamespaceList", kube.ResourceQuotasGVR: "ResourceQuotaList", kube.ArgoApplicationsGVR: "ApplicationList",
	})
	clock = &fakeClock{t: time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)}
	h.stage.Offerings[0].Cluster = kube.NewReaderFor(dyn)
	h.stage.Now, h.stage.Sleep, h.stage.PollInterval = clock.now, clock.sleep, 5*time.Second
	site := &orders.Site{Flux: &layout, Branch: "main", Argo: &orders.ArgoCD{Namespace: "argocd", RepoURL: argoRepo, Path: "waldur"}}
	site.Consumers(h.stage, argoCommit, map[string]string{
		shards[0]: gitsync.ShardBranch(shards[0]) + "@sha1:" + shardTip(0),
		shards[1]: gitsync.ShardBranch(shards[1]) + "@sha1:" + shardTip(1),
	})
	shardApp = func(name, revision string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": name, "namespace": "argocd"},
			"spec":     map[string]any{"source": map[string]any{"repoURL": argoRepo, "path": "_flux/" + name, "targetRevision": gitsync.ShardBranch(name)}},
			"status": map[string]any{
				"sync":   map[string]any{"status": "Synced", "revision": revision},
				"health": map[string]any{"status": "Healthy"},
			},
		}}
	}
	return h, dyn, clock, shards, shardApp
}

// shardTip is the tip of shard n's branch in argoShardSite.
func shardTip(n int) string { return strings.Repeat(string(rune('a'+n)), 40) }

// In the per-shard form of Argo CD an order is done only once the
// Application following its tenant's shard branch is Synced at the
// branch's tip, not at the main commit, whatever the other shard shows; no
// Flux Kustomization is waited for.
func TestAppliedWaitsForArgoShardApplication(t *testing.T) {
	h, dyn, clock, shards, shardApp := argoShardSite(t)
	ctx := context.Background()
	mine := gitsync.ShardOf("waldur-nu", 2)
	_, _ = dyn.Resource(kube.NamespacesGVR).Create(ctx, namespace("waldur-nu", nil), metav1.CreateOptions{})
	_, _ = dyn.Resource(kube.ResourceQuotasGVR).Namespace("waldur-nu").Create(ctx,
		quota("waldur-nu", "waldur-quota", map[string]any{"limits.cpu": "2", "limits.memory": "2Gi"}), metav1.CreateOptions{})
	apps := dyn.Resource(kube.ArgoApplicationsGVR).Namespace("argocd")
	_, _ = apps.Create(ctx, shardApp(shards[mine], argoCommit), metav1.CreateOptions{})
	_, _ = apps.Create(ctx, shardApp(shards[1-mine], "fedcba9876543210fedcba9876543210fedcba98"), metav1.CreateOptions{})

	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("nu", waldur.ResourceCreating, limits("cpu", "2", "ram", "2")), nil)
	c := h.cycle(true, true)
	e := entry(t, c.finish, ord)
	want := "argo cd application " + shards[mine] + " of branch " + gitsync.ShardBranch(shards[mine]) + " is Synced at 0123456789ab, want Synced at " + shardTip(mine)[:12]
	if e.Action != changeset.Skip || !strings.Contains(e.Reason, want) || h.orderState(ord) != waldur.OrderExecuting {
		t.Fatalf("entry %+v, order %s; want the reason to say %q", e, h.orderState(ord), want)
	}
	syncedAt := clock.sleeps + 2
	clock.onPoll = func(n int) {
		if n == syncedAt { // Argo CD syncs the shard branch's tip
			_, _ = apps.Update(ctx, shardApp(shards[mine], shardTip(mine)), metav1.UpdateOptions{})
		}
	}
	h.cycle(true, true)
	if h.orderState(ord) != waldur.OrderDone || clock.sleeps != syncedAt {
		t.Errorf("order %s after %d polls; want done once the shard's Application synced its branch (poll %d)", h.orderState(ord), clock.sleeps, syncedAt)
	}
}

// In the per-shard form a termination waits, once the namespace is gone,
// for every shard of the offering to be Synced at its branch's tip: the
// tree no longer says which shard held the tenant, and that shard's
// Application prunes it.
func TestAppliedTerminateWaitsForArgoShards(t *testing.T) {
	h, dyn, clock, shards, shardApp := argoShardSite(t)
	ctx := context.Background()
	apps := dyn.Resource(kube.ArgoApplicationsGVR).Namespace("argocd")
	_, _ = apps.Create(ctx, shardApp(shards[0], shardTip(0)), metav1.CreateOptions{})
	_, _ = apps.Create(ctx, shardApp(shards[1], argoCommit), metav1.CreateOptions{})
	res := h.resource("nu", waldur.ResourceTerminating, limits("cpu", "1"))
	ord := h.order(waldur.OrderTerminate, waldur.OrderExecuting, res, nil)
	c := h.cycle(true, true)
	want := "argo cd application " + shards[1] + " of branch " + gitsync.ShardBranch(shards[1]) + " is Synced at 0123456789ab"
	if e := entry(t, c.finish, ord); e.Action != changeset.Skip || !strings.Contains(e.Reason, want) || h.orderState(ord) != waldur.OrderExecuting {
		t.Fatalf("entry %+v, order %s; want the reason to say %q", e, h.orderState(ord), want)
	}
	syncedAt := clock.sleeps + 2
	clock.onPoll = func(n int) {
		if n == syncedAt {
			_, _ = apps.Update(ctx, shardApp(shards[1], shardTip(1)), metav1.UpdateOptions{})
		}
	}
	h.cycle(true, true)
	if h.orderState(ord) != waldur.OrderDone || clock.sleeps != syncedAt {
		t.Errorf("order %s after %d polls; want done once every shard's Application synced its branch (poll %d)", h.orderState(ord), clock.sleeps, syncedAt)
	}
}
