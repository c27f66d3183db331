// Package flux_test proves the repository layout with the real consumer: Flux's
// source-controller and kustomize-controller (internal/testenv/fluxtest, built
// from the Go module proxy), run out of cluster against the test control plane
// of internal/testenv/kubetest, reading the smart-HTTP Git server of
// internal/testenv/gittest that waldur-gitops pushes to. Every step is
// triggered by the reconcile annotation on the GitRepository, never by waiting
// for an interval.
package flux_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/fluxtest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

var (
	gitRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	kustomizations  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	// The kinds the namespace backend renders.
	tenantKinds = map[string]schema.GroupVersionResource{
		"Namespace":     {Version: "v1", Resource: "namespaces"},
		"ResourceQuota": {Version: "v1", Resource: "resourcequotas"},
		"LimitRange":    {Version: "v1", Resource: "limitranges"},
		"RoleBinding":   {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	}
)

const (
	tenants    = 100
	branch     = "main"
	repoName   = "tenants.git"
	namePrefix = "e2e-" // git.flux_name_prefix: the shard names are configurable
	waitLimit  = 3 * time.Minute
)

// site is the whole stack of one test.
type site struct {
	t       testing.TB
	ctx     context.Context
	cluster *kubetest.Cluster
	flux    *fluxtest.Controllers
	dc      *dynamic.DynamicClient
	git     *gittest.Server
	cfg     *config.Loaded
	state   *waldur.State
	engine  *engine.Engine
	// limit, when set, replaces waitLimit (a benchmark's first sync of
	// thousands of tenants takes longer).
	limit time.Duration
	// expected are the controller log errors the scenario provokes.
	expected []func(fluxtest.LogEntry) bool
}

type memSource struct{ st *waldur.State }

func (m memSource) Read(context.Context) (*waldur.State, error) { return m.st, nil }

func start(t testing.TB, tenants, shards int) *site { return startWith(t, tenants, shards, true) }

// startWith is start; shardRoot false leaves out waldur-shards, for a layout
// whose shard objects the test applies itself; gitKeys are more lines of the
// config's git: block ("key: value").
func startWith(t testing.TB, tenants, shards int, shardRoot bool, gitKeys ...string) *site {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bins, err := fluxtest.EnsureBinaries(ctx, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	crds, err := fluxtest.CRDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := kubetest.Start(ctx, kubetest.Options{Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	if _, err := cluster.ApplyFiles(ctx, crds...); err != nil {
		t.Fatal(err)
	}
	s := &site{t: t, ctx: ctx, cluster: cluster}
	// waldur-shards before the first sync, and the shards no longer generated
	// after lowering the count, report their path missing.
	s.expected = append(s.expected, func(e fluxtest.LogEntry) bool {
		return e.Controller == "kustomize-controller" && strings.Contains(e.Error, "kustomization path not found")
	}, func(e fluxtest.LogEntry) bool {
		// A reconcile cut short (its context ended while the API server
		// was answering, seen under load) is retried by the controller; the
		// states the test waits for prove the retry worked.
		return e.Msg == "Unexpected error when reading response body" && e.Error == "context canceled"
	})
	s.dc, err = dynamic.NewForConfig(cluster.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}

	// A platform repository that holds more than the owned directory.
	s.git = gittest.NewServer(t)
	repoURL := s.git.CreateRepo(t, repoName, branch)
	gittest.Commit(t, s.git.RepoDir(repoName), branch, map[string]string{"README.md": "platform repository\n", "infra/x.yaml": "a: b\n"}, "seed")

	// The site's Flux objects: examples/flux with only the URL edited.
	dir := t.TempDir()
	var files []string
	add := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	add("0-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n")
	add("1-secret.yaml", fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: waldur-tenants-git\n  namespace: flux-system\nstringData:\n  username: %s\n  password: %s\n", s.git.User(), s.git.Password()))
	example := "../../examples/flux/"
	if slices.ContainsFunc(gitKeys, func(k string) bool { return strings.HasPrefix(k, "flux_oci_repository:") }) {
		example = "../../examples/flux-oci/" // the OCI layout's
	}
	if slices.Contains(gitKeys, "flux_shard_branches: true") {
		example = "../../examples/flux-branches/" // the shard-branch layout's
	}
	gr := read(t, example+"gitrepository.yaml")
	edited := regexp.MustCompile(`(?m)^  url: .*$`).ReplaceAllString(gr, "  url: "+repoURL)
	if edited == gr {
		t.Fatal(example + "gitrepository.yaml has no spec.url line to edit")
	}
	add("2-gitrepository.yaml", edited)
	if shardRoot {
		add("3-waldur-shards.yaml", read(t, example+"waldur-shards.yaml"))
	}
	if _, err := cluster.ApplyFiles(ctx, files...); err != nil {
		t.Fatal(err)
	}
	s.flux, err = fluxtest.StartWith(ctx, bins, cluster.KubeconfigPath(kubetest.Admin), fluxtest.FlagsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.flux.Stop)

	// waldur-gitops: tenants of the namespace backend in shards, pushing over
	// HTTP as the bot.
	opts := synth.Options{Tenants: tenants, Seed: 7, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	pw := filepath.Join(dir, "git-password")
	if err := os.WriteFile(pw, []byte(s.git.Password()), 0o600); err != nil {
		t.Fatal(err)
	}
	yml := strings.Replace(string(synth.ConfigYAML(opts)),
		"git:\n  url: https://git.example.org/platform/tenants.git\n  path: waldur\n",
		fmt.Sprintf("git:\n  url: %s\n  path: waldur\n  username: %s\n  password_file: %s\n  flux_shards: %d\n  flux_name_prefix: %s\n", repoURL, s.git.User(), pw, shards, namePrefix)+gitLines(gitKeys), 1)
	s.cfg, err = config.Parse([]byte(yml), filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s.state = synth.Generate(opts)
	tpls, err := render.LoadTemplates(s.cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	s.engine = engine.New(engine.Seams{Source: memSource{s.state}, Publisher: &publish.Git{Config: s.cfg.Config}},
		render.New(s.cfg.Config, tpls).Render, guard.DefaultOptions(), nil)
	return s
}

func gitLines(keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("  " + k + "\n")
	}
	return b.String()
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func read(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sync runs waldur-gitops sync and returns the pushed commit.
func (s *site) sync() string {
	s.t.Helper()
	out := s.engine.Run(s.ctx, engine.Request{Command: "sync"})
	if out.Err != nil {
		s.t.Fatalf("sync: %v", out.Err)
	}
	if out.Report.Commit == "" {
		s.t.Fatal("sync pushed no commit")
	}
	return out.Report.Commit
}

// trigger asks source-controller to fetch now, as `flux reconcile source git` does.
func (s *site) trigger() {
	s.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := s.dc.Resource(gitRepositories).Namespace(fluxtest.Namespace).Patch(s.ctx, "waldur-tenants", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// waitFor polls cond until it holds; on timeout it fails with cond's last word.
func (s *site) waitFor(what string, cond func() (bool, string)) {
	s.t.Helper()
	limit := waitLimit
	if s.limit > 0 {
		limit = s.limit
	}
	deadline := time.Now().Add(limit)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not after %s: %s", what, limit, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitPathMissing waits until the Kustomization name reports that its path
// is not in its source's artifact, as a shard no longer generated does.
func (s *site) waitPathMissing(name string) {
	s.t.Helper()
	s.waitFor(name+" path missing", func() (bool, string) {
		st, msg, _, err := s.ready(name)
		return err == nil && st == "False" && strings.Contains(msg, "kustomization path not found"), fmt.Sprintf("Ready=%s %q %v", st, msg, err)
	})
}

// ready returns a Kustomization's Ready condition and last applied revision.
func (s *site) ready(name string) (status, message, applied string, err error) {
	u, err := s.dc.Resource(kustomizations).Namespace(fluxtest.Namespace).Get(s.ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", "", err
	}
	applied, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			st, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return st, msg, applied, nil
		}
	}
	return "", "", applied, nil
}

// shardNames lists the shard Kustomizations the cluster holds.
func (s *site) shardNames() []string {
	s.t.Helper()
	l, err := s.dc.Resource(kustomizations).Namespace(fluxtest.Namespace).List(s.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=waldur-gitops"})
	if err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	slices.Sort(out)
	return out
}

// expectedShards are the shard Kustomization names the config generates
// (one per part of a shard in parts).
func (s *site) expectedShards() []string {
	l := gitsync.LayoutFor(s.cfg.Config)
	l.Previous = s.tip()
	var out []string
	for _, k := range l.Kustomizations() {
		out = append(out, k.Name)
	}
	slices.Sort(out)
	return out
}

// waitApplied waits until the GitRepository's artifact is commit and
// waldur-shards and exactly the expected shard Kustomizations are Ready with
// that revision applied; orphans lists shards that are no longer generated
// and may exist besides.
func (s *site) waitApplied(commit string, orphans ...string) {
	s.t.Helper()
	rev := branch + "@sha1:" + commit
	start := time.Now()
	s.waitFor("artifact at "+rev, func() (bool, string) {
		got := s.artifactRevision()
		return got == rev, "artifact revision " + got
	})
	want := s.expectedShards()
	s.waitFor("shards Ready at "+rev, func() (bool, string) {
		have := slices.DeleteFunc(s.shardNames(), func(n string) bool { return slices.Contains(orphans, n) })
		if !slices.Equal(have, want) {
			return false, fmt.Sprintf("shard Kustomizations %v, want %v", have, want)
		}
		for _, n := range append([]string{"waldur-shards"}, want...) {
			st, msg, applied, err := s.ready(n)
			if err != nil || st != "True" || applied != rev {
				return false, fmt.Sprintf("%s: Ready=%s %q, applied %s, %v", n, st, msg, applied, err)
			}
		}
		return true, ""
	})
	s.t.Logf("%s applied by every shard %.1fs after the trigger", commit[:8], time.Since(start).Seconds())
}

func (s *site) gitRepository() *unstructured.Unstructured {
	s.t.Helper()
	u, err := s.dc.Resource(gitRepositories).Namespace(fluxtest.Namespace).Get(s.ctx, "waldur-tenants", metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return u
}

func (s *site) artifactRevision() string {
	rev, _, _ := unstructured.NestedString(s.gitRepository().Object, "status", "artifact", "revision")
	return rev
}

// artifactFiles downloads the GitRepository's artifact and lists its files.
func (s *site) artifactFiles() []string {
	s.t.Helper()
	url, _, _ := unstructured.NestedString(s.gitRepository().Object, "status", "artifact", "url")
	// The advertised address is the storage address, on 127.0.0.1.
	resp, err := http.Get(url)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		s.t.Fatalf("artifact %s: %v", url, err)
	}
	tr := tar.NewReader(zr)
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			s.t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			out = append(out, h.Name)
		}
	}
}

func key(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// rendered builds every shard directory of the branch tip with kustomize, as
// kustomize-controller does, and returns the objects by key with the name of
// the shard that owns them.
func (s *site) rendered() (map[string]*unstructured.Unstructured, map[string]string) {
	s.t.Helper()
	fs := filesys.MakeFsInMemory()
	for p, content := range gittest.Files(s.t, s.git.RepoDir(repoName), branch) {
		if err := fs.WriteFile("/repo/"+p, []byte(content)); err != nil {
			s.t.Fatal(err)
		}
	}
	l := gitsync.LayoutFor(s.cfg.Config)
	l.Previous = s.tip()
	parts := l.Parts()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	objs, owner := map[string]*unstructured.Unstructured{}, map[string]string{}
	for _, tg := range l.Targets {
		for n := range l.Shards {
			for p := range parts {
				rm, err := k.Run(fs, path.Join("/repo", s.cfg.Git.Path, l.PartDir(tg, n, p, parts)))
				if err != nil {
					s.t.Fatalf("kustomize build of shard %d part %d: %v", n, p, err)
				}
				for _, r := range rm.Resources() {
					m, err := r.Map()
					if err != nil {
						s.t.Fatal(err)
					}
					u := &unstructured.Unstructured{Object: m}
					if _, ok := tenantKinds[u.GetKind()]; !ok {
						s.t.Fatalf("the render holds a %s, which the test does not list", u.GetKind())
					}
					objs[key(u)] = u
					owner[key(u)] = l.PartName(tg, n, p, parts)
				}
			}
		}
	}
	return objs, owner
}

// tip is the owned tree on the branch tip, paths relative to git.path.
func (s *site) tip() render.Tree {
	s.t.Helper()
	out := render.Tree{}
	for p, content := range gittest.Files(s.t, s.git.RepoDir(repoName), branch) {
		if rel, ok := strings.CutPrefix(p, s.cfg.Git.Path+"/"); ok {
			out[rel] = []byte(content)
		}
	}
	return out
}

// live lists the tenant objects on the cluster (labelled as waldur-gitops
// renders them) that are not being deleted.
func (s *site) live() map[string]*unstructured.Unstructured {
	s.t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, gvr := range tenantKinds {
		l, err := s.dc.Resource(gvr).List(s.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=waldur-gitops"})
		if err != nil {
			s.t.Fatal(err)
		}
		for i := range l.Items {
			u := &l.Items[i]
			if u.GetDeletionTimestamp() != nil {
				// Being deleted: without kube-controller-manager a pruned
				// Namespace stays Terminating. It counts as gone.
				continue
			}
			out[key(u)] = u
		}
	}
	return out
}

// checkMatches asserts the cluster holds exactly the rendered objects, with
// the rendered content, each labelled by the shard that renders it.
func (s *site) checkMatches(want map[string]*unstructured.Unstructured, owner map[string]string) {
	s.t.Helper()
	got := s.live()
	if a, b := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(a, b) {
		s.t.Fatalf("the cluster holds %d tenant objects, the render %d; only on the cluster: %v; only rendered: %v",
			len(a), len(b), minus(a, b), minus(b, a))
	}
	for k, w := range want {
		g := got[k]
		for f, v := range w.Object {
			if f == "metadata" || f == "status" {
				continue
			}
			if !covers(g.Object[f], v) {
				s.t.Errorf("%s: %s on the cluster %v, rendered %v", k, f, g.Object[f], v)
			}
		}
		for lk, lv := range w.GetLabels() {
			if g.GetLabels()[lk] != lv {
				s.t.Errorf("%s: label %s=%q on the cluster, rendered %q", k, lk, g.GetLabels()[lk], lv)
			}
		}
		if sh := g.GetLabels()["kustomize.toolkit.fluxcd.io/name"]; sh != owner[k] {
			s.t.Errorf("%s is owned by %q, rendered in %q", k, sh, owner[k])
		}
	}
}

// covers reports whether the stored value holds everything the rendered one
// says: every rendered map key with a covered value, lists element by
// element, and scalars equal — quantities compared as quantities, since the
// API server writes them in canonical form ("0.5" is stored as "500m").
func covers(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !covers(g[k], v) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !covers(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	gs, ws := fmt.Sprint(got), fmt.Sprint(want)
	if gs == ws {
		return true
	}
	gq, err1 := resource.ParseQuantity(gs)
	wq, err2 := resource.ParseQuantity(ws)
	return err1 == nil && err2 == nil && gq.Cmp(wq) == 0
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	if len(out) > 5 {
		out = append(out[:5], "…")
	}
	return out
}

// versions maps every tenant object to its resourceVersion.
func versions(objs map[string]*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, u := range objs {
		out[k] = u.GetResourceVersion()
	}
	return out
}

// uids maps every tenant namespace not being deleted to its UID: a
// namespace deleted (Terminating) or deleted and created again differs.
func (s *site) uids() map[string]types.UID {
	out := map[string]types.UID{}
	for k, u := range s.live() {
		if u.GetKind() == "Namespace" {
			out[k] = u.GetUID()
		}
	}
	return out
}

// namespaceOf returns the namespace of a resource's tenant on the cluster.
func (s *site) namespaceOf(id waldur.UUID) string {
	s.t.Helper()
	for _, u := range s.live() {
		if u.GetKind() == "Namespace" && u.GetLabels()["waldur.io/resource-uuid"] == string(id) {
			return u.GetName()
		}
	}
	s.t.Fatalf("no namespace of resource %s", id)
	return ""
}

// quotaName returns the name of the rendered ResourceQuota of a namespace.
func quotaName(objs map[string]*unstructured.Unstructured, ns string) string {
	for _, u := range objs {
		if u.GetKind() == "ResourceQuota" && u.GetNamespace() == ns {
			return u.GetName()
		}
	}
	return ""
}

// firstResource returns the first OK resource with a cpu limit.
func (s *site) firstResource() *waldur.Resource {
	for i := range s.state.Offerings {
		for j := range s.state.Offerings[i].Resources {
			r := &s.state.Offerings[i].Resources[j]
			if r.State == waldur.ResourceOK && r.Limits != nil && r.Limits["cpu"] != "" {
				return r
			}
		}
	}
	s.t.Fatal("no resource with a cpu limit")
	return nil
}

func TestFluxEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Flux controllers")
	}
	s := start(t, tenants, 4)

	t.Run("before the first sync the shard root reports its path missing", func(t *testing.T) {
		s.t = t
		s.trigger()
		s.waitPathMissing("waldur-shards")
	})

	var commit string
	t.Run("first sync", func(t *testing.T) {
		s.t = t
		commit = s.sync()
		s.trigger()
		s.waitApplied(commit)
		for _, f := range s.artifactFiles() {
			if !strings.HasPrefix(f, s.cfg.Git.Path+"/") {
				t.Errorf("the artifact holds %s, outside git.path", f)
			}
		}
		// What order_done_on: applied reads (orders.Flux): the shard's
		// lastAppliedRevision, through kube.Reader, from the real CRD.
		r, err := kube.NewReader(s.cluster.RESTConfig(kubetest.Admin))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range s.expectedShards() {
			if rev, found, err := r.FluxApplied(s.ctx, fluxtest.Namespace, n); err != nil || !found || rev != branch+"@sha1:"+commit {
				t.Errorf("kube.Reader.FluxApplied(%s) = %q, %t, %v; want the pushed commit", n, rev, found, err)
			}
		}
		want, owner := s.rendered()
		if len(want) < 3*tenants {
			t.Fatalf("only %d objects rendered for %d tenants", len(want), tenants)
		}
		s.checkMatches(want, owner)
	})

	t.Run("a one-tenant change moves no other object", func(t *testing.T) {
		s.t = t
		before := versions(s.live())
		r := s.firstResource()
		cpu, _ := strconv.Atoi(string(r.Limits["cpu"]))
		r.Limits["cpu"] = waldur.Amount(strconv.Itoa(cpu + 1))
		// This time waldur-gitops asks Flux itself (git.flux_reconcile).
		requested := s.gitRepository().GetAnnotations()[kube.FluxReconcileAnnotation]
		s.cfg.Git.FluxReconcile, s.cfg.Git.FluxKubeconfigPath = true, s.cluster.KubeconfigPath(kubetest.Admin)
		commit = s.sync()
		s.cfg.Git.FluxReconcile = false
		if now := s.gitRepository().GetAnnotations()[kube.FluxReconcileAnnotation]; now == requested || now == "" {
			t.Fatalf("sync with git.flux_reconcile did not annotate the GitRepository (%s=%q)", kube.FluxReconcileAnnotation, now)
		}
		s.waitApplied(commit)
		want, owner := s.rendered()
		s.checkMatches(want, owner)
		ns := s.namespaceOf(r.UUID)
		var moved []string
		for k, rv := range versions(s.live()) {
			if before[k] != rv {
				moved = append(moved, k)
			}
		}
		if !slices.Contains(moved, "ResourceQuota/"+ns+"/"+quotaName(want, ns)) {
			t.Errorf("the changed tenant's quota did not move: moved %v", moved)
		}
		for _, k := range moved {
			if k != "Namespace//"+ns && !strings.Contains(k, "/"+ns+"/") {
				t.Errorf("%s of another tenant moved (resourceVersion) on a change of %s", k, ns)
			}
		}
	})

	t.Run("a removal prunes only that tenant", func(t *testing.T) {
		s.t = t
		before := s.live()
		// One of 100, under the deletion guard.
		gone := s.firstResource().UUID
		for i := range s.state.Offerings {
			o := &s.state.Offerings[i]
			o.Resources = slices.DeleteFunc(o.Resources, func(r waldur.Resource) bool { return r.UUID == gone })
		}
		commit = s.sync()
		s.trigger()
		s.waitApplied(commit)
		want, _ := s.rendered()
		lost := minus(slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(want)))
		if len(lost) == 0 || !slices.ContainsFunc(lost, func(k string) bool { return strings.HasPrefix(k, "Namespace/") }) {
			t.Fatalf("the render lost %v, want one tenant's objects", lost)
		}
		s.waitFor("the removed tenant pruned", func() (bool, string) {
			live := s.live()
			for _, k := range lost {
				if u, ok := live[k]; ok && u.GetDeletionTimestamp() == nil && u.GetKind() == "Namespace" {
					return false, k + " still there"
				}
			}
			return true, ""
		})
		live := s.live()
		for k, u := range before {
			if _, kept := want[k]; kept && (live[k] == nil || live[k].GetDeletionTimestamp() != nil || live[k].GetResourceVersion() != u.GetResourceVersion()) {
				t.Errorf("%s was touched by the removal of another tenant", k)
			}
		}
	})

	t.Run("a broken tenant fails only its shard and the next sync restores it", func(t *testing.T) {
		s.t = t
		repo := s.git.RepoDir(repoName)
		var file, body string
		for p, c := range gittest.Files(t, repo, branch) {
			if strings.HasPrefix(p, s.cfg.Git.Path+"/") && !strings.Contains(p, "/_flux/") && strings.Contains(c, "kind: ResourceQuota") && (file == "" || p < file) {
				file, body = p, c
			}
		}
		broken := regexp.MustCompile(`(?m)^(\s+limits\.cpu:) .*$`).ReplaceAllString(body, `$1 "not-a-quantity"`)
		if file == "" || broken == body {
			t.Fatalf("no ResourceQuota with limits.cpu to break (%s)", file)
		}
		hand := gittest.Commit(t, repo, branch, map[string]string{file: broken}, "a hand edit")
		// <git.path>/<offering>/<target>/<tenant>/<file>
		parts := strings.SplitN(strings.TrimPrefix(file, s.cfg.Git.Path+"/"), "/", 4)
		l := gitsync.LayoutFor(s.cfg.Config)
		tree := render.Tree{}
		for p, c := range gittest.Files(t, repo, branch) {
			if rel, ok := strings.CutPrefix(p, s.cfg.Git.Path+"/"); ok {
				tree[rel] = []byte(c)
			}
		}
		shard := gitsync.Placement(tree, l.Generation)[parts[0]+"/"+parts[1]][parts[2]]
		brokenShard := l.ShardName(gitsync.FluxTarget{Offering: parts[0], Target: parts[1]}, shard)
		rev := branch + "@sha1:" + hand
		s.trigger()
		s.waitFor("only "+brokenShard+" failing", func() (bool, string) {
			for _, n := range s.expectedShards() {
				st, msg, applied, err := s.ready(n)
				switch {
				case err != nil:
					return false, err.Error()
				case n == brokenShard && (st != "False" || !strings.Contains(msg, "dry-run failed")):
					return false, fmt.Sprintf("%s: Ready=%s %q", n, st, msg)
				case n != brokenShard && (st != "True" || applied != rev):
					return false, fmt.Sprintf("%s: Ready=%s applied %s", n, st, applied)
				}
			}
			return true, ""
		})
		_, msg, _, _ := s.ready(brokenShard)
		t.Logf("%s: %s", brokenShard, msg)
		var quota string
		for doc := range strings.SplitSeq(body, "\n---") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err == nil && u.GetKind() == "ResourceQuota" {
				quota = "ResourceQuota/" + u.GetNamespace() + "/" + u.GetName()
			}
		}
		if quota == "" || !strings.Contains(msg, quota+" dry-run failed") {
			t.Errorf("%s does not name the broken object %q: %s", brokenShard, quota, msg)
		}
		s.expected = append(s.expected, func(e fluxtest.LogEntry) bool {
			return e.Controller == "kustomize-controller" && e.Name == brokenShard && strings.Contains(e.Error, quota+" dry-run failed")
		})
		commit = s.sync()
		s.trigger()
		s.waitApplied(commit)
		want, owner := s.rendered()
		s.checkMatches(want, owner)
	})

	t.Run("changing the shard count keeps every namespace", func(t *testing.T) {
		s.t = t
		uids := s.uids()
		s.cfg.Git.FluxShards = 6
		commit = s.sync()
		s.trigger()
		s.waitApplied(commit)
		want, owner := s.rendered()
		s.checkMatches(want, owner)
		if got := s.uids(); !maps.Equal(got, uids) {
			t.Fatalf("raising 4→6 changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
		}

		old := s.expectedShards()
		s.cfg.Git.FluxShards = 3
		commit = s.sync()
		orphans := minus(old, s.expectedShards())
		s.trigger()
		s.waitApplied(commit, orphans...)
		for _, n := range orphans {
			s.waitPathMissing(n)
		}
		want, owner = s.rendered()
		s.checkMatches(want, owner)
		// The procedure of docs/gitops.md: every remaining shard is Ready at
		// the new revision, so the orphaned ones are deleted.
		for _, n := range orphans {
			if err := s.dc.Resource(kustomizations).Namespace(fluxtest.Namespace).Delete(s.ctx, n, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		s.waitFor("orphaned shards deleted", func() (bool, string) {
			have := s.shardNames()
			return slices.Equal(have, s.expectedShards()), fmt.Sprint(have)
		})
		s.checkMatches(want, owner)
		if got := s.uids(); !maps.Equal(got, uids) {
			t.Fatalf("lowering 6→3 changed namespace UIDs: %d of %d differ", differ(got, uids), len(uids))
		}
	})

	t.Run("no unexpected error in the controllers' logs", func(t *testing.T) {
		s.t = t
		errs, err := s.flux.Errors()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			if !slices.ContainsFunc(s.expected, func(f func(fluxtest.LogEntry) bool) bool { return f(e) }) {
				t.Errorf("%s: %s", e.Controller, e.Line)
			}
		}
	})
}

// differ counts the keys of b whose value in a differs.
func differ[V comparable](a, b map[string]V) int {
	n := 0
	for k, v := range b {
		if a[k] != v {
			n++
		}
	}
	return n
}
