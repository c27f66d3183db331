package argotest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// Namespace is the namespace Argo CD runs in, as in examples/argocd.
const Namespace = "argocd"

// ClusterName is the name of the cluster Secret that registers the test
// cluster's API server as a destination.
const ClusterName = "waldur-gitops-test"

// Options configure Start.
type Options struct {
	// RepoURL is the Git repository the Applications read; Username and
	// Password its HTTP credentials (a repository Secret).
	RepoURL, Username, Password string
	// ReadyTimeout bounds the wait for each process (default 3 minutes).
	ReadyTimeout time.Duration
}

// Instance is a running Argo CD: Redis, the repo-server, the application
// controller and the ApplicationSet controller.
type Instance struct {
	// Dir holds the logs and working files; Stop removes it unless
	// $WALDUR_GITOPS_ARGOCD_KEEP is set.
	Dir string
	g   *testproc.Group
}

// Start registers c as a destination cluster (Argo CD runs outside it, where
// https://kubernetes.default.svc does not answer: the Applications must name
// c.URL), applies the CRDs, argocd-cm, argocd-secret and the repository
// Secret, and starts the programs on free loopback ports. Call Stop when done.
func Start(ctx context.Context, d *Dist, c *kubetest.Cluster, o Options) (_ *Instance, err error) {
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 3 * time.Minute
	}
	g, err := testproc.NewGroup("waldur-gitops-argocd-", "WALDUR_GITOPS_ARGOCD_KEEP")
	if err != nil {
		return nil, err
	}
	dir := g.Dir
	in := &Instance{Dir: dir, g: g}
	defer func() {
		if err != nil {
			in.Stop()
		}
	}()
	crds, _ := filepath.Glob(filepath.Join(d.CRDs, "*-crd.yaml"))
	if _, err := c.ApplyFiles(ctx, crds...); err != nil {
		return nil, fmt.Errorf("argo cd crds: %w", err)
	}
	setup := filepath.Join(dir, "setup.yaml")
	if err := os.WriteFile(setup, setupObjects(c, o), 0o600); err != nil {
		return nil, err
	}
	if _, err := c.ApplyFiles(ctx, setup); err != nil {
		return nil, fmt.Errorf("argo cd settings: %w", err)
	}
	kubeconfig := c.KubeconfigPath(kubetest.Admin)

	redisAddr, err := in.startRedis(ctx, d, o)
	if err != nil {
		return nil, err
	}
	repoAddr, err := in.startRepoServer(ctx, d, o, redisAddr)
	if err != nil {
		return nil, err
	}
	if err := in.startControllers(ctx, d, o, kubeconfig, repoAddr, redisAddr); err != nil {
		return nil, err
	}
	return in, nil
}

// startRedis starts Redis on a free loopback port and returns its address.
func (in *Instance) startRedis(ctx context.Context, d *Dist, o Options) (string, error) {
	return testproc.Retry(ctx, 3, func() (string, error) {
		ports, err := testproc.FreePorts(1)
		if err != nil {
			return "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(ports[0])
		p, err := in.g.Run("redis", d.Redis, []string{"LD_LIBRARY_PATH=" + d.RedisLibs},
			"--bind", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--save", "", "--appendonly", "no", "--dir", in.Dir)
		if err != nil {
			return "", err
		}
		return addr, p.WaitTCP(ctx, addr, o.ReadyTimeout)
	})
}

// startRepoServer starts the repo-server on free loopback ports and returns
// its address.
func (in *Instance) startRepoServer(ctx context.Context, d *Dist, o Options, redisAddr string) (string, error) {
	dir := in.Dir
	return testproc.Retry(ctx, 3, func() (string, error) {
		ports, err := testproc.FreePorts(2)
		if err != nil {
			return "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(ports[0])
		env := []string{
			// kustomize and the argocd CLI (GIT_ASKPASS) come from Bin.
			"PATH=" + d.Bin + string(os.PathListSeparator) + os.Getenv("PATH"),
			"ARGOCD_GPG_ENABLED=false",
			"ARGOCD_GNUPGHOME=" + filepath.Join(dir, "gnupg"),
			// Else a fixed path in /tmp, shared by every repo-server on the machine.
			"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(dir, "askpass.sock"),
			"TMPDIR=" + dir,
		}
		p, err := in.g.Run("repo-server", d.Command("argocd-repo-server"), env,
			"--address", "127.0.0.1", "--port", strconv.Itoa(ports[0]),
			"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(ports[1]),
			"--disable-tls", "--redis", redisAddr)
		if err != nil {
			return "", err
		}
		return addr, p.WaitTCP(ctx, addr, o.ReadyTimeout)
	})
}

// startControllers starts the application controller and the
// ApplicationSet controller, each waited for through its metrics endpoint.
func (in *Instance) startControllers(ctx context.Context, d *Dist, o Options, kubeconfig, repoAddr, redisAddr string) error {
	if _, err := testproc.Retry(ctx, 3, func() (struct{}, error) {
		ports, err := testproc.FreePorts(1)
		if err != nil {
			return struct{}{}, err
		}
		p, err := in.g.Run("application-controller", d.Command("argocd-application-controller"), nil,
			"--kubeconfig", kubeconfig, "--namespace", Namespace,
			"--repo-server", repoAddr, "--repo-server-plaintext", "--redis", redisAddr,
			"--metrics-port", strconv.Itoa(ports[0]))
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, p.WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]), o.ReadyTimeout)
	}); err != nil {
		return err
	}

	if _, err := testproc.Retry(ctx, 3, func() (struct{}, error) {
		ports, err := testproc.FreePorts(3)
		if err != nil {
			return struct{}{}, err
		}
		// It reads the cluster through controller-runtime, which takes the
		// kubeconfig from $KUBECONFIG only.
		p, err := in.g.Run("applicationset-controller", d.Command("argocd-applicationset-controller"), []string{"KUBECONFIG=" + kubeconfig},
			"--namespace", Namespace,
			"--argocd-repo-server", repoAddr, "--repo-server-plaintext",
			"--metrics-addr", "127.0.0.1:"+strconv.Itoa(ports[0]),
			"--probe-addr", "127.0.0.1:"+strconv.Itoa(ports[1]),
			"--webhook-addr", "127.0.0.1:"+strconv.Itoa(ports[2]),
			"--enable-leader-election=false")
		if err != nil {
			return struct{}{}, err
		}
		// Its health probe has no check registered (404): wait for metrics.
		return struct{}{}, p.WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]), o.ReadyTimeout)
	}); err != nil {
		return err
	}
	return nil
}

// setupObjects returns the namespace, Argo CD's two settings objects, the
// repository Secret and the cluster Secret, as YAML.
func setupObjects(c *kubetest.Cluster, o Options) []byte {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	clusterConfig, _ := json.Marshal(map[string]any{
		"bearerToken":     c.Token(kubetest.Admin),
		"tlsClientConfig": map[string]any{"caData": base64.StdEncoding.EncodeToString(c.CA)},
	})
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", Namespace)
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: %s\n  labels:\n    app.kubernetes.io/part-of: argocd\ndata: {}\n", Namespace)
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: argocd-secret\n  namespace: %s\n  labels:\n    app.kubernetes.io/part-of: argocd\ndata:\n  server.secretkey: %s\n", Namespace, b64("waldur-gitops-test-secret-key"))
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: waldur-tenants-repo\n  namespace: %s\n  labels:\n    argocd.argoproj.io/secret-type: repository\ndata:\n  type: %s\n  url: %s\n  username: %s\n  password: %s\n",
		Namespace, b64("git"), b64(o.RepoURL), b64(o.Username), b64(o.Password))
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-%s\n  namespace: %s\n  labels:\n    argocd.argoproj.io/secret-type: cluster\ndata:\n  name: %s\n  server: %s\n  config: %s\n",
		ClusterName, Namespace, b64(ClusterName), b64(c.URL), b64(string(clusterConfig)))
	return []byte(b.String())
}

// Usage is what a process has used so far, from /proc.
type Usage struct {
	// CPU is user+system time of the process; ChildrenCPU that of its waited
	// children (the repo-server's git and kustomize runs).
	CPU, ChildrenCPU time.Duration
	// PeakRSS is the high-water mark of its resident set, in bytes.
	PeakRSS int64
}

// Usage returns the usage of every running process by name; Linux only
// (elsewhere the map is empty).
func (in *Instance) Usage() map[string]Usage {
	out := map[string]Usage{}
	for _, p := range in.g.Procs {
		if p.Exited() {
			continue
		}
		u, err := procUsage(p.Cmd.Process.Pid)
		if err == nil {
			out[p.Name] = u
		}
	}
	return out
}

// clockTick is USER_HZ, 100 on every Linux this runs on.
const clockTick = 100

func procUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	// The command name (field 2) may hold spaces; the fields after it are
	// plain numbers.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 15 {
		return Usage{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	tick := func(i int) time.Duration {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(n) * time.Second / clockTick
	}
	// utime, stime, cutime, cstime are fields 14-17, i.e. 11-14 after the name.
	u := Usage{CPU: tick(11) + tick(12), ChildrenCPU: tick(13) + tick(14)}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			u.PeakRSS = kb << 10
		}
	}
	return u, nil
}

// Logs returns the end of every process's log, for a failing test.
func (in *Instance) Logs() string {
	var b strings.Builder
	for _, p := range in.g.Procs {
		fmt.Fprintf(&b, "==> %s (%s)\n%s\n", p.Name, p.Log, p.LogTail())
	}
	return b.String()
}

// Stop ends the processes and removes Dir, unless $WALDUR_GITOPS_ARGOCD_KEEP
// is set, which keeps it for reading the logs. Stop is safe to call more
// than once.
func (in *Instance) Stop() {
	in.g.Stop()
}
