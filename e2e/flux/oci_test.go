package flux_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/testenv/fluxtest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/registrytest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/ociship"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// The OCI layout (git.flux_oci_repository, docs/gitops.md#the-oci-layout):
// after every push waldur-gitops pushes one OCI artifact per shard whose
// content changed, to a registry (here go-containerregistry's, in process),
// and the shard Kustomizations build from one OCIRepository each, whose
// revision is "latest@sha256:<digest>": only the shards a commit changed see
// a new revision, and only their OCIRepositories are asked to reconcile
// (git.flux_reconcile).

// startOCI starts the stack with the OCI layout: waldur-shards applies the
// generated OCIRepositories and Kustomizations from the GitRepository, the
// shard artifacts come from waldur-gitops through the registry.
func startOCI(t testing.TB, tenants, shards int, gitKeys ...string) *site {
	t.Helper()
	host := registrytest.Start(t, nil)
	s := startWith(t, tenants, shards, true, append([]string{"flux_oci_repository: " + host + "/site/tenants", "flux_oci_insecure: true"}, gitKeys...)...)
	// Ask Flux to fetch what was pushed, through the test cluster.
	s.cfg.Git.FluxReconcile, s.cfg.Git.FluxKubeconfigPath = true, s.cluster.KubeconfigPath(kubetest.Admin)
	return s
}

// syncOCI runs sync and returns its outcome and the number of artifacts it
// pushed.
func (s *site) syncOCI() (*engine.Outcome, int) {
	s.t.Helper()
	out := s.engine.Run(s.ctx, engine.Request{Command: "sync"})
	if out.Err != nil {
		s.t.Fatalf("sync: %v", out.Err)
	}
	pushed := 0
	for _, e := range out.Report.Changes {
		if e.Kind == "OCIArtifact" && e.Action == changeset.Create {
			pushed++
		}
	}
	return out, pushed
}

// waitOCIApplied waits until every shard's OCIRepository is Ready with the
// revision of its pushed artifact and its Kustomizations have applied it.
func (s *site) waitOCIApplied(revs map[string]string) {
	s.t.Helper()
	names, _ := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	for _, n := range names {
		if revs[n] == "" {
			s.t.Fatalf("no revision of shard %s in %v", n, revs)
		}
	}
	s.waitSourcesApplied(kube.FluxOCIRepositoriesGVR, revs)
}

// The OCI layout end to end, with the real Flux controllers: after the first
// sync every shard's OCIRepository is Ready at the digest waldur-gitops pushed
// and its Kustomization applied it, the cluster holding exactly the rendered
// objects; a one-tenant change pushes exactly one artifact, reaches the
// cluster, and moves no other object's resourceVersion; a run with nothing
// new pushes nothing.
func TestFluxOCILayout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Flux controllers")
	}
	const shards = 3
	s := startOCI(t, 30, shards)
	out, pushed := s.syncOCI()
	if pushed != shards {
		t.Fatalf("first sync pushed %d artifacts, want %d", pushed, shards)
	}
	s.waitOCIApplied(out.Published.FluxRevisions)
	// examples/flux-oci: the Git artifact holds the shard objects only.
	for _, f := range s.artifactFiles() {
		if !strings.HasPrefix(f, s.cfg.Git.Path+"/_flux/") {
			t.Errorf("the GitRepository's artifact holds %s", f)
		}
	}
	want, owner := s.rendered()
	s.checkMatches(want, owner)

	r := s.firstResource()
	ns := s.namespaceOf(r.UUID)
	before := versions(s.live())
	cpu, _ := strconv.Atoi(string(r.Limits["cpu"]))
	r.Limits["cpu"] = waldur.Amount(strconv.Itoa(cpu + 1))
	first := out.Published.FluxRevisions
	out, pushed = s.syncOCI()
	if pushed != 1 {
		t.Fatalf("a one-tenant change pushed %d artifacts, want 1", pushed)
	}
	var moved []string
	for n, rev := range out.Published.FluxRevisions {
		if rev != first[n] {
			moved = append(moved, n)
		}
	}
	if len(moved) != 1 {
		t.Fatalf("shard revisions moved: %v", moved)
	}
	s.waitFor("quota changed", func() (bool, string) { return quotaIs(s, ns, strconv.Itoa(cpu+1)) })
	s.waitOCIApplied(out.Published.FluxRevisions)
	after := versions(s.live())
	quota := "ResourceQuota/" + ns + "/" + quotaName(s.live(), ns)
	for k, rv := range before {
		if k != quota && after[k] != rv {
			t.Errorf("%s: resourceVersion %s → %s, though only %s changed", k, rv, after[k], quota)
		}
	}
	if after[quota] == before[quota] {
		t.Errorf("%s did not change", quota)
	}
	want, owner = s.rendered()
	s.checkMatches(want, owner)

	if _, pushed := s.syncOCI(); pushed != 0 {
		t.Errorf("a run with nothing new pushed %d artifacts", pushed)
	}

	// Artifacts of the layout before tenants were flattened (a directory and
	// kustomization per tenant), then the flattened ones again: the same
	// objects either way, so the switch moves no resourceVersion and prunes
	// nothing in either direction.
	before = versions(s.live())
	s.waitOCIApplied(s.pushNested(out.Published.After))
	if out, pushed = s.syncOCI(); pushed != shards {
		t.Errorf("going back to flattened artifacts pushed %d, want %d", pushed, shards)
	}
	s.waitOCIApplied(out.Published.FluxRevisions)
	if after := versions(s.live()); !maps.Equal(after, before) {
		t.Errorf("switching the artifact layout moved %d of %d objects", differ(after, before), len(before))
	}
	want, owner = s.rendered()
	s.checkMatches(want, owner)

	// Lowering the count: the shard no longer generated gets an artifact
	// without its directory, so it reports its path missing instead of
	// applying the tenants that moved to the others (docs/gitops.md).
	uids := s.uids()
	names, _ := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	orphan := names[len(names)-1]
	s.cfg.Git.FluxShards = shards - 1
	out, pushed = s.syncOCI()
	if pushed < 2 {
		t.Errorf("lowering the count pushed %d artifacts: the orphan's and at least one receiving shard's", pushed)
	}
	s.waitOCIApplied(out.Published.FluxRevisions)
	s.waitPathMissing(orphan)
	want, owner = s.rendered()
	s.checkMatches(want, owner)
	if got := s.uids(); !maps.Equal(got, uids) {
		t.Errorf("lowering the count changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
	}

	// A new generation (docs/gitops.md#resharding-a-site): every tenant goes
	// to the new shards, which take the objects over; the old shards report
	// their path missing, and deleting them (and the orphan of the lowering
	// above) deletes no tenant object.
	oldNames, _ := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	s.cfg.Git.FluxShards, s.cfg.Git.FluxShardGeneration = shards+1, 1
	newNames, _ := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	out, pushed = s.syncOCI()
	if pushed != len(newNames)+len(oldNames) {
		t.Errorf("a new generation pushed %d artifacts, want %d new shards and %d orphans", pushed, len(newNames), len(oldNames))
	}
	s.waitOCIApplied(out.Published.FluxRevisions)
	for _, n := range oldNames {
		s.waitPathMissing(n)
	}
	want, owner = s.rendered()
	s.checkMatches(want, owner)
	for _, n := range append(oldNames, orphan) {
		for _, gvr := range []schema.GroupVersionResource{kustomizations, kube.FluxOCIRepositoriesGVR} {
			if err := s.dc.Resource(gvr).Namespace(fluxtest.Namespace).Delete(s.ctx, n, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete the old shard %s: %v", n, err)
			}
		}
	}
	s.waitFor("old shards deleted", func() (bool, string) {
		for _, n := range append(oldNames, orphan) {
			if _, err := s.dc.Resource(kustomizations).Namespace(fluxtest.Namespace).Get(s.ctx, n, metav1.GetOptions{}); err == nil {
				return false, n + " still there"
			}
		}
		return true, ""
	})
	s.checkMatches(want, owner)
	if got := s.uids(); !maps.Equal(got, uids) {
		t.Errorf("a new shard generation changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
	}
	errs, err := s.flux.Errors()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		if !slices.ContainsFunc(s.expected, func(f func(fluxtest.LogEntry) bool) bool { return f(e) }) {
			t.Errorf("%s: %s", e.Controller, e.Line)
		}
	}
}

// pushNested pushes every shard's artifact as the layout before flattening
// built it (the shard's kustomization and its tenant directories, as
// ociship.ShardFiles returns them), asks Flux to fetch them, and returns
// their revisions.
func (s *site) pushNested(tree render.Tree) map[string]string {
	s.t.Helper()
	reg, err := ociship.FromConfig(s.cfg.Git)
	if err != nil {
		s.t.Fatal(err)
	}
	revs := map[string]string{}
	names, dirs := gitsync.LayoutFor(s.cfg.Config).ShardDirs()
	for i, n := range names {
		data, err := ociship.Archive(ociship.ShardFiles(tree, dirs[i]))
		if err != nil {
			s.t.Fatal(err)
		}
		img, err := ociship.Image(data, "nested", "")
		if err != nil {
			s.t.Fatal(err)
		}
		ref, err := reg.Ref(n)
		if err != nil {
			s.t.Fatal(err)
		}
		if err := remote.Write(ref, img, remote.WithContext(s.ctx)); err != nil {
			s.t.Fatalf("push the nested artifact of %s: %v", n, err)
		}
		d, err := img.Digest()
		if err != nil {
			s.t.Fatal(err)
		}
		revs[n] = ociship.Tag + "@" + d.String()
		if err := kube.RequestFluxOCIReconcile(s.ctx, s.dc, fluxtest.Namespace, n, time.Now()); err != nil {
			s.t.Fatal(err)
		}
	}
	return revs
}

// BenchmarkFluxOneTenantChangeOCI is BenchmarkFluxOneTenantChange with the
// OCI layout, as waldur-gitops runs it (git.flux_oci_repository,
// git.flux_reconcile): the times count from the end of the run, which pushed
// the commit, then the changed shard's artifact, then asked for its
// reconcile. The same $WALDUR_GITOPS_FLUX_BENCH sizes apply; to-Ready is every
// shard Ready with its own latest artifact.
func BenchmarkFluxOneTenantChangeOCI(b *testing.B) {
	tenants, shards, keys := benchSize(b)
	s := startOCI(b, tenants, shards, keys...)
	first := time.Now()
	out, _ := s.syncOCI()
	s.limit = 30 * time.Minute // the first sync of 10,000 tenants
	s.waitOCIApplied(out.Published.FluxRevisions)
	s.limit = 0
	b.Logf("first sync of %d tenants in %d OCI shards: every shard Ready %.1fs after the start of the run", tenants, shards, time.Since(first).Seconds())
	r := s.firstResource()
	ns := s.namespaceOf(r.UUID)
	cpu, _ := strconv.Atoi(string(r.Limits["cpu"]))
	var toQuota, toReady, run time.Duration
	profiled := s.profile(b)
	cpu0 := s.flux.CPU()
	n, touched := 0, 0
	for b.Loop() {
		n++
		cpu++
		r.Limits["cpu"] = waldur.Amount(strconv.Itoa(cpu))
		start := time.Now()
		out, pushed := s.syncOCI()
		at := time.Now()
		run += at.Sub(start)
		touched += pushed
		s.waitFor("quota changed", func() (bool, string) { return quotaIs(s, ns, strconv.Itoa(cpu)) })
		toQuota += time.Since(at)
		s.waitOCIApplied(out.Published.FluxRevisions)
		toReady += time.Since(at)
	}
	cpu1 := s.flux.CPU()
	profiled()
	per := func(d time.Duration) float64 { return d.Seconds() / float64(n) }
	b.ReportMetric(per(run), "s-run")
	b.ReportMetric(per(toQuota), "s-to-quota")
	b.ReportMetric(per(toReady), "s-to-ready")
	b.ReportMetric(per(cpu1["kustomize-controller"]-cpu0["kustomize-controller"]), "kustomize-cpu-s/op")
	b.ReportMetric(per(cpu1["source-controller"]-cpu0["source-controller"]), "source-cpu-s/op")
	b.ReportMetric(float64(touched)/float64(n), "shards-pushed/op")
}

// quotaIs reports whether a ResourceQuota of ns holds limits.cpu = v.
func quotaIs(s *site, ns, v string) (bool, string) {
	l, err := s.dc.Resource(tenantKinds["ResourceQuota"]).Namespace(ns).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, q := range l.Items {
		if got, _, _ := unstructured.NestedString(q.Object, "spec", "hard", "limits.cpu"); got == v {
			return true, ""
		}
	}
	return false, "quota of " + ns + " not changed"
}
