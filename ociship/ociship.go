// Package ociship publishes the Flux shards of a pushed tree as OCI
// artifacts: one artifact per shard, holding the shard's entry point and a
// flattened file of objects per tenant it lists (ArtifactFiles), built
// deterministically so that a shard whose files did not change keeps its
// content digest and is not pushed again.
//
// A Flux OCIRepository per shard (gitsync.FluxLayout with OCIRepository set)
// follows the tag of its artifact; its revision is "<tag>@sha256:<digest>",
// so only the shards a commit changed get a new revision, and only their
// Kustomizations build and apply again. The artifacts use Flux's media types
// and carry the Git commit in their annotations, so every artifact is
// traceable to the commit (and the Waldur orders in its message).
package ociship

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/hostbound"
	"github.com/waldur/waldur-gitops/internal/parallel"
	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/render"
)

// Flux's media types for an artifact built by `flux push artifact`, which
// source-controller's OCIRepository accepts.
const (
	ConfigMediaType  = "application/vnd.cncf.flux.config.v1+json"
	ContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// Annotations naming where an artifact comes from.
const (
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationSource   = "org.opencontainers.image.source"
)

// Tag is the tag every shard artifact is pushed under and its OCIRepository
// follows.
const Tag = gitsync.DefaultFluxOCITag

// ShardFiles returns the files of one shard of tree (the owned tree, paths
// relative to git.path): the shard directory's kustomization.yaml and every
// file of the tenant directories it lists, as they are in Git. The artifact
// is built from them by ArtifactFiles.
func ShardFiles(tree render.Tree, shardDir string) map[string][]byte {
	files := map[string][]byte{}
	kz, ok := tree[shardDir+"/"+render.KustomizationFile]
	if !ok {
		return files
	}
	files[shardDir+"/"+render.KustomizationFile] = kz
	dirs := map[string]bool{}
	for line := range strings.Lines(string(kz)) {
		if rel, ok := strings.CutPrefix(strings.TrimSpace(line), "- ../../"); ok && rel != "" {
			dirs[path.Clean(rel)] = true
		}
	}
	addUnder(files, tree, dirs)
	return files
}

// addUnder adds to files every file of tree below one of dirs.
func addUnder(files map[string][]byte, tree render.Tree, dirs map[string]bool) {
	if len(dirs) == 0 {
		return
	}
	// One look-up per parent directory of every file, not per directory.
	for p, c := range tree {
		for i := strings.IndexByte(p, '/'); i > 0; i = nextSlash(p, i) {
			if dirs[p[:i]] {
				files[p] = c
				break
			}
		}
	}
}

func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// Archive builds the tar.gz of files deterministically: paths sorted, fixed
// headers (mode 0644, no owner, mtime zero), gzip without name or time. The
// same files always give the same bytes.
func Archive(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		h := &tar.Header{Name: p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("archive %s: %w", p, err)
		}
		if _, err := tw.Write(files[p]); err != nil {
			return nil, fmt.Errorf("archive %s: %w", p, err)
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

// Image wraps an archive as a Flux artifact whose annotations name the Git
// commit it was built from and the repository (source, secrets stripped).
func Image(archive []byte, commit, source string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	img, err := mutate.AppendLayers(img, static.NewLayer(archive, ContentMediaType))
	if err != nil {
		return nil, err
	}
	ann := map[string]string{AnnotationRevision: commit}
	if source != "" {
		ann[AnnotationSource] = redact.URL(source)
	}
	return mutate.Annotations(img, ann).(v1.Image), nil
}

// Registry is where the shard artifacts go.
type Registry struct {
	// Repository is the prefix of every shard's repository,
	// "registry.example.org/site/waldur-tenants": shard s goes to
	// "<Repository>/<s>:<Tag>".
	Repository string
	// Insecure talks plain HTTP to the registry (a test registry).
	Insecure bool
	// Username and Password authenticate; both empty: anonymous.
	Username, Password string
	// CredentialSource names where Password was read from (config keys and
	// a file or variable, never the value), for the error of a refusal.
	CredentialSource string
	// Workers bounds the shards checked and pushed at once (0: 4).
	Workers int
}

// Shard is one shard artifact to publish.
type Shard struct {
	// Name is the shard's name (its OCIRepository's and Kustomization's).
	Name string
	// Dir is the shard directory below the owned directory.
	Dir string
}

// Result is what Publish did with one shard.
type Result struct {
	Shard
	// Ref is the tag's reference, "<Repository>/<Name>:<Tag>".
	Ref string
	// Digest is the manifest digest the tag holds now ("" when the push failed).
	Digest string
	// Pushed reports a new artifact; false: the tag held the same content.
	Pushed bool
	// Err is why the shard could not be published.
	Err error
}

// Revision is the revision Flux's OCIRepository reports for the tag,
// "<tag>@sha256:…"; "" when nothing was published.
func (r Result) Revision() string {
	if r.Digest == "" {
		return ""
	}
	return Tag + "@" + r.Digest
}

// FromConfig is the registry of the OCI layout the config asks for
// (git.flux_oci_repository), its credentials read now; nil without one.
func FromConfig(g config.Git) (*Registry, error) {
	if g.FluxOCIRepository == "" {
		return nil, nil
	}
	user, pw, err := g.FluxOCICredentials()
	if err != nil {
		return nil, err
	}
	return &Registry{Repository: g.FluxOCIRepository, Insecure: g.FluxOCIInsecure, Username: user, Password: string(pw), CredentialSource: g.FluxOCICredentialSource()}, nil
}

// Ref returns the reference of a shard's tag.
func (g Registry) Ref(shard string) (name.Reference, error) {
	var opts []name.Option
	if g.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(strings.TrimSuffix(g.Repository, "/")+"/"+shard+":"+Tag, append(opts, name.StrictValidation)...)
	if err != nil {
		return nil, fmt.Errorf("flux OCI repository for shard %s: %w", shard, err)
	}
	return ref, nil
}

// RepositoryKey is the config key of the registry's repository.
const RepositoryKey = "git.flux_oci_repository"

// hostBound is the HTTP transport of every registry request: a redirect is
// followed within the registry's origin (the distribution API allows them)
// and refused to any other, where go-containerregistry would send no
// credential but the artifact would still go.
func hostBound(base http.RoundTripper) http.RoundTripper {
	return hostbound.Transport(base, RepositoryKey, hostbound.SameOrigin)
}

func (g Registry) auth() authn.Authenticator {
	if g.Username != "" || g.Password != "" {
		return authn.FromConfig(authn.AuthConfig{Username: g.Username, Password: g.Password})
	}
	return authn.Anonymous
}

func (g Registry) options(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuth(g.auth()), remote.WithTransport(hostBound(remote.DefaultTransport))}
}

// Publish builds the artifact of every shard from tree and pushes those whose
// content differs from what the registry's tag holds, annotated with commit
// and source. The results come in the order of shards; a shard that failed
// has Err set, the others go on.
func (g Registry) Publish(ctx context.Context, tree render.Tree, shards []Shard, commit, source string) []Result {
	out := make([]Result, len(shards))
	workers := g.Workers
	if workers <= 0 {
		workers = 4
	}
	parallel.For(len(shards), workers, func(i int) {
		out[i] = g.publish(ctx, tree, shards[i], commit, source)
	})
	return out
}

func (g Registry) publish(ctx context.Context, tree render.Tree, s Shard, commit, source string) Result {
	r := Result{Shard: s}
	ref, err := g.Ref(s.Name)
	if err != nil {
		r.Err = err
		return r
	}
	r.Ref = ref.String()
	data, err := Archive(ArtifactFiles(tree, s.Dir))
	if err != nil {
		r.Err = fmt.Errorf("build the artifact of shard %s: %w", s.Name, err)
		return r
	}
	layer := static.NewLayer(data, ContentMediaType)
	want, err := layer.Digest()
	if err != nil {
		r.Err = err
		return r
	}
	opts := g.options(ctx)
	if d, same, err := g.holds(ref, want, opts); err != nil {
		r.Err = err
		return r
	} else if same {
		r.Digest = d
		return r
	}
	img, err := Image(data, commit, source)
	if err != nil {
		r.Err = fmt.Errorf("build the artifact of shard %s: %w", s.Name, err)
		return r
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		r.Err = redact.Error(g.refused(fmt.Errorf("push the flux artifact %s: %w", ref, err)))
		return r
	}
	d, err := img.Digest()
	if err != nil {
		r.Err = err
		return r
	}
	r.Digest, r.Pushed = d.String(), true
	return r
}

// holds reports whether the tag holds an artifact whose content layer is
// want, and its manifest digest. A missing tag or repository is not an error.
func (g Registry) holds(ref name.Reference, want v1.Hash, opts []remote.Option) (string, bool, error) {
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && (te.StatusCode == http.StatusNotFound || hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode)) {
			return "", false, nil
		}
		return "", false, redact.Error(g.refused(fmt.Errorf("read the flux artifact %s: %w", ref, err)))
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		// Not an artifact of ours: replace it.
		return "", false, nil
	}
	if len(m.Layers) == 1 && m.Layers[0].Digest == want && m.Config.MediaType == ConfigMediaType {
		return desc.Digest.String(), true, nil
	}
	return "", false, nil
}

func hasCode(te *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range te.Errors {
		if slices.Contains(codes, d.Code) {
			return true
		}
	}
	return false
}

// Check tells whether the registry can be reached with the credentials and
// would accept a push to a shard's repository: it reads the shard's tag (a
// missing one is fine) and opens an upload session, which it cancels at once,
// as a push begins. The detail says what the tag holds.
func (g Registry) Check(ctx context.Context, shard string) (string, error) {
	ref, err := g.Ref(shard)
	if err != nil {
		return "", err
	}
	detail := ref.String() + " does not exist yet (sync pushes it)"
	if desc, err := remote.Get(ref, g.options(ctx)...); err == nil {
		detail = ref.String() + " at " + desc.Digest.String()
	} else if te := (*transport.Error)(nil); !errors.As(err, &te) || (te.StatusCode != http.StatusNotFound && !hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode)) {
		return "", redact.Error(fmt.Errorf("read %s: %w", ref, err))
	}
	repo := ref.Context()
	tr, err := transport.NewWithContext(ctx, repo.Registry, g.auth(), hostBound(remote.DefaultTransport), []string{repo.Scope(transport.PushScope)})
	if err != nil {
		return "", redact.Error(fmt.Errorf("push to %s: %w", repo, err))
	}
	client := &http.Client{Transport: tr}
	u := fmt.Sprintf("%s://%s/v2/%s/blobs/uploads/", repo.Scheme(), repo.RegistryStr(), repo.RepositoryStr())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", redact.Error(fmt.Errorf("push to %s: %w", repo, err))
	}
	resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusAccepted); err != nil {
		return "", redact.Error(fmt.Errorf("push to %s: %w", repo, err))
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		if l, err := req.URL.Parse(loc); err == nil {
			if del, err := http.NewRequestWithContext(ctx, http.MethodDelete, l.String(), nil); err == nil {
				if r, err := client.Do(del); err == nil {
					r.Body.Close()
				}
			}
		}
	}
	return detail + "; push accepted", nil
}
