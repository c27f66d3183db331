// Package argotest runs Argo CD against a test cluster (internal/testenv/kubetest) out
// of cluster, for the end-to-end test of examples/argocd (e2e/argocd, run by
// `make e2e-argocd`). Nothing of Argo CD's is vendored or committed: the
// programs are built from the Go module proxy into a cache on first use.
//
//   - argocd-repo-server, argocd-application-controller,
//     argocd-applicationset-controller and the argocd CLI (the repo-server runs
//     it as GIT_ASKPASS) are one multi-call binary of
//     github.com/argoproj/argo-cd/v3 at Version, built in a writable copy of
//     the module and run through symlinks of those names. Version is pinned:
//     v3.2.12 does not compile, v3.3–v3.5 replace a nested module the module
//     proxy does not serve, and v3.6 needs a newer Go.
//   - kustomize from sigs.k8s.io/kustomize/kustomize/v5 at KustomizeVersion,
//     the release of the sigs.k8s.io/kustomize/api this module uses: the
//     repo-server runs `kustomize build` for every tenant directory.
//   - Redis (the controllers' cache) from Debian's packages, fetched with
//     `apt-get download` and unpacked with `dpkg -x` into the cache, never
//     installed or started as a service; a redis-server on PATH is used as is.
//   - The CRDs, copied from the module's manifests/crds.
//
// The cache is $WALDUR_GITOPS_ARGOCD_CACHE, else <user cache
// dir>/waldur-gitops/argocd/<Version>. A cold build takes several minutes and
// about 2 GB of memory (BENCHMARKS.md, "Argo CD end to end").
package argotest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/filelock"
	"github.com/waldur/waldur-gitops/internal/testenv/gobuild"
	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// Versions of what is built.
const (
	Version          = "v3.2.11"
	KustomizeVersion = "v5.7.1"
)

// Module is the Go module Argo CD is built from.
const Module = "github.com/argoproj/argo-cd/v3"

// CacheEnv names the environment variable that overrides the cache directory.
const CacheEnv = "WALDUR_GITOPS_ARGOCD_CACHE"

// Commands are the names the multi-call binary is run by.
var Commands = []string{"argocd", "argocd-repo-server", "argocd-application-controller", "argocd-applicationset-controller"}

// buildOptions are those of every build: stripped binaries, and at most two
// parallel compilations (Argo CD's build needs about 2 GB at -p 2).
var buildOptions = gobuild.Options{LDFlags: "-s -w", Parallel: 2}

// redisPackages are the Debian packages redis-server needs beyond libc.
var redisPackages = []string{"redis-server", "redis-tools", "libjemalloc2", "liblzf1"}

// CacheDir returns the directory everything is built into and kept in.
func CacheDir() (string, error) {
	return testproc.CacheDir(CacheEnv, filepath.Join("argocd", Version))
}

// Dist is a prepared cache.
type Dist struct {
	// Bin holds the argocd binary, its symlinks and kustomize; the
	// repo-server needs it first on PATH.
	Bin string
	// CRDs is the directory of Argo CD's CustomResourceDefinitions.
	CRDs string
	// Redis is the redis-server to run; RedisLibs the directory of its shared
	// libraries ("" when it is the system's).
	Redis, RedisLibs string
}

// Command returns the path of the symlink named name in Bin.
func (d *Dist) Command(name string) string { return filepath.Join(d.Bin, name) }

// Ensure returns the prepared cache, building or fetching what is missing.
// Progress goes to log (nil: discarded).
func Ensure(ctx context.Context, log io.Writer) (*Dist, error) {
	if log == nil {
		log = io.Discard
	}
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := filelock.Lock(filepath.Join(dir, ".build.lock"))
	if err != nil {
		return nil, fmt.Errorf("lock the argo cd cache: %w", err)
	}
	defer unlock()
	d := &Dist{Bin: filepath.Join(dir, "bin"), CRDs: filepath.Join(dir, "crds")}
	if err := os.MkdirAll(d.Bin, 0o755); err != nil {
		return nil, err
	}
	argocd := filepath.Join(d.Bin, "argocd-"+Version)
	if !testproc.Executable(argocd) || !exists(filepath.Join(d.CRDs, "application-crd.yaml")) {
		if err := buildArgoCD(ctx, dir, argocd, d.CRDs, log); err != nil {
			return nil, err
		}
	}
	for _, name := range Commands {
		link := filepath.Join(d.Bin, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Base(argocd) {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(filepath.Base(argocd), link); err != nil {
			return nil, err
		}
	}
	kustomize := filepath.Join(d.Bin, "kustomize")
	if !testproc.Executable(kustomize) {
		if err := buildKustomize(ctx, dir, kustomize, log); err != nil {
			return nil, err
		}
	}
	if d.Redis, d.RedisLibs, err = ensureRedis(ctx, dir, log); err != nil {
		return nil, err
	}
	return d, nil
}

// buildArgoCD builds the multi-call binary into out and copies the CRDs to crds.
func buildArgoCD(ctx context.Context, cache, out, crds string, log io.Writer) error {
	start := time.Now()
	fmt.Fprintf(log, "argotest: downloading %s@%s from the module proxy\n", Module, Version)
	info, err := gobuild.Download(ctx, cache, Module, Version)
	if err != nil {
		return err
	}
	// The module cache is read-only and go build -mod=mod may complete go.sum:
	// build in a writable copy.
	src := filepath.Join(cache, "src", "argo-cd-"+Version)
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	if err := os.CopyFS(src, os.DirFS(info.Dir)); err != nil {
		return fmt.Errorf("copy %s: %w", info.Dir, err)
	}
	if err := copyCRDs(filepath.Join(src, "manifests", "crds"), crds); err != nil {
		return err
	}
	fmt.Fprintf(log, "argotest: building Argo CD %s (cold: several minutes and about 2 GB of memory; cached afterwards)\n", Version)
	if err := gobuild.Build(ctx, src, out, "./cmd", buildOptions, log); err != nil {
		return err
	}
	fmt.Fprintf(log, "argotest: built Argo CD %s in %s\n", Version, time.Since(start).Round(time.Second))
	// The copy is only needed for the build (its dependencies stay in the
	// module cache).
	return os.RemoveAll(src)
}

func copyCRDs(from, to string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("argo cd crds: %w", err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	n := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), "-crd.yaml") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("argo cd crds: no *-crd.yaml in %s", from)
	}
	return nil
}

// buildKustomize builds kustomize in a scratch module that requires it.
func buildKustomize(ctx context.Context, cache, out string, log io.Writer) error {
	mod := filepath.Join(cache, "src", "kustomize-"+KustomizeVersion)
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	gomod := fmt.Sprintf("module waldurgitops.test/kustomize\n\ngo 1.24\n\nrequire sigs.k8s.io/kustomize/kustomize/v5 %s\n", KustomizeVersion)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(log, "argotest: building kustomize %s\n", KustomizeVersion)
	if err := gobuild.Build(ctx, mod, out, "sigs.k8s.io/kustomize/kustomize/v5", buildOptions, log); err != nil {
		return err
	}
	fmt.Fprintf(log, "argotest: built kustomize %s in %s\n", KustomizeVersion, time.Since(start).Round(time.Second))
	return nil
}

// ensureRedis returns a redis-server and the directory of its libraries: the
// one on PATH, else Debian's, unpacked into the cache.
func ensureRedis(ctx context.Context, cache string, log io.Writer) (string, string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, "", nil
	}
	root := filepath.Join(cache, "redis")
	bin := filepath.Join(root, "usr", "bin", "redis-server")
	if !testproc.Executable(bin) {
		if err := fetchRedis(ctx, cache, root, log); err != nil {
			return "", "", err
		}
	}
	libs, _ := filepath.Glob(filepath.Join(root, "usr", "lib", "*-linux-gnu*"))
	if len(libs) != 1 {
		return "", "", fmt.Errorf("redis from debian: no single library directory under %s", filepath.Join(root, "usr", "lib"))
	}
	return bin, libs[0], nil
}

func fetchRedis(ctx context.Context, cache, root string, log io.Writer) error {
	for _, tool := range []string{"apt-get", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("redis: no redis-server on PATH and no %s to fetch Debian's: install redis-server", tool)
		}
	}
	fmt.Fprintf(log, "argotest: fetching Redis from Debian (%s)\n", strings.Join(redisPackages, " "))
	dl, err := os.MkdirTemp(cache, "debs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dl)
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"download"}, redisPackages...)...)
	cmd.Dir = dl
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redis: apt-get download %s: %w\n%s", strings.Join(redisPackages, " "), err, b)
	}
	debs, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
	if len(debs) != len(redisPackages) {
		return fmt.Errorf("redis: apt-get download gave %d packages, want %d", len(debs), len(redisPackages))
	}
	tmp := root + ".tmp"
	_ = os.RemoveAll(tmp)
	for _, deb := range debs {
		if b, err := exec.CommandContext(ctx, "dpkg", "-x", deb, tmp).CombinedOutput(); err != nil {
			return fmt.Errorf("redis: dpkg -x %s: %w\n%s", filepath.Base(deb), err, b)
		}
	}
	_ = os.RemoveAll(root)
	return os.Rename(tmp, root)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
