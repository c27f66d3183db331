package fluxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// Namespace is the namespace the controllers run for (RUNTIME_NAMESPACE).
const Namespace = "flux-system"

// Controllers are a running source-controller and kustomize-controller.
type Controllers struct {
	// Dir holds the artifact storage and the logs; Stop removes it.
	Dir string
	// StorageAddr is source-controller's artifact server, 127.0.0.1:<port>.
	StorageAddr string
	// Metrics is each controller's metrics address by name, 127.0.0.1:<port>;
	// it also serves Go's /debug/pprof handlers (see Profile).
	Metrics map[string]string

	g *testproc.Group
}

// Start runs both controllers out of cluster against the API server of
// kubeconfig and waits until they are ready. The CRDs (CRDs) must be
// applied first. Call Stop when done.
func Start(ctx context.Context, bins *Binaries, kubeconfig string) (*Controllers, error) {
	return StartWith(ctx, bins, kubeconfig, Flags{})
}

// Flags are command-line flags added to each controller's own, such as a
// site at scale sets (kustomize-controller's --kube-api-qps and
// --kube-api-burst: docs/gitops.md#flux-at-scale).
type Flags struct {
	Source, Kustomize []string
}

// FlagsFromEnv reads Flags from $WALDUR_GITOPS_FLUX_SOURCE_FLAGS and
// $WALDUR_GITOPS_FLUX_KUSTOMIZE_FLAGS (space-separated), so that a benchmark
// can be run with the controllers tuned as a site would tune them.
func FlagsFromEnv() Flags {
	return Flags{Source: strings.Fields(os.Getenv("WALDUR_GITOPS_FLUX_SOURCE_FLAGS")),
		Kustomize: strings.Fields(os.Getenv("WALDUR_GITOPS_FLUX_KUSTOMIZE_FLAGS"))}
}

// StartWith is Start with flags added to the controllers'.
func StartWith(ctx context.Context, bins *Binaries, kubeconfig string, f Flags) (*Controllers, error) {
	return testproc.Retry(ctx, 3, func() (*Controllers, error) { return start(ctx, bins, kubeconfig, f) })
}

func start(ctx context.Context, bins *Binaries, kubeconfig string, f Flags) (_ *Controllers, err error) {
	g, err := testproc.NewGroup("waldur-gitops-flux-", "WALDUR_GITOPS_KUBE_KEEP")
	if err != nil {
		return nil, err
	}
	dir := g.Dir
	c := &Controllers{Dir: dir, g: g}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	ports, err := testproc.FreePorts(5)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	c.StorageAddr = addr(0)
	c.Metrics = map[string]string{"source-controller": addr(1), "kustomize-controller": addr(3)}
	storage := filepath.Join(dir, "storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, err
	}
	src, err := c.run("source-controller", bins.SourceController, kubeconfig, append([]string{
		"--storage-path=" + storage, "--storage-addr=" + addr(0), "--storage-adv-addr=" + addr(0),
		"--metrics-addr=" + addr(1), "--health-addr=" + addr(2), "--log-encoding=json"}, f.Source...)...)
	if err != nil {
		return nil, err
	}
	kc, err := c.run("kustomize-controller", bins.KustomizeController, kubeconfig, append([]string{
		"--metrics-addr=" + addr(3), "--health-addr=" + addr(4), "--log-encoding=json"}, f.Kustomize...)...)
	if err != nil {
		return nil, err
	}
	for _, w := range []struct {
		p    *testproc.Process
		addr string
	}{{src, addr(2)}, {kc, addr(4)}} {
		if err := w.p.WaitHTTP(ctx, "http://"+w.addr+"/readyz", 2*time.Minute); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// run starts a controller with its output in <dir>/<name>.log and its
// temporary files in <dir>/<name>.tmp: kustomize-controller builds every
// Kustomization in a directory of its own under $TMPDIR, and twice a build
// failed on that directory vanishing from the machine's shared /tmp
// mid-build (BENCHMARKS.md, "Shard parts"; a TestFluxOCILayout run), with
// every suite's servers and tests writing there at once.
func (c *Controllers) run(name, bin, kubeconfig string, args ...string) (*testproc.Process, error) {
	tmp := filepath.Join(c.Dir, name+".tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	// The controllers have no --kubeconfig flag; leader election is off by
	// default.
	return c.g.Run(name, bin, []string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + Namespace, "TMPDIR=" + tmp}, args...)
}

// Profile writes a CPU profile of the named controller over the next d to
// path (go tool pprof reads it); it returns when the profile is written.
func (c *Controllers) Profile(ctx context.Context, controller string, d time.Duration, path string) error {
	addr, ok := c.Metrics[controller]
	if !ok {
		return fmt.Errorf("profile: no controller %q", controller)
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, max(1, int(d.Seconds())))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", controller, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", controller, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("profile %s: %w", controller, err)
	}
	return f.Close()
}

// LogEntry is one line of a controller's JSON log.
type LogEntry struct {
	// Controller is "source-controller" or "kustomize-controller".
	Controller string
	Level, Msg string
	// Error is the "error" field; Name the object's name, when given.
	Error, Name string
	// Line is the raw line.
	Line string
}

// Errors returns the log lines of level error of both controllers so far.
func (c *Controllers) Errors() ([]LogEntry, error) {
	var out []LogEntry
	for _, p := range c.g.Procs {
		b, err := os.ReadFile(p.Log)
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(string(b)) {
			var e struct {
				Level, Msg, Error, Name string
			}
			if json.Unmarshal([]byte(line), &e) != nil || e.Level != "error" {
				continue
			}
			out = append(out, LogEntry{Controller: p.Name, Level: e.Level, Msg: e.Msg, Error: e.Error, Name: e.Name, Line: strings.TrimSpace(line)})
		}
	}
	return out, nil
}

// CPU returns the user+system CPU time each controller has used so far, by
// name; zero where /proc cannot be read.
func (c *Controllers) CPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range c.g.Procs {
		out[p.Name] = procCPU(p.Cmd.Process.Pid)
	}
	return out
}

// procCPU reads utime+stime of pid from /proc (clock ticks of 10 ms, the
// Linux default USER_HZ).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// Stop ends the controllers and removes Dir, unless $WALDUR_GITOPS_KUBE_KEEP
// is set (as for kubetest), which keeps the logs. Stop is safe to call more
// than once.
func (c *Controllers) Stop() {
	c.g.Stop()
}
