package flux_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/fluxtest"
	"github.com/waldur/waldur-gitops/internal/gittest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
)

// A layout candidate, measured side by side with the Git-only one: one OCI
// artifact per shard, holding that shard's entry point and tenant
// directories, built deterministically from the pushed tree, so that an
// unchanged shard's artifact keeps its digest. An OCIRepository's revision is
// "<tag>@sha256:<digest>", so only the shards whose files changed see a new
// revision, and only their OCIRepositories are asked to reconcile. The
// artifacts are built and pushed by this test (waldur-gitops does not push
// them yet), to an in-process registry.

var ociRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}

// ociShards pushes per-shard artifacts and keeps their digests.
type ociShards struct {
	s       *site
	host    string
	digests map[string]string // shard name → digest last pushed
}

// shardArtifact builds the deterministic tar.gz of one shard: its directory
// and the tenant directories it lists, paths relative to git.path.
func shardArtifact(tree map[string]string, shardDir string) ([]byte, error) {
	files := map[string]string{}
	kz := tree[shardDir+"/kustomization.yaml"]
	files[shardDir+"/kustomization.yaml"] = kz
	for line := range strings.Lines(kz) {
		rel, ok := strings.CutPrefix(strings.TrimSpace(line), "- ../../")
		if !ok {
			continue
		}
		for p, c := range tree {
			if strings.HasPrefix(p, rel+"/") {
				files[p] = c
			}
		}
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	}) {
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(files[p])); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// push builds every shard's artifact from the branch tip and pushes those
// whose digest changed; it returns the shards pushed with their revisions.
func (o *ociShards) push() map[string]string {
	s := o.s
	s.t.Helper()
	tree := map[string]string{}
	for p, c := range gittest.Files(s.t, s.git.RepoDir(repoName), branch) {
		if rel, ok := strings.CutPrefix(p, s.cfg.Git.Path+"/"); ok {
			tree[rel] = c
		}
	}
	l := engine.Layout(s.cfg.Config)
	pushed := map[string]string{}
	for _, tg := range l.Targets {
		for n := range l.Shards {
			shard := l.ShardName(tg, n)
			data, err := shardArtifact(tree, gitsync.ShardDir(tg, n))
			if err != nil {
				s.t.Fatal(err)
			}
			img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
			img = mutate.ConfigMediaType(img, "application/vnd.cncf.flux.config.v1+json")
			img, err = mutate.AppendLayers(img, static.NewLayer(data, "application/vnd.cncf.flux.content.v1.tar+gzip"))
			if err != nil {
				s.t.Fatal(err)
			}
			d, err := img.Digest()
			if err != nil {
				s.t.Fatal(err)
			}
			if o.digests[shard] == d.String() {
				continue
			}
			ref, err := name.ParseReference(o.host+"/waldur/"+shard+":latest", name.Insecure)
			if err != nil {
				s.t.Fatal(err)
			}
			if err := remote.Write(ref, img, remote.WithContext(s.ctx)); err != nil {
				s.t.Fatalf("push %s: %v", ref, err)
			}
			o.digests[shard] = d.String()
			pushed[shard] = "latest@" + d.String()
		}
	}
	return pushed
}

// objects applies one OCIRepository and one Kustomization per shard.
func (o *ociShards) objects() {
	s := o.s
	s.t.Helper()
	l := engine.Layout(s.cfg.Config)
	var b strings.Builder
	for _, tg := range l.Targets {
		for n := range l.Shards {
			shard := l.ShardName(tg, n)
			fmt.Fprintf(&b, `---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: %[1]s, namespace: flux-system}
spec:
  url: oci://%[2]s/waldur/%[1]s
  ref: {tag: latest}
  interval: 10m
  insecure: true
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %[1]s
  namespace: flux-system
  labels: {app.kubernetes.io/managed-by: waldur-gitops}
spec:
  interval: 10m
  retryInterval: 2m
  timeout: 5m
  path: ./%[3]s
  prune: true
  sourceRef: {kind: OCIRepository, name: %[1]s}
`, shard, o.host, gitsync.ShardDir(tg, n))
		}
	}
	f := filepath.Join(s.t.TempDir(), "oci-shards.yaml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.cluster.ApplyFiles(s.ctx, f); err != nil {
		s.t.Fatal(err)
	}
}

// trigger asks the OCIRepositories of the pushed shards to reconcile now.
func (o *ociShards) trigger(pushed map[string]string) {
	for shard := range pushed {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kube.FluxReconcileAnnotation, time.Now().Format(time.RFC3339Nano))
		if _, err := o.s.dc.Resource(ociRepositories).Namespace(fluxtest.Namespace).Patch(o.s.ctx, shard, k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			o.s.t.Fatal(err)
		}
	}
}

// waitApplied waits until every shard is Ready with its latest artifact
// applied.
func (o *ociShards) waitApplied() {
	s := o.s
	s.t.Helper()
	s.waitFor("OCI shards Ready", func() (bool, string) {
		for shard, d := range o.digests {
			st, msg, applied, err := s.ready(shard)
			if err != nil || st != "True" || applied != "latest@"+d {
				return false, fmt.Sprintf("%s: Ready=%s %q, applied %s, %v", shard, st, msg, applied, err)
			}
		}
		return true, ""
	})
}

// BenchmarkFluxOneTenantChangeOCI is BenchmarkFluxOneTenantChange with the
// per-shard OCI layout candidate (see the top of this file); the same
// $WALDUR_GITOPS_FLUX_BENCH sizes apply. to-Ready here is every shard Ready
// with its own latest artifact.
func BenchmarkFluxOneTenantChangeOCI(b *testing.B) {
	tenants, shards := benchSize(b)
	s := startWith(b, tenants, shards, false)
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	b.Cleanup(reg.Close)
	o := &ociShards{s: s, host: strings.TrimPrefix(reg.URL, "http://"), digests: map[string]string{}}
	first := time.Now()
	s.sync()
	pushed := o.push()
	o.objects()
	o.trigger(pushed)
	o.waitApplied()
	b.Logf("first sync of %d tenants in %d OCI shards: every shard Ready %.1fs after the push", tenants, shards, time.Since(first).Seconds())
	r := s.firstResource()
	ns := s.namespaceOf(r.UUID)
	cpu, _ := strconv.Atoi(string(r.Limits["cpu"]))
	var toQuota, toReady time.Duration
	cpu0 := s.flux.CPU()
	n, touched := 0, 0
	for b.Loop() {
		n++
		cpu++
		r.Limits["cpu"] = waldur.Amount(strconv.Itoa(cpu))
		s.sync()
		pushed := o.push()
		at := time.Now()
		touched += len(pushed)
		o.trigger(pushed)
		s.waitFor("quota changed", func() (bool, string) { return quotaIs(s, ns, strconv.Itoa(cpu)) })
		toQuota += time.Since(at)
		o.waitApplied()
		toReady += time.Since(at)
	}
	cpu1 := s.flux.CPU()
	per := func(d time.Duration) float64 { return d.Seconds() / float64(n) }
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

// TestShardArtifactIsDeterministic: the same shard files give the same
// bytes, so an unchanged shard keeps its digest; the artifact holds the shard
// entry point and exactly its tenants' files.
func TestShardArtifactIsDeterministic(t *testing.T) {
	tree := map[string]string{
		"_flux/o.cluster.00/kustomization.yaml": "resources:\n- ../../o/cluster/a\n",
		"o/cluster/a/kustomization.yaml":        "resources: [ns.yaml]\n",
		"o/cluster/a/ns.yaml":                   "kind: Namespace\n",
		"o/cluster/ab/ns.yaml":                  "kind: Namespace\n",
		"o/cluster/b/ns.yaml":                   "kind: Namespace\n",
	}
	a, err := shardArtifact(tree, "_flux/o.cluster.00")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := shardArtifact(tree, "_flux/o.cluster.00")
	if !bytes.Equal(a, b) {
		t.Error("two builds of the same shard differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		names = append(names, path.Clean(h.Name))
	}
	want := []string{"_flux/o.cluster.00/kustomization.yaml", "o/cluster/a/kustomization.yaml", "o/cluster/a/ns.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("artifact holds %v, want %v", names, want)
	}
}
