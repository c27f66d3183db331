package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/waldur/waldur-gitops/containerimage"
)

// TestRunRefuses checks the flag errors; containerimage's tests build images.
func TestRunRefuses(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "waldur-gitops")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no binary", nil, "-binary is required"},
		{"binary without platform", []string{"-binary", missing}, "want OS/ARCH=PATH"},
		{"platform without arch", []string{"-binary", "linux=" + missing}, "want OS/ARCH"},
		{"bad reference", []string{"-binary", "linux/amd64=" + missing, "-image", "Not A Ref"}, `image reference "Not A Ref"`},
		{"stray argument", []string{"-binary", "linux/amd64=" + missing, "extra"}, "unexpected arguments"},
		{"binary missing", []string{"-binary", "linux/amd64=" + missing}, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestRunWritesImage runs the command as make image does, on a small static
// program, and reads what it wrote back: the layout holds the tagged image
// whose digest the command printed, the tarball the same image under the tag.
func TestRunWritesImage(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"main.go": "package main\n\nfunc main() {}\n", "go.mod": "module tiny\n\ngo 1.25\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "waldur-gitops")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	layoutDir, tarPath := filepath.Join(dir, "image"), filepath.Join(dir, "image.tar")
	const ref = "registry.example.org/waldur-gitops:v9.9.9"
	var stdout strings.Builder
	err := run(context.Background(), []string{"-binary", "linux/" + runtime.GOARCH + "=" + bin, "-version", "v9.9.9",
		"-image", ref, "-layout", layoutDir, "-tar", tarPath}, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^digest (sha256:[0-9a-f]{64})$`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no digest printed:\n%s", stdout.String())
	}
	idx, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != m[1] ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v9.9.9" || im.Manifests[0].Annotations["io.containerd.image.name"] != ref {
		t.Fatalf("layout index %+v, want the printed digest %s tagged %s", im.Manifests, m[1], ref)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != containerimage.User || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != containerimage.BinaryPath ||
		cf.Config.Labels["org.opencontainers.image.version"] != "v9.9.9" {
		t.Errorf("config %+v", cf.Config)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	timg, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatalf("the tarball has no image tagged %s: %v", ref, err)
	}
	tid, err := timg.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := img.ConfigName(); id != tid {
		t.Errorf("tarball image %s, layout image %s", tid, id)
	}
}
