// Package containerimage assembles the waldur-gitops container image in Go,
// without a Docker daemon: FROM scratch, a static binary, a non-root user, a CA
// bundle and /tmp, in reproducible layers. It writes an OCI image layout and a
// tarball that docker load accepts. The Dockerfile at the top of the repository
// builds the same layout with Docker; dockerfile_test.go keeps the two in step.
package containerimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"embed"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image layout. The Dockerfile uses the same values; dockerfile_test.go
// fails when one side changes without the other.
const (
	// BinaryPath is where the binary lives in the image; it is the entrypoint.
	BinaryPath = "/usr/local/bin/waldur-gitops"
	// CertFile is the PEM CA bundle, at the first path Go's crypto/x509 reads on Linux.
	CertFile = "/etc/ssl/certs/ca-certificates.crt"
	// UID and GID are the non-root user and group the image runs as.
	UID, GID = 65532, 65532
	// UserName is the name /etc/passwd gives UID.
	UserName = "nonroot"
	// HomeDir is the home directory of UserName, owned by it.
	HomeDir = "/home/nonroot"
	// User is the image config's User: numeric, so Kubernetes' runAsNonRoot can verify it.
	User = "65532:65532"
	// WorkingDir is the image's working directory.
	WorkingDir = HomeDir
	// PathEnv is the image's PATH.
	PathEnv = "/usr/local/bin"
	// Source is the repository URL, for the org.opencontainers.image.source label.
	Source = "https://github.com/waldur/waldur-gitops"
	// Title is the org.opencontainers.image.title label.
	Title = "waldur-gitops"
	// DefaultRepository is the repository the image is tagged with unless told otherwise.
	DefaultRepository = "ghcr.io/waldur/waldur-gitops"
	// VersionVariable is the linker symbol that carries the version (internal/version.Version).
	VersionVariable = "github.com/waldur/waldur-gitops/internal/version.Version"
	// CommitVariable is the linker symbol that carries the commit (internal/version.Commit).
	CommitVariable = "github.com/waldur/waldur-gitops/internal/version.Commit"
	// GoBuildEnv is the environment the binary must be built with: no cgo, so it is static.
	GoBuildEnv = "CGO_ENABLED=0"
)

// OCI annotation and label keys used on the image.
const (
	LabelVersion  = "org.opencontainers.image.version"
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelTitle    = "org.opencontainers.image.title"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelCreated  = "org.opencontainers.image.created"
)

// DefaultCmd is the image's Cmd: with no arguments the container prints its usage.
var DefaultCmd = []string{"--help"}

// LDFlags returns the -ldflags value `make build` and the Dockerfile use:
// stripped, with version and commit linked into internal/version.
func LDFlags(version, commit string) string {
	return "-s -w -X " + VersionVariable + "=" + version + " -X " + CommitVariable + "=" + commit
}

// Env returns the image's environment. SSL_CERT_FILE is deliberately absent:
// Go finds CertFile without it, and leaving it unset lets an operator mount a
// different bundle directory over /etc/ssl/certs.
func Env() []string {
	return []string{"PATH=" + PathEnv, "HOME=" + HomeDir}
}

//go:embed rootfs/etc/passwd rootfs/etc/group
var rootfs embed.FS

// Binary is one platform's build of the waldur-gitops binary.
type Binary struct {
	Platform v1.Platform // OS and Architecture (and Variant, if any) it was built for
	Path     string      // the file on disk
}

// Options describe the image to build.
type Options struct {
	Binaries []Binary // one per platform; at least one
	Version  string   // the version the binaries were linked with (label)
	Revision string   // VCS revision (label); omitted when empty
	Licenses string   // SPDX expression (label); omitted when empty
	// Created stamps the config and every file. The zero time means the Unix
	// epoch; see ParseSourceDateEpoch.
	Created time.Time

	// storeOnly writes the gzip streams without compressing, for tests: under
	// the race detector, deflating the 45 MB binary takes tens of seconds.
	storeOnly bool
}

// gzipLevel is the level of every layer. The same input, level and Go
// toolchain always give the same compressed bytes.
const gzipLevel = gzip.DefaultCompression

// Result is the built image: one image per platform, and an index over them.
type Result struct {
	Images    []v1.Image    // in the order of Options.Binaries
	Platforms []v1.Platform // Platforms[i] is the platform of Images[i]
	Index     v1.ImageIndex // an OCI image index over Images, each with its platform
}

// Digest is what users pull by: the image's digest for a single platform, the
// index's for several.
func (r *Result) Digest() (v1.Hash, error) {
	if len(r.Images) == 1 {
		return r.Images[0].Digest()
	}
	return r.Index.Digest()
}

// ParseSourceDateEpoch turns the value of SOURCE_DATE_EPOCH (seconds since the
// Unix epoch) into the time to stamp the image with; empty means the epoch itself.
func ParseSourceDateEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want a non-negative number of seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// Build assembles the image for every binary in opts.
func Build(ctx context.Context, opts Options) (*Result, error) {
	if len(opts.Binaries) == 0 {
		return nil, errors.New("no binary to put in the image")
	}
	if opts.Created.IsZero() {
		opts.Created = time.Unix(0, 0)
	}
	opts.Created = opts.Created.UTC().Truncate(time.Second)
	seen := map[string]bool{}
	for _, b := range opts.Binaries {
		if seen[b.Platform.String()] {
			return nil, fmt.Errorf("binary %s: platform %s given twice", b.Path, b.Platform.String())
		}
		seen[b.Platform.String()] = true
	}
	base, err := baseLayer(opts)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var adds []mutate.IndexAddendum
	for _, b := range opts.Binaries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		img, err := platformImage(opts, base, b)
		if err != nil {
			return nil, err
		}
		p := b.Platform
		res.Images = append(res.Images, img)
		res.Platforms = append(res.Platforms, p)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	res.Index = mutate.AppendManifests(empty.Index, adds...)
	return res, nil
}

// platformImage builds the image for one binary on top of the shared base layer.
func platformImage(opts Options, base v1.Layer, b Binary) (v1.Image, error) {
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	if err := checkStaticELF(bin, b.Platform); err != nil {
		return nil, fmt.Errorf("binary %s: %w", b.Path, err)
	}
	app, err := layer(opts, []entry{
		dir("usr/", 0o755), dir("usr/local/", 0o755), dir("usr/local/bin/", 0o755),
		file(strings.TrimPrefix(BinaryPath, "/"), 0o755, bin),
	})
	if err != nil {
		return nil, fmt.Errorf("binary %s: %w", b.Path, err)
	}
	created := v1.Time{Time: opts.Created}
	cfg := &v1.ConfigFile{
		Architecture: b.Platform.Architecture,
		OS:           b.Platform.OS,
		Variant:      b.Platform.Variant,
		Created:      created,
		Config: v1.Config{
			Entrypoint: []string{BinaryPath},
			Cmd:        append([]string(nil), DefaultCmd...),
			User:       User,
			WorkingDir: WorkingDir,
			Env:        Env(),
			Labels:     labels(opts),
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("image config for %s: %w", b.Platform.String(), err)
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "containerimage: /etc/passwd, /etc/group, " + CertFile + ", /tmp, " + HomeDir, Comment: "base"}},
		mutate.Addendum{Layer: app, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "containerimage: " + BinaryPath, Comment: "waldur-gitops " + opts.Version}},
	)
	if err != nil {
		return nil, fmt.Errorf("image layers for %s: %w", b.Platform.String(), err)
	}
	return img, nil
}

// labels returns the image's OCI labels for opts; empty values are left out.
func labels(opts Options) map[string]string {
	l := map[string]string{
		LabelTitle:   Title,
		LabelSource:  Source,
		LabelCreated: opts.Created.UTC().Format(time.RFC3339),
	}
	for k, v := range map[string]string{LabelVersion: opts.Version, LabelRevision: opts.Revision, LabelLicenses: opts.Licenses} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// baseLayer holds what does not depend on the platform or the binary: the
// directories, the user database and the CA bundle.
func baseLayer(opts Options) (v1.Layer, error) {
	passwd, err := rootfs.ReadFile("rootfs/etc/passwd")
	if err != nil {
		return nil, fmt.Errorf("embedded rootfs/etc/passwd: %w", err)
	}
	group, err := rootfs.ReadFile("rootfs/etc/group")
	if err != nil {
		return nil, fmt.Errorf("embedded rootfs/etc/group: %w", err)
	}
	home := dir(strings.TrimPrefix(HomeDir, "/")+"/", 0o700)
	home.uid, home.gid = UID, GID
	l, err := layer(opts, []entry{
		dir("etc/", 0o755),
		file("etc/group", 0o644, group),
		file("etc/passwd", 0o644, passwd),
		dir("etc/ssl/", 0o755),
		dir("etc/ssl/certs/", 0o755),
		file(strings.TrimPrefix(CertFile, "/"), 0o644, CABundle()),
		dir("home/", 0o755),
		home,
		dir("root/", 0o700),
		dir("tmp/", 0o1777),
	})
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	return l, nil
}

// CABundle returns the PEM bundle written to CertFile: every root of
// golang.org/x/crypto/x509roots/fallback/bundle that has no extra constraint.
// A constrained root (Mozilla's "distrust after" date, which X.509 cannot
// express) is left out: a PEM file would trust it without the constraint.
// The binary itself still has every root, constraints included, through the
// fallback package, for when no bundle file is present.
func CABundle() []byte {
	var buf bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		// pem.Encode to a bytes.Buffer fails only for invalid headers; there are none.
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return buf.Bytes()
}

// entry is one tar entry; entries are written in the order given, which the
// callers keep sorted.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
	isDir    bool
}

func dir(name string, mode int64) entry { return entry{name: name, mode: mode, isDir: true} }
func file(name string, mode int64, data []byte) entry {
	return entry{name: name, mode: mode, data: data}
}

// layer writes entries into a gzipped tar with fixed times and owners and
// returns it as an OCI layer. The gzip header has no name and no time, so the
// bytes depend only on the entries and the level.
func layer(opts Options, entries []entry) (v1.Layer, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: opts.Created,
			Format:  tar.FormatPAX,
		}
		if e.isDir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar entry %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar entry %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	var gz bytes.Buffer
	level := gzipLevel
	if opts.storeOnly {
		level = gzip.NoCompression
	}
	zw, err := gzip.NewWriterLevel(&gz, level)
	if err != nil {
		return nil, fmt.Errorf("gzip level %d: %w", level, err)
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, fmt.Errorf("gzip layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip layer: %w", err)
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// elfMachines maps GOARCH values to ELF machines, for the platforms the image is built for.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkStaticELF refuses what would not run in a FROM scratch image for p: a
// file that is not a Linux ELF executable for p's architecture, or one that
// needs a dynamic loader or shared libraries.
func checkStaticELF(bin []byte, p v1.Platform) error {
	if p.OS != "linux" {
		return fmt.Errorf("platform %s: only linux images are built", p.String())
	}
	want, ok := elfMachines[p.Architecture]
	if !ok {
		return fmt.Errorf("platform %s: unknown architecture", p.String())
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("built for %s, not for platform %s", f.Machine, p.String())
	}
	if err := checkStatic(f); err != nil {
		return err
	}
	return nil
}

// checkStatic reports an error when f needs a program interpreter (the
// dynamic loader) or names shared libraries; build with CGO_ENABLED=0.
func checkStatic(f *elf.File) error {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (has a PT_INTERP program header); build with " + GoBuildEnv)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("read dynamic section: %w", err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %s; build with %s", strings.Join(libs, ", "), GoBuildEnv)
	}
	return nil
}
