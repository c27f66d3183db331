// Package gobuild builds the programs the test tooling runs (etcd and
// kube-apiserver for internal/testenv/kubetest, the Flux controllers for
// internal/testenv/fluxtest, Argo CD and kustomize for
// internal/testenv/argotest) from the Go module proxy into their caches: the go
// command they run, a build through a temporary file, and a module download.
package gobuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// Command prepares a go command in dir: at low CPU priority when nice exists
// (the machine is shared), outside any workspace, and with GOFLAGS=-mod=mod
// in place of the caller's GOFLAGS, so that a build into a cache does not
// depend on who asked for it.
func Command(ctx context.Context, dir string, args ...string) (*exec.Cmd, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("no go command on PATH to build the test tooling's programs with: %w", err)
	}
	argv := append([]string{gobin}, args...)
	if nice, err := exec.LookPath("nice"); err == nil {
		argv = append([]string{nice, "-n", "10"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "GOFLAGS=-mod=mod", "GOWORK=off")
	return cmd, nil
}

// Options tune Build.
type Options struct {
	// LDFlags is passed as -ldflags ("": none).
	LDFlags string
	// Parallel, when above zero, bounds the parallel compilations (go build
	// -p): a large build's memory grows with it.
	Parallel int
}

// Build builds pkg in the module directory mod into out, through a temporary
// file so that a failed or interrupted build never leaves a half-written
// binary in the cache. The go command's output goes to log (nil: discarded);
// its end is kept in the error.
func Build(ctx context.Context, mod, out, pkg string, o Options, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	tmp := out + ".tmp"
	_ = os.Remove(tmp)
	args := []string{"build"}
	if o.Parallel > 0 {
		args = append(args, "-p", strconv.Itoa(o.Parallel))
	}
	args = append(args, "-mod=mod", "-trimpath", "-buildvcs=false")
	if o.LDFlags != "" {
		args = append(args, "-ldflags", o.LDFlags)
	}
	cmd, err := Command(ctx, mod, append(args, "-o", tmp, pkg)...)
	if err != nil {
		return err
	}
	var tail testproc.TailBuffer
	cmd.Stdout = io.MultiWriter(log, &tail)
	cmd.Stderr = io.MultiWriter(log, &tail)
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("build %s in %s: %w\n%s", pkg, mod, err, tail.String())
	}
	return os.Rename(tmp, out)
}

// Module is what `go mod download -json` reports of a downloaded module.
type Module struct {
	// Dir is its source directory in the module cache (read-only); GoMod the
	// path of its go.mod file.
	Dir, GoMod string
}

// Download downloads module@version into the Go module cache, if it is not
// there yet, running the go command in dir.
func Download(ctx context.Context, dir, module, version string) (Module, error) {
	cmd, err := Command(ctx, dir, "mod", "download", "-json", module+"@"+version)
	if err != nil {
		return Module{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct{ Dir, GoMod, Error string }
	if err := errors.Join(runErr, json.Unmarshal(stdout.Bytes(), &info)); err != nil || info.Dir == "" || info.GoMod == "" {
		if err == nil {
			err = errors.New("no module directory in its report")
		}
		return Module{}, fmt.Errorf("download %s@%s: %w %s %s", module, version, err, info.Error, strings.TrimSpace(stderr.String()))
	}
	return Module{Dir: info.Dir, GoMod: info.GoMod}, nil
}

// Run runs the go command with args in dir, its standard output to stdout
// (nil: discarded); a failure carries its standard error.
func Run(ctx context.Context, dir string, stdout io.Writer, args ...string) error {
	cmd, err := Command(ctx, dir, args...)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
