// Package kubetest runs a real, throwaway Kubernetes control plane for tests:
// etcd and kube-apiserver, built from the Go module proxy on first use, cached,
// and started on 127.0.0.1 with a fresh data directory, fresh certificates and
// static bearer tokens. It has no kubelet or scheduler, and no controller
// manager unless Options.ControllerManager asks for one: it stores, validates,
// authorizes and serves objects, which is all that applying and pruning
// manifests needs. Tests that need quota status (creating a Pod in a namespace
// with a ResourceQuota), namespace deletion, garbage collection or service
// account tokens start kube-controller-manager with those controllers too.
//
// The binaries are built once per cache directory (cold: about four to six
// minutes on two cores; later runs find them and start in a few seconds):
//
//   - etcd from go.etcd.io/etcd/server/v3 at EtcdVersion (its root package is
//     the etcd server);
//   - kube-apiserver (and, when asked for, kube-controller-manager) from
//     k8s.io/kubernetes at KubeVersion, in a scratch module that pins every
//     k8s.io staging module to the matching v0.x release, because
//     k8s.io/kubernetes itself points them at ./staging directories that a
//     module download does not contain. The controller manager reuses most of
//     the apiserver's compiled packages: about one minute more.
//
// The cache directory is $WALDUR_GITOPS_KUBE_CACHE, else
// <user cache dir>/waldur-gitops/kube. A file lock serialises builds, so test
// binaries of several packages may ask for the binaries at once.
package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/filelock"
	"github.com/waldur/waldur-gitops/internal/testenv/gobuild"
	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// Versions of the control plane.
const (
	KubeVersion = "1.33.13"
	EtcdVersion = "3.5.21"
)

// CacheEnv names the environment variable that overrides the cache directory.
const CacheEnv = "WALDUR_GITOPS_KUBE_CACHE"

// CacheDir returns the directory binaries are built into and kept in.
func CacheDir() (string, error) { return testproc.CacheDir(CacheEnv, "kube") }

// Binaries holds the paths of the built programs.
type Binaries struct {
	Etcd          string
	KubeAPIServer string
	// KubeControllerManager is set only when asked for.
	KubeControllerManager string
}

// EnsureBinaries returns the cached binaries, building those that are missing.
// Build output goes to log (nil: discarded).
func EnsureBinaries(ctx context.Context, log io.Writer) (*Binaries, error) {
	return ensureBinaries(ctx, log, false)
}

// EnsureBinariesWithControllerManager is EnsureBinaries with kube-controller-manager too.
func EnsureBinariesWithControllerManager(ctx context.Context, log io.Writer) (*Binaries, error) {
	return ensureBinaries(ctx, log, true)
}

func ensureBinaries(ctx context.Context, log io.Writer, kcm bool) (*Binaries, error) {
	if log == nil {
		log = io.Discard
	}
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	b := &Binaries{
		Etcd:          filepath.Join(bin, "etcd-v"+EtcdVersion),
		KubeAPIServer: filepath.Join(bin, "kube-apiserver-v"+KubeVersion),
	}
	if kcm {
		b.KubeControllerManager = filepath.Join(bin, "kube-controller-manager-v"+KubeVersion)
	}
	if testproc.Executable(b.Etcd) && testproc.Executable(b.KubeAPIServer) && (!kcm || testproc.Executable(b.KubeControllerManager)) {
		return b, nil
	}
	unlock, err := filelock.Lock(filepath.Join(dir, ".build.lock"))
	if err != nil {
		return nil, fmt.Errorf("lock the kube binary cache: %w", err)
	}
	defer unlock()
	// Another process may have built them while this one waited for the lock.
	if !testproc.Executable(b.Etcd) {
		if err := buildEtcd(ctx, dir, b.Etcd, log); err != nil {
			return nil, err
		}
	}
	if !testproc.Executable(b.KubeAPIServer) {
		if err := buildKube(ctx, dir, "kube-apiserver", b.KubeAPIServer, log); err != nil {
			return nil, err
		}
	}
	if kcm && !testproc.Executable(b.KubeControllerManager) {
		if err := buildKube(ctx, dir, "kube-controller-manager", b.KubeControllerManager, log); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// buildEtcd builds the etcd server into out.
func buildEtcd(ctx context.Context, cache, out string, log io.Writer) error {
	mod := filepath.Join(cache, "src", "etcd-v"+EtcdVersion)
	gomod := fmt.Sprintf("module waldurgitops.test/etcd\n\ngo 1.23\n\nrequire go.etcd.io/etcd/server/v3 v%s\n", EtcdVersion)
	if err := writeModule(mod, gomod); err != nil {
		return err
	}
	return goBuild(ctx, mod, out, "-s -w", "go.etcd.io/etcd/server/v3", log)
}

// buildKube builds the command cmd of k8s.io/kubernetes (kube-apiserver,
// kube-controller-manager) into out.
func buildKube(ctx context.Context, cache, cmd, out string, log io.Writer) error {
	mod := filepath.Join(cache, "src", "kubernetes-v"+KubeVersion)
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	// The staging modules k8s.io/kubernetes replaces with ./staging/src/...
	// directories are the ones to pin; read them from its own go.mod.
	info, err := gobuild.Download(ctx, mod, "k8s.io/kubernetes", "v"+KubeVersion)
	if err != nil {
		return err
	}
	upstream, err := os.ReadFile(info.GoMod)
	if err != nil {
		return err
	}
	staging := stagingModules(upstream)
	if len(staging) == 0 {
		return fmt.Errorf("k8s.io/kubernetes@v%s: its go.mod replaces no staging modules; the build recipe no longer fits", KubeVersion)
	}
	// k8s.io/kubernetes v1.X.Y goes with staging modules v0.X.Y.
	stagingVersion := "v0." + strings.SplitN(KubeVersion, ".", 2)[1]
	var gomod strings.Builder
	fmt.Fprintf(&gomod, "module waldurgitops.test/kubernetes\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n", KubeVersion)
	for _, m := range staging {
		fmt.Fprintf(&gomod, "\t%s => %s %s\n", m, m, stagingVersion)
	}
	gomod.WriteString(")\n")
	if err := writeModule(mod, gomod.String()); err != nil {
		return err
	}
	minor := strings.Split(KubeVersion, ".")[1]
	ld := strings.Join([]string{
		"-s -w",
		"-X k8s.io/component-base/version.gitVersion=v" + KubeVersion,
		"-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/component-base/version.gitTreeState=clean",
	}, " ")
	return goBuild(ctx, mod, out, ld, "k8s.io/kubernetes/cmd/"+cmd, log)
}

// stagingModules returns the module paths a go.mod replaces with ./staging/ directories.
func stagingModules(gomod []byte) []string {
	var out []string
	inReplace := false
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "replace (":
			inReplace = true
			continue
		case inReplace && line == ")":
			inReplace = false
			continue
		case strings.HasPrefix(line, "replace "):
			line = strings.TrimPrefix(line, "replace ")
		case !inReplace:
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "./staging/") {
			out = append(out, f[0])
		}
	}
	return out
}

// writeModule (re)writes a scratch module's go.mod, dropping a go.sum that a
// different go.mod left behind.
func writeModule(dir, gomod string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p := filepath.Join(dir, "go.mod")
	if old, err := os.ReadFile(p); err == nil && string(old) == gomod {
		return nil
	}
	_ = os.Remove(filepath.Join(dir, "go.sum"))
	return os.WriteFile(p, []byte(gomod), 0o644)
}

// goBuild builds pkg in module dir mod into out, saying so in log.
func goBuild(ctx context.Context, mod, out, ldflags, pkg string, log io.Writer) error {
	start := time.Now()
	fmt.Fprintf(log, "kubetest: building %s (cold: a few minutes; cached afterwards)\n", pkg)
	if err := gobuild.Build(ctx, mod, out, pkg, gobuild.Options{LDFlags: ldflags}, log); err != nil {
		return err
	}
	fmt.Fprintf(log, "kubetest: built %s in %s\n", pkg, time.Since(start).Round(time.Second))
	return nil
}
