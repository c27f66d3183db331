// Package fluxtest runs the real Flux controllers that consume the GitOps
// repository — source-controller and kustomize-controller at Version — out of
// cluster against the test control plane of internal/testenv/kubetest and a
// smart-HTTP Git server of internal/testenv/gittest.
//
// Nothing of Flux is in the repository. The controllers are built from their
// module sources on the Go module proxy, once per cache directory ($WALDUR_GITOPS_FLUX_CACHE,
// else <user cache dir>/waldur-gitops/flux, beside kubetest's kube cache), and
// their CRDs are read from the same module sources (config/crd/bases) in the
// Go module cache. A cold build of both takes about ten CPU-minutes and
// 1.8 GB of memory (measured: 367 + 227 CPU-s on two shared cores); later runs
// find the binaries at once.
//
// The build recipe: download the controller's module, copy it to a scratch
// directory, drop its replace of the ./api directory (the API module is
// required at a released version as well), and build its root package. When
// the module proxy refuses a module version the controller requires (this
// happens on mirrors that lag behind), the highest earlier patch release of
// the same minor version is used instead.
package fluxtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/waldur/waldur-gitops/internal/testenv/filelock"
	"github.com/waldur/waldur-gitops/internal/testenv/gobuild"
	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// Version of both Flux controllers. v1.10 needs Go 1.27.
const Version = "v1.9.6"

// CacheEnv names the environment variable that overrides the cache directory.
const CacheEnv = "WALDUR_GITOPS_FLUX_CACHE"

// The controllers' modules.
const (
	SourceModule    = "github.com/fluxcd/source-controller"
	KustomizeModule = "github.com/fluxcd/kustomize-controller"
)

// CacheDir returns the directory the binaries are built into and kept in.
func CacheDir() (string, error) { return testproc.CacheDir(CacheEnv, "flux") }

// Binaries holds the paths of the built controllers.
type Binaries struct {
	SourceController    string
	KustomizeController string
}

// EnsureBinaries returns the cached controllers, building those that are
// missing. Build output goes to log (nil: discarded).
func EnsureBinaries(ctx context.Context, log io.Writer) (*Binaries, error) {
	if log == nil {
		log = io.Discard
	}
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, Version, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	b := &Binaries{
		SourceController:    filepath.Join(bin, "source-controller"),
		KustomizeController: filepath.Join(bin, "kustomize-controller"),
	}
	if testproc.Executable(b.SourceController) && testproc.Executable(b.KustomizeController) {
		return b, nil
	}
	unlock, err := filelock.Lock(filepath.Join(dir, ".build.lock"))
	if err != nil {
		return nil, fmt.Errorf("lock the flux binary cache: %w", err)
	}
	defer unlock()
	for _, c := range []struct{ mod, out string }{
		{SourceModule, b.SourceController},
		{KustomizeModule, b.KustomizeController},
	} {
		if testproc.Executable(c.out) {
			continue
		}
		if err := build(ctx, filepath.Join(dir, Version, "src"), c.mod, c.out, log); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ModuleDir downloads module@Version into the Go module cache, if it is not
// there yet, and returns its directory (read-only).
func ModuleDir(ctx context.Context, module string) (string, error) {
	tmp, err := os.MkdirTemp("", "fluxtest-dl-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module fluxtest.download\n"), 0o644); err != nil {
		return "", err
	}
	info, err := gobuild.Download(ctx, tmp, module, Version)
	if err != nil {
		return "", err
	}
	return info.Dir, nil
}

// CRDs returns the CRD files of both controllers, from their module sources.
func CRDs(ctx context.Context) ([]string, error) {
	var out []string
	for _, m := range []string{SourceModule, KustomizeModule} {
		dir, err := ModuleDir(ctx, m)
		if err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "bases", "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s@%s: no CRDs in config/crd/bases; the recipe no longer fits", m, Version)
		}
		out = append(out, files...)
	}
	return out, nil
}

// refused matches the go command's report of a module version the proxy
// does not serve.
var refused = regexp.MustCompile(`(?m)(\S+)@(v[0-9][^\s:]*): .*(?:403|404|410|not available|not found)`)

// build builds module's root package into out, in a writable copy below src.
func build(ctx context.Context, src, module, out string, log io.Writer) error {
	from, err := ModuleDir(ctx, module)
	if err != nil {
		return err
	}
	mod := filepath.Join(src, filepath.Base(module))
	if err := os.RemoveAll(mod); err != nil {
		return err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	if err := os.CopyFS(mod, os.DirFS(from)); err != nil {
		return fmt.Errorf("copy %s: %w", module, err)
	}
	if err := gobuild.Run(ctx, mod, nil, "mod", "edit", "-dropreplace", module+"/api"); err != nil {
		return err
	}
	var tail bytes.Buffer
	for range 5 {
		tail.Reset()
		fmt.Fprintf(log, "fluxtest: building %s (cold: a few minutes; cached afterwards)\n", module)
		err := gobuild.Build(ctx, mod, out, module, gobuild.Options{LDFlags: "-s -w"}, io.MultiWriter(log, &tail))
		if err == nil {
			return nil
		}
		m := refused.FindStringSubmatch(err.Error() + "\n" + tail.String())
		if m == nil || m[1] == module {
			return fmt.Errorf("build %s@%s: %w", module, Version, err)
		}
		alt, lerr := earlierPatch(ctx, mod, m[1], m[2])
		if lerr != nil {
			return fmt.Errorf("build %s@%s: %w (and no replacement for %s@%s: %v)", module, Version, err, m[1], m[2], lerr)
		}
		fmt.Fprintf(log, "fluxtest: the module proxy refuses %s@%s; using %s\n", m[1], m[2], alt)
		if err := gobuild.Run(ctx, mod, nil, "mod", "edit", "-replace", m[1]+"="+m[1]+"@"+alt); err != nil {
			return err
		}
	}
	return fmt.Errorf("build %s@%s: too many refused modules", module, Version)
}

// earlierPatch returns the highest listed version of module below v with the
// same major and minor version.
func earlierPatch(ctx context.Context, dir, module, v string) (string, error) {
	var stdout bytes.Buffer
	if err := gobuild.Run(ctx, dir, &stdout, "list", "-m", "-versions", module); err != nil {
		return "", err
	}
	want, ok := release(v)
	if !ok {
		return "", fmt.Errorf("%s: %s is not a release version", module, v)
	}
	best, bestPatch := "", -1
	for _, c := range strings.Fields(stdout.String())[1:] {
		r, ok := release(c)
		if ok && r[0] == want[0] && r[1] == want[1] && r[2] < want[2] && r[2] > bestPatch {
			best, bestPatch = c, r[2]
		}
	}
	if best == "" {
		return "", fmt.Errorf("no earlier v%d.%d release of %s", want[0], want[1], module)
	}
	return best, nil
}

// release parses vX.Y.Z (no pre-release or build suffix).
func release(v string) ([3]int, bool) {
	var r [3]int
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) != 3 || !strings.HasPrefix(v, "v") {
		return r, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return r, false
		}
		r[i] = n
	}
	return r, true
}
