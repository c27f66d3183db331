package ociship_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/waldur/waldur-gitops/internal/testenv/registrytest"
	"github.com/waldur/waldur-gitops/ociship"
	"github.com/waldur/waldur-gitops/render"
)

// site is an owned tree with two shards of one target: tenants a and b as
// render writes them, ab with a hand-edited kustomization (a patch).
func site() render.Tree {
	return render.Tree{
		"_flux/o.cluster.00/kustomization.yaml": []byte("# Flux shard 0 of 2 of o/cluster: 1 tenant(s).\nresources:\n- ../../o/cluster/a\n"),
		"_flux/o.cluster.01/kustomization.yaml": []byte("resources:\n- ../../o/cluster/ab\n- ../../o/cluster/b\n"),
		"_flux/flux-kustomizations.yaml":        []byte("kind: Kustomization\n"),
		"o/cluster/a/kustomization.yaml":        plainKustomization("a", "ns.yaml", "quota.yaml"),
		"o/cluster/a/ns.yaml":                   []byte("kind: Namespace\nmetadata:\n  name: a\n"),
		"o/cluster/a/quota.yaml":                []byte("kind: ResourceQuota\nmetadata:\n  name: q\n  namespace: a"),
		"o/cluster/ab/kustomization.yaml":       []byte("resources:\n- ns.yaml\npatches:\n- path: p.yaml\n"),
		"o/cluster/ab/ns.yaml":                  []byte("kind: Namespace\nmetadata: {name: ab}\n"),
		"o/cluster/b/kustomization.yaml":        plainKustomization("b", "ns.yaml"),
		"o/cluster/b/ns.yaml":                   []byte("kind: Namespace\nmetadata: {name: b}\n"),
	}
}

// plainKustomization is a tenant kustomization as render writes it.
func plainKustomization(name string, files ...string) []byte {
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  annotations:\n    waldur.io/resource-uuid: 0123\n  name: " + name + "\nresources:\n"
	for _, f := range files {
		k += "- " + f + "\n"
	}
	return []byte(k)
}

var shards = []ociship.Shard{{Name: "waldur-o-cluster-00", Dir: "_flux/o.cluster.00"}, {Name: "waldur-o-cluster-01", Dir: "_flux/o.cluster.01"}}

func names(t *testing.T, archive []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header carries a time %v or name %q", zr.ModTime, zr.Name)
	}
	tr := tar.NewReader(zr)
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.IsZero() && h.ModTime.Unix() != 0 || h.Uid != 0 || h.Uname != "" {
			t.Errorf("%s: header carries time %v, owner %d %q", h.Name, h.ModTime, h.Uid, h.Uname)
		}
		out = append(out, h.Name)
	}
}

// The same shard files give the same bytes, so an unchanged shard keeps its
// digest; the artifact holds the shard entry point listing a stream of
// objects per plain tenant (o/cluster/ab is not o/cluster/a), and a
// hand-edited tenant as its directory.
func TestArchiveIsDeterministic(t *testing.T) {
	tree := site()
	a, err := ociship.Archive(ociship.ArtifactFiles(tree, "_flux/o.cluster.00"))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := ociship.Archive(ociship.ArtifactFiles(tree, "_flux/o.cluster.00"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("two builds of the same shard differ")
		}
	}
	want := []string{"_flux/o.cluster.00/kustomization.yaml", "_flux/o.cluster.00/tenants/a.yaml"}
	if got := names(t, a); !slices.Equal(got, want) {
		t.Errorf("artifact holds %v, want %v", got, want)
	}
	want = []string{"_flux/o.cluster.01/kustomization.yaml", "_flux/o.cluster.01/tenants/b.yaml", "o/cluster/ab/kustomization.yaml", "o/cluster/ab/ns.yaml"}
	b, _ := ociship.Archive(ociship.ArtifactFiles(tree, "_flux/o.cluster.01"))
	if got := names(t, b); !slices.Equal(got, want) {
		t.Errorf("artifact holds %v, want %v", got, want)
	}
	if got := ociship.ArtifactFiles(tree, "_flux/o.cluster.09"); len(got) != 0 {
		t.Errorf("a shard that does not exist holds %v", got)
	}
}

// A plain tenant's objects go into its stream in the order its kustomization
// lists them, each headed by the file it comes from; the shard's
// kustomization lists the stream where the tenant's directory was and keeps
// every other entry and comment. Anything render does not write keeps the
// tenant a directory.
func TestArtifactFiles(t *testing.T) {
	tree := site()
	got := ociship.ArtifactFiles(tree, "_flux/o.cluster.00")
	wantKz := "# Flux shard 0 of 2 of o/cluster: 1 tenant(s).\nresources:\n- tenants/a.yaml\n"
	wantStream := "---\n# o/cluster/a/ns.yaml\nkind: Namespace\nmetadata:\n  name: a\n" +
		"---\n# o/cluster/a/quota.yaml\nkind: ResourceQuota\nmetadata:\n  name: q\n  namespace: a\n"
	if k := string(got["_flux/o.cluster.00/kustomization.yaml"]); k != wantKz {
		t.Errorf("kustomization:\n%s\nwant:\n%s", k, wantKz)
	}
	if s := string(got["_flux/o.cluster.00/tenants/a.yaml"]); s != wantStream {
		t.Errorf("stream:\n%s\nwant:\n%s", s, wantStream)
	}
	got = ociship.ArtifactFiles(tree, "_flux/o.cluster.01")
	if k := string(got["_flux/o.cluster.01/kustomization.yaml"]); k != "resources:\n- ../../o/cluster/ab\n- tenants/b.yaml\n" {
		t.Errorf("a shard with a hand-edited tenant lists %q", k)
	}

	for _, tc := range []struct{ name, kz string }{
		{"patch", "kind: Kustomization\nresources:\n- ns.yaml\npatches:\n- path: ns.yaml\n"},
		{"flow list", "kind: Kustomization\nresources: [ns.yaml]\n"},
		{"file elsewhere", "kind: Kustomization\nresources:\n- ../b/ns.yaml\n"},
		{"missing file", "kind: Kustomization\nresources:\n- gone.yaml\n"},
		{"quoted name", "kind: Kustomization\nresources:\n- \"ns.yaml\"\n"},
		{"a directory", "kind: Kustomization\nresources:\n- sub\n"},
		{"not a kustomization", "kind: Component\nresources:\n- ns.yaml\n"},
		{"indented resources", "kind: Kustomization\nresources:\n  - ns.yaml\n"},
		{"no kustomization", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := site()
			tree["o/cluster/a/kustomization.yaml"] = []byte(tc.kz)
			if tc.kz == "" {
				delete(tree, "o/cluster/a/kustomization.yaml")
			}
			got := ociship.ArtifactFiles(tree, "_flux/o.cluster.00")
			if _, ok := got["_flux/o.cluster.00/tenants/a.yaml"]; ok {
				t.Errorf("tenant a was flattened: %q", got["_flux/o.cluster.00/tenants/a.yaml"])
			}
			if string(got["o/cluster/a/ns.yaml"]) != string(tree["o/cluster/a/ns.yaml"]) || !strings.Contains(string(got["_flux/o.cluster.00/kustomization.yaml"]), "- ../../o/cluster/a\n") {
				t.Errorf("tenant a not carried as its directory: %v", slices.Sorted(maps.Keys(got)))
			}
		})
	}
}

// A first publish pushes every shard; publishing the same tree again pushes
// nothing and keeps the digests (the tag is read first); a change to one
// tenant pushes exactly that tenant's shard. The artifacts carry Flux's media
// types and the commit.
func TestPublishPushesOnlyChangedShards(t *testing.T) {
	ctx := context.Background()
	host := registrytest.Start(t, nil)
	reg := ociship.Registry{Repository: host + "/site/tenants", Insecure: true}
	tree := site()
	first := reg.Publish(ctx, tree, shards, "c1", "https://bot:secret-pw@git.example.org/t.git")
	for _, r := range first {
		if r.Err != nil || !r.Pushed || !strings.HasPrefix(r.Revision(), "latest@sha256:") {
			t.Fatalf("first publish of %s: pushed %v, revision %q, %v", r.Name, r.Pushed, r.Revision(), r.Err)
		}
	}
	ref, _ := name.ParseReference(first[0].Ref, name.Insecure)
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != ociship.ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ociship.ContentMediaType {
		t.Errorf("media types: config %s, layers %v", m.Config.MediaType, m.Layers)
	}
	if m.Annotations[ociship.AnnotationRevision] != "c1" {
		t.Errorf("annotations %v do not name the commit", m.Annotations)
	}
	if src := m.Annotations[ociship.AnnotationSource]; strings.Contains(src, "secret-pw") || !strings.Contains(src, "git.example.org/t.git") {
		t.Errorf("source annotation %q", src)
	}

	again := reg.Publish(ctx, tree, shards, "c2", "")
	for i, r := range again {
		if r.Err != nil || r.Pushed || r.Digest != first[i].Digest {
			t.Errorf("unchanged %s: pushed %v, digest %s (was %s), %v", r.Name, r.Pushed, r.Digest, first[i].Digest, r.Err)
		}
	}

	tree["o/cluster/b/ns.yaml"] = []byte("kind: Namespace\nmetadata: {name: b, labels: {x: y}}\n")
	third := reg.Publish(ctx, tree, shards, "c3", "")
	if third[0].Pushed || third[0].Digest != first[0].Digest {
		t.Errorf("shard 0 changed nothing but was pushed: %+v", third[0])
	}
	if !third[1].Pushed || third[1].Digest == first[1].Digest || third[1].Err != nil {
		t.Errorf("shard 1 changed but was not pushed anew: %+v", third[1])
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != first[0].Digest {
		t.Errorf("the tag of shard 0 moved to %s", desc.Digest)
	}
}

// A tag holding something else (another tool's image) is replaced.
func TestPublishReplacesAForeignTag(t *testing.T) {
	ctx := context.Background()
	host := registrytest.Start(t, nil)
	reg := ociship.Registry{Repository: host + "/w", Insecure: true}
	data, _ := ociship.Archive(map[string][]byte{"x": []byte("y")})
	img, _ := ociship.Image(data, "other", "")
	ref, _ := reg.Ref(shards[0].Name)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	r := reg.Publish(ctx, site(), shards[:1], "c1", "")[0]
	if r.Err != nil || !r.Pushed {
		t.Fatalf("foreign tag not replaced: %+v", r)
	}
}

// The credentials go to the registry as basic auth; a refused login fails
// the shard with an error that does not carry the password.
func TestPublishCredentials(t *testing.T) {
	ctx := context.Background()
	const user, pw = "bot", "s3cret-registry-pass"
	var sawAuth atomic.Bool // the registry serves blobs concurrently
	host := registrytest.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pw {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			sawAuth.Store(true)
			h.ServeHTTP(w, r)
		})
	})
	good := ociship.Registry{Repository: host + "/w", Insecure: true, Username: user, Password: pw}
	if r := good.Publish(ctx, site(), shards[:1], "c1", "")[0]; r.Err != nil || !r.Pushed || !sawAuth.Load() {
		t.Fatalf("push with credentials: %+v, auth seen %v", r, sawAuth.Load())
	}
	bad := ociship.Registry{Repository: host + "/w", Insecure: true, Username: user, Password: "wrong-" + pw, CredentialSource: "git.flux_oci_password_env $REG_PW"}
	r := bad.Publish(ctx, site(), shards, "c1", "")
	for _, r := range r {
		if r.Err == nil {
			t.Fatalf("%s: a refused login did not fail", r.Name)
		}
		if !strings.Contains(r.Err.Error(), "(check the credential, git.flux_oci_password_env $REG_PW)") {
			t.Errorf("the error does not name where the password came from: %v", r.Err)
		}
		if strings.Contains(r.Err.Error(), pw) {
			t.Errorf("the error carries the password: %v", r.Err)
		}
	}
}

// An unreachable registry or a bad repository fails every shard, each with
// its own error naming it.
func TestPublishFailures(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.NotFoundHandler())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	tests := []struct{ name, repo, want string }{
		{"registry down", host + "/w", "waldur-o-cluster-00"},
		{"bad repository", host + "/Upper", "flux OCI repository for shard waldur-o-cluster-00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ociship.Registry{Repository: tc.repo, Insecure: true}.Publish(ctx, site(), shards, "c1", "")
			if r[0].Err == nil || !strings.Contains(r[0].Err.Error(), tc.want) || r[0].Digest != "" || r[0].Revision() != "" {
				t.Errorf("got %+v, want an error naming %q", r[0], tc.want)
			}
			if r[1].Err == nil {
				t.Error("shard 1 did not fail")
			}
		})
	}
}

// BenchmarkShardArtifacts10k builds the artifacts of a site of 10,000
// tenants (four files each) in 16 shards: the work every OCI-layout run does
// before it compares digests with the registry.
func BenchmarkShardArtifacts10k(b *testing.B) {
	tree := render.Tree{}
	const shardsN = 16
	lists := make([]strings.Builder, shardsN)
	for i := range 10000 {
		dir := fmt.Sprintf("o/cluster/waldur-tenant-%05d", i)
		files := []string{"namespace.yaml", "quota.yaml", "rolebinding.yaml"}
		for _, f := range files {
			tree[dir+"/"+f] = []byte(strings.Repeat("x: "+dir+"\n", 12))
		}
		tree[dir+"/kustomization.yaml"] = plainKustomization(dir, files...)
		fmt.Fprintf(&lists[i%shardsN], "- ../../%s\n", dir)
	}
	var sh []ociship.Shard
	for s := range shardsN {
		d := fmt.Sprintf("_flux/o.cluster.%02d", s)
		tree[d+"/kustomization.yaml"] = []byte("resources:\n" + lists[s].String())
		sh = append(sh, ociship.Shard{Name: fmt.Sprintf("waldur-o-cluster-%02d", s), Dir: d})
	}
	b.ResetTimer()
	for b.Loop() {
		for _, s := range sh {
			if _, err := ociship.Archive(ociship.ArtifactFiles(tree, s.Dir)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Check passes with credentials that may push, before and after the first
// push, and fails, without the password in its error, with ones that may
// not.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	const user, pw = "bot", "check-pass-51d0e2"
	var readOnly atomic.Bool
	readOnly.Store(true)
	host := registrytest.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pw || readOnly.Load() && r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	reg := ociship.Registry{Repository: host + "/w", Insecure: true, Username: user, Password: pw}
	if _, err := reg.Check(ctx, shards[0].Name); err == nil || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "push to") {
		t.Errorf("read-only credentials: %v", err)
	}
	readOnly.Store(false)
	if d, err := reg.Check(ctx, shards[0].Name); err != nil || !strings.Contains(d, "does not exist yet") || !strings.Contains(d, "push accepted") {
		t.Errorf("before the first push: %q, %v", d, err)
	}
	reg.Publish(ctx, site(), shards[:1], "c1", "")
	if d, err := reg.Check(ctx, shards[0].Name); err != nil || !strings.Contains(d, "@sha256:") && !strings.Contains(d, " at sha256:") {
		t.Errorf("after the first push: %q, %v", d, err)
	}
	bad := reg
	bad.Password = "wrong-" + pw
	if _, err := bad.Check(ctx, shards[0].Name); err == nil || strings.Contains(err.Error(), pw) {
		t.Errorf("a wrong password: %v", err)
	}
}
