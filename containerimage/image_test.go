package containerimage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

const testVersion = "v0.0.0-imagetest"

// testCommit is the commit linked into the test binary.
const testCommit = "0123456789abcdef0123456789abcdef01234567"

var hostPlatform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

// buildDir holds the binaries built once for the whole test run.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "containerimage-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var built = struct {
	sync.Mutex
	paths map[string]string
}{paths: map[string]string{}}

// goBuild builds pkg for linux/arch the way `make image` does (static,
// trimmed, LDFlags with testVersion) once per run, and returns the binary's path.
func goBuild(t *testing.T, dir, pkg, arch string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	key := dir + " " + pkg + " " + arch
	if p, ok := built.paths[key]; ok {
		return p
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the binary: %v", err)
	}
	out := filepath.Join(buildDir, fmt.Sprintf("bin%d", len(built.paths)), "waldur-gitops")
	cmd := exec.Command(gobin, "build", "-trimpath", "-buildvcs=false", "-ldflags", LDFlags(testVersion, testCommit), "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), GoBuildEnv, "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s for linux/%s: %v\n%s", pkg, arch, err, msg)
	}
	built.paths[key] = out
	return out
}

// realBinary is cmd/waldur-gitops for the host architecture.
func realBinary(t *testing.T) string {
	return goBuild(t, "", "github.com/waldur/waldur-gitops/cmd/waldur-gitops", runtime.GOARCH)
}

// tinyBinary is a static program that does nothing, built for linux/arch:
// it stands in for the real binary where its size would only cost time.
func tinyBinary(t *testing.T, arch string) string {
	t.Helper()
	src := filepath.Join(buildDir, "tiny")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"main.go": "package main\n\nfunc main() {}\n",
		"go.mod":  "module tiny\n\ngo 1.25\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return goBuild(t, src, ".", arch)
}

func testOptions(t *testing.T) Options {
	return Options{
		Binaries: []Binary{{Platform: hostPlatform, Path: realBinary(t)}},
		Version:  testVersion,
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Licenses: "Apache-2.0",
		Created:  time.Unix(1700000000, 0),
		// Uncompressed layers keep the race-detector run short;
		// TestReproducible compresses as make image does.
		storeOnly: true,
	}
}

// TestImage builds the image, writes the layout and the tarball, reads both
// back and checks the config and the files a container would see.
func TestImage(t *testing.T) {
	ctx := context.Background()
	opts := testOptions(t)
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := res.Digest()
	if err != nil {
		t.Fatal(err)
	}
	tag, err := ParseReference(DefaultRepository + ":" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layoutDir, tarPath := filepath.Join(dir, "image"), filepath.Join(dir, "image.tar")
	if err := res.WriteLayout(ctx, layoutDir, tag); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteTarball(ctx, tarPath, tag); err != nil {
		t.Fatal(err)
	}

	fromLayout := func(t *testing.T) v1.Image {
		idx, err := layout.ImageIndexFromPath(layoutDir)
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 {
			t.Fatalf("index.json has %d manifests, want 1", len(im.Manifests))
		}
		d := im.Manifests[0]
		if d.Digest != want {
			t.Errorf("index.json names %s, built %s", d.Digest, want)
		}
		if got := d.Annotations[AnnotationRefName]; got != testVersion {
			t.Errorf("ref.name annotation = %q, want %q", got, testVersion)
		}
		if got, want := d.Annotations[AnnotationContainerName], DefaultRepository+":"+testVersion; got != want {
			t.Errorf("containerd name annotation = %q, want %q", got, want)
		}
		if d.Platform == nil || d.Platform.String() != hostPlatform.String() {
			t.Errorf("descriptor platform = %v, want %s", d.Platform, hostPlatform.String())
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	fromTarball := func(t *testing.T) v1.Image {
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(tarPath) })
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{tag.String()}) {
			t.Errorf("tarball manifest.json = %+v, want one image tagged %s", m, tag.String())
		}
		img, err := tarball.ImageFromPath(tarPath, &tag)
		if err != nil {
			t.Fatal(err)
		}
		// docker load rebuilds the manifest, so compare what it keeps: the
		// config (the image ID) and the layers.
		gotID, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		wantID, err := res.Images[0].ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if gotID != wantID {
			t.Errorf("tarball image ID %s, built %s", gotID, wantID)
		}
		return img
	}

	for _, tc := range []struct {
		name string
		read func(*testing.T) v1.Image
	}{{"layout", fromLayout}, {"tarball", fromTarball}} {
		t.Run(tc.name, func(t *testing.T) {
			img := tc.read(t)
			checkConfig(t, img, opts)
			checkFiles(t, extract(t, img), opts)
		})
	}
}

func checkConfig(t *testing.T, img v1.Image, opts Options) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{BinaryPath}) {
		t.Errorf("Entrypoint = %q, want [%s]", c.Entrypoint, BinaryPath)
	}
	if !slices.Equal(c.Cmd, DefaultCmd) {
		t.Errorf("Cmd = %q, want %q", c.Cmd, DefaultCmd)
	}
	uid, gid, ok := strings.Cut(c.User, ":")
	if !ok || uid != strconv.Itoa(UID) || gid != strconv.Itoa(GID) || uid == "0" {
		t.Errorf("User = %q, want non-root %d:%d", c.User, UID, GID)
	}
	if c.WorkingDir != WorkingDir {
		t.Errorf("WorkingDir = %q, want %q", c.WorkingDir, WorkingDir)
	}
	if !slices.Equal(c.Env, []string{"PATH=/usr/local/bin", "HOME=" + HomeDir}) {
		t.Errorf("Env = %q", c.Env)
	}
	wantLabels := map[string]string{
		LabelVersion:  testVersion,
		LabelRevision: opts.Revision,
		LabelSource:   "https://github.com/waldur/waldur-gitops",
		LabelTitle:    "waldur-gitops",
		LabelLicenses: opts.Licenses,
		LabelCreated:  "2023-11-14T22:13:20Z",
	}
	for k, v := range wantLabels {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if len(c.Labels) != len(wantLabels) {
		t.Errorf("labels = %v, want exactly %v", c.Labels, wantLabels)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform = %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !cf.Created.Time.Equal(opts.Created) {
		t.Errorf("Created = %v, want %v", cf.Created.Time, opts.Created)
	}
}

type tarFile struct {
	hdr  *tar.Header
	data []byte
}

// extract reads the flattened filesystem of img, keyed by absolute path
// without a trailing slash.
func extract(t *testing.T, img v1.Image) map[string]tarFile {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]tarFile{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = tarFile{h, data}
	}
	return files
}

func checkFiles(t *testing.T, files map[string]tarFile, opts Options) {
	t.Helper()
	var regular []string
	for p, f := range files {
		if f.hdr.Typeflag != tar.TypeDir {
			regular = append(regular, p)
		}
		if !f.hdr.ModTime.Equal(opts.Created) {
			t.Errorf("%s: mtime %v, want %v", p, f.hdr.ModTime, opts.Created)
		}
		owner := 0
		if p == HomeDir {
			owner = UID
		}
		if f.hdr.Uid != owner || f.hdr.Gid != owner {
			t.Errorf("%s: owner %d:%d, want %d:%d", p, f.hdr.Uid, f.hdr.Gid, owner, owner)
		}
	}
	// Nothing else: no shell, no git, no package manager.
	slices.Sort(regular)
	wantRegular := []string{"/etc/group", "/etc/passwd", CertFile, BinaryPath}
	slices.Sort(wantRegular)
	if !slices.Equal(regular, wantRegular) {
		t.Errorf("files in the image = %q, want %q", regular, wantRegular)
	}

	t.Run("binary", func(t *testing.T) {
		f := files[BinaryPath]
		if f.hdr == nil {
			t.Fatalf("%s missing", BinaryPath)
		}
		if f.hdr.Mode != 0o755 {
			t.Errorf("%s mode %o, want 755", BinaryPath, f.hdr.Mode)
		}
		ef, err := elf.NewFile(bytes.NewReader(f.data))
		if err != nil {
			t.Fatalf("%s: %v", BinaryPath, err)
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a PT_INTERP program header: not static", BinaryPath)
			}
		}
		needed, err := ef.DynString(elf.DT_NEEDED)
		if err != nil || len(needed) > 0 {
			t.Errorf("%s: DT_NEEDED %q (%v), want none", BinaryPath, needed, err)
		}
		exe := filepath.Join(t.TempDir(), "waldur-gitops")
		if err := os.WriteFile(exe, f.data, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(exe, "version").Output()
		if err != nil {
			t.Fatalf("%s version: %v", exe, err)
		}
		if got, want := string(out), "waldur-gitops "+testVersion+"\ncommit:   "+testCommit+"\n"; !strings.HasPrefix(got, want) {
			t.Errorf("%s version printed %q, want it to start %q", BinaryPath, got, want)
		}
	})

	t.Run("certificates", func(t *testing.T) {
		rest := files[CertFile].data
		n := 0
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				t.Errorf("%s: certificate %d: %v", CertFile, n, err)
			}
			for r := range bundle.Roots() {
				if r.Constraint != nil && bytes.Equal(r.Certificate, b.Bytes) {
					t.Errorf("%s: certificate %d is a constrained root", CertFile, n)
				}
			}
			n++
		}
		if len(bytes.TrimSpace(rest)) != 0 {
			t.Errorf("%s: %d bytes after the last certificate", CertFile, len(rest))
		}
		unconstrained := 0
		for r := range bundle.Roots() {
			if r.Constraint == nil {
				unconstrained++
			}
		}
		if n < 100 || n != unconstrained {
			t.Errorf("%s holds %d certificates, want the %d unconstrained roots (and at least 100)", CertFile, n, unconstrained)
		}
	})

	t.Run("user", func(t *testing.T) {
		found := false
		for _, line := range strings.Split(string(files["/etc/passwd"].data), "\n") {
			f := strings.Split(line, ":")
			if len(f) == 7 && f[2] == strconv.Itoa(UID) {
				found = true
				if f[0] != UserName || f[3] != strconv.Itoa(GID) || f[5] != HomeDir {
					t.Errorf("/etc/passwd: %q, want %s with gid %d and home %s", line, UserName, GID, HomeDir)
				}
			}
		}
		if !found {
			t.Errorf("/etc/passwd has no uid %d:\n%s", UID, files["/etc/passwd"].data)
		}
		if !strings.Contains("\n"+string(files["/etc/group"].data), fmt.Sprintf("\n%s:x:%d:", UserName, GID)) {
			t.Errorf("/etc/group has no group %s with gid %d", UserName, GID)
		}
		home := files[HomeDir]
		if home.hdr == nil || home.hdr.Typeflag != tar.TypeDir || home.hdr.Mode != 0o700 {
			t.Errorf("home %s: %+v, want a directory with mode 700", HomeDir, home.hdr)
		}
	})

	t.Run("tmp", func(t *testing.T) {
		tmp := files["/tmp"]
		if tmp.hdr == nil || tmp.hdr.Typeflag != tar.TypeDir || tmp.hdr.Mode&0o7777 != 0o1777 {
			t.Errorf("/tmp: %+v, want a directory with mode 1777", tmp.hdr)
		}
		if tmp.hdr != nil && tmp.hdr.FileInfo().Mode()&os.ModeSticky == 0 {
			t.Error("/tmp has no sticky bit")
		}
	})
}

// TestReproducible builds twice from the same binary, compressing as make
// image does, and gets the same digest and the same layout bytes; a different
// time gives a different digest.
func TestReproducible(t *testing.T) {
	ctx := context.Background()
	opts := Options{
		Binaries: []Binary{{Platform: hostPlatform, Path: tinyBinary(t, runtime.GOARCH)}},
		Version:  testVersion,
		Created:  time.Unix(1700000000, 0),
	}
	tag, err := name.NewTag(DefaultRepository + ":" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	var digests []v1.Hash
	var indexes [][]byte
	for i := range 2 {
		res, err := Build(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		d, err := res.Digest()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "image")
		if err := res.WriteLayout(ctx, dir, tag); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		digests, indexes = append(digests, d), append(indexes, b)
		t.Logf("build %d: %s", i, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same binary: %s and %s", digests[0], digests[1])
	}
	if !bytes.Equal(indexes[0], indexes[1]) {
		t.Errorf("index.json differs between builds:\n%s\n%s", indexes[0], indexes[1])
	}

	opts.Created = opts.Created.Add(time.Second)
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := res.Digest(); err != nil || d == digests[0] {
		t.Errorf("a build one second later has digest %s (%v), want a different one", d, err)
	}
}

// TestMultiPlatform builds an index from two architectures.
func TestMultiPlatform(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	otherPlatform := v1.Platform{OS: "linux", Architecture: other}
	opts := Options{Version: testVersion, Binaries: []Binary{
		{Platform: hostPlatform, Path: tinyBinary(t, runtime.GOARCH)},
		{Platform: otherPlatform, Path: tinyBinary(t, other)},
	}}
	ctx := context.Background()
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := ParseReference(DefaultRepository + ":multi")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "image")
	if err := res.WriteLayout(ctx, dir, tag); err != nil {
		t.Fatal(err)
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := res.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].Digest != want || !tm.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("index.json = %+v, want the one index %s", tm.Manifests, want)
	}
	idx, err := top.ImageIndex(want)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if d.Platform == nil || d.Platform.Architecture != cf.Architecture {
			t.Errorf("descriptor platform %v, config architecture %s", d.Platform, cf.Architecture)
		}
		got = append(got, cf.OS+"/"+cf.Architecture)
	}
	if wantP := []string{hostPlatform.String(), otherPlatform.String()}; !slices.Equal(got, wantP) {
		t.Errorf("index platforms = %q, want %q", got, wantP)
	}
	// The base layer is the same for both platforms.
	l0, err := res.Images[0].Layers()
	if err != nil {
		t.Fatal(err)
	}
	l1, err := res.Images[1].Layers()
	if err != nil {
		t.Fatal(err)
	}
	d0, _ := l0[0].Digest()
	d1, _ := l1[0].Digest()
	if d0 != d1 {
		t.Errorf("base layers differ between platforms: %s and %s", d0, d1)
	}
}

func TestBuildRefuses(t *testing.T) {
	bin := realBinary(t)
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	foreign := "arm64"
	if runtime.GOARCH == "arm64" {
		foreign = "amd64"
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name     string
		binaries []Binary
		want     string
	}{
		{"no binary", nil, "no binary"},
		{"missing file", []Binary{{hostPlatform, missing}}, missing},
		{"not ELF", []Binary{{hostPlatform, text}}, text + ": not an ELF executable"},
		{"wrong architecture", []Binary{{v1.Platform{OS: "linux", Architecture: foreign}, bin}}, "not for platform linux/" + foreign},
		{"not linux", []Binary{{v1.Platform{OS: "darwin", Architecture: runtime.GOARCH}, bin}}, "only linux"},
		{"platform twice", []Binary{{hostPlatform, bin}, {hostPlatform, bin}}, "given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(context.Background(), Options{Binaries: tc.binaries, storeOnly: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckStatic(t *testing.T) {
	// The test binary itself: static or not depends on how it was built (the
	// race detector links with cgo), so compare with what the ELF says.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	if err := checkStatic(f); (err != nil) != dynamic {
		t.Errorf("checkStatic(%s) = %v; PT_INTERP present: %v", exe, err, dynamic)
	}
	g, err := elf.Open(realBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := checkStatic(g); err != nil {
		t.Errorf("checkStatic(the CGO_ENABLED=0 build) = %v", err)
	}
}

func TestParseSourceDateEpoch(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Unix(0, 0), false},
		{"1700000000", time.Unix(1700000000, 0), false},
		{"-5", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSourceDateEpoch(tc.in)
			if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
				t.Errorf("ParseSourceDateEpoch(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
				t.Errorf("error %q does not name SOURCE_DATE_EPOCH", err)
			}
		})
	}
}

func TestWriteLayoutRefusesOtherDirectory(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	tag, err := ParseReference(DefaultRepository + ":x")
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{}
	err = res.WriteLayout(context.Background(), dir, tag)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("WriteLayout into a directory with other files: %v, want an error naming %s", err, dir)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the other file is gone: %v", err)
	}
}

func TestContainerdName(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"ghcr.io/waldur/waldur-gitops:v1", "ghcr.io/waldur/waldur-gitops:v1"},
		{"waldur/waldur-gitops:v1", "docker.io/waldur/waldur-gitops:v1"},
		{"docker.io/busybox:1", "docker.io/library/busybox:1"},
		{"localhost:5000/waldur-gitops", "localhost:5000/waldur-gitops:latest"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			tag, err := ParseReference(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := containerdName(tag); got != tc.want {
				t.Errorf("containerdName(%s) = %q, want %q", tc.ref, got, tc.want)
			}
		})
	}
}
