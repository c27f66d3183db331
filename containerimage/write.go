package containerimage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations on the descriptor in the layout's index.json: the OCI one holds
// the tag (what `skopeo copy oci:DIR:TAG` selects), containerd's the full name.
const (
	AnnotationRefName       = "org.opencontainers.image.ref.name"
	AnnotationContainerName = "io.containerd.image.name"
)

// ParseReference parses the tag the image is written under, e.g.
// ghcr.io/waldur/waldur-gitops:v1.2.3; a digest reference is refused, since a
// tarball for docker load needs a tag.
func ParseReference(ref string) (name.Tag, error) {
	t, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	return t, nil
}

// WriteLayout writes r as an OCI image layout in dir. With one platform,
// index.json names the image itself; with several, it names the index of them.
// dir must not exist, be empty, or hold an earlier OCI layout, which is replaced.
func (r *Result) WriteLayout(ctx context.Context, dir string, ref name.Tag) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := clearLayout(dir); err != nil {
		return err
	}
	desc := v1.Descriptor{Annotations: map[string]string{
		AnnotationRefName:       ref.TagStr(),
		AnnotationContainerName: containerdName(ref),
	}}
	var top mutate.Appendable = r.Index
	if len(r.Images) == 1 {
		top = r.Images[0]
		p := r.Platforms[0]
		desc.Platform = &p
	}
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: top, Descriptor: desc})
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("write OCI layout %s: %w", dir, err)
	}
	return nil
}

// containerdName is ref fully qualified the way containerd names images:
// Docker Hub as docker.io, library/ for official images.
func containerdName(ref name.Tag) string {
	reg := ref.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + ref.RepositoryStr() + ":" + ref.TagStr()
}

// clearLayout makes dir ready for a fresh layout: it removes an earlier layout
// there, and refuses to touch a directory that holds anything else.
func clearLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("OCI layout directory %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("OCI layout directory %s: not empty and not an OCI layout (no oci-layout file); refusing to replace it", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove earlier OCI layout %s: %w", dir, err)
	}
	return nil
}

// WriteTarball writes the first platform's image, tagged ref, to path in the
// format docker load and podman load read (a tarball cannot hold an index).
// The file appears complete or not at all.
func (r *Result) WriteTarball(ctx context.Context, path string, ref name.Tag) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write image tarball %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	werr := tarball.Write(ref, r.Images[0], tmp)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("write image tarball %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write image tarball %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write image tarball %s: %w", path, err)
	}
	return nil
}
