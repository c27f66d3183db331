package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/serve"
)

// write is one write a replica sent: a Waldur request other than a read, or
// a Git push. At is when it reached the proxy in front of the server.
type write struct {
	replica, what string
	at            time.Time
}

// writeLog records who wrote when: every replica reaches Waldur and Git
// through proxies of its own, which note each write as it arrives.
type writeLog struct {
	mu     sync.Mutex
	writes []write
}

// proxy starts a proxy for replica in front of target (a base URL) and
// returns target's URL through it. Each request is recorded as it arrives,
// then waits delay before it is passed on.
func (l *writeLog) proxy(t *testing.T, replica, target string, delay time.Duration) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.ErrorLog = log.New(io.Discard, "", 0) // a killed replica's requests end half-way
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A fetch is a POST to git-upload-pack; a push's refs are a GET.
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			l.mu.Lock()
			l.writes = append(l.writes, write{replica: replica, what: r.Method + " " + r.URL.Path, at: time.Now()})
			l.mu.Unlock()
		}
		time.Sleep(delay)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// of returns the writes of replica, in the order they arrived.
func (l *writeLog) of(replica string) []write {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []write
	for _, w := range l.writes {
		if w.replica == replica {
			out = append(out, w)
		}
	}
	return out
}

// firstAfter returns replica's first write at or after t.
func (l *writeLog) firstAfter(replica string, t time.Time) (write, bool) {
	for _, w := range l.of(replica) {
		if !w.at.Before(t) {
			return w, true
		}
	}
	return write{}, false
}

// String lists every write, for a failure message.
func (l *writeLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, w := range l.writes {
		fmt.Fprintf(&b, "%s %s %s\n", w.at.Format("15:04:05.000"), w.replica, w.what)
	}
	return b.String()
}

// tcpProxy forwards TCP connections to a target until it is cut: then it
// closes every open connection and every new one at once, as a network
// partition between one replica and the API server would.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.accept()
	return p
}

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

// Cut ends every connection and refuses the next ones.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// proxiedKubeconfig writes a copy of the cluster's admin kubeconfig whose
// server is reached through p.
func proxiedKubeconfig(t *testing.T, cluster *kubetest.Cluster, p *tcpProxy) string {
	t.Helper()
	u, err := url.Parse(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(mustRead(t, cluster.KubeconfigPath(kubetest.Admin))), "server: "+cluster.URL,
		"server: https://"+p.ln.Addr().String()+u.Path, 1)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, path, text)
	return path
}

// replica is one serve process of the election tests.
type replica struct {
	t      *testing.T
	name   string
	cfg    string
	cmd    *exec.Cmd
	stderr *syncBuffer
	base   string
	exited chan struct{}
}

// startReplica starts serve --leader-elect as a process of its own (the
// test binary running Main), named name through POD_NAME, at the address
// POD_IP says.
func startReplica(t *testing.T, name, cfg, kubeconfig string) *replica {
	t.Helper()
	args, _ := json.Marshal([]string{"serve", "--config", cfg, "--leader-elect", "--kubeconfig", kubeconfig,
		"--listen", "127.0.0.1:0", "--interval", "300ms", "--jitter", "0", "--timeout", "30s", "--shutdown-grace", "1s"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(args), serve.PodNameEnv+"="+name, serve.PodIPEnv+"=127.0.0.1")
	r := &replica{t: t, name: name, cfg: cfg, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr, cmd.Stdout = r.stderr, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, r.stderr.String())
		}
	})
	r.base = "http://" + r.waitLog(listenRE, 20*time.Second)[1]
	return r
}

// waitLog waits for a log line matching re and returns its submatches.
func (r *replica) waitLog(re *regexp.Regexp, within time.Duration) []string {
	r.t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(r.stderr.String()); m != nil {
			return m
		}
		select {
		case <-r.exited:
			r.t.Fatalf("%s exited:\n%s", r.name, r.stderr.String())
		default:
		}
	}
	r.t.Fatalf("%s did not log %s:\n%s", r.name, re, r.stderr.String())
	return nil
}

// get fetches one of the replica's endpoints: the status code and the
// status it answered.
func (r *replica) get(path string) (int, serve.Status) {
	r.t.Helper()
	resp, err := http.Get(r.base + path)
	if err != nil {
		r.t.Fatalf("%s %s: %v", r.name, path, err)
	}
	defer resp.Body.Close()
	var st serve.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		r.t.Fatalf("%s %s: %v", r.name, path, err)
	}
	return resp.StatusCode, st
}

// waitRole waits until the replica's /healthz says it leads (or stands by
// under leader) and returns when it first saw that.
func (r *replica) waitRole(leading bool, leader string, within time.Duration) time.Time {
	r.t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, st := r.get("/healthz")
		if e := st.LeaderElection; e != nil && e.Leader == leading && (leader == "" || e.LeaderIdentity == leader) {
			return time.Now()
		}
	}
	_, st := r.get("/healthz")
	r.t.Fatalf("%s: not leading=%v (leader %q) within %s: %+v", r.name, leading, leader, within, st.LeaderElection)
	return time.Time{}
}

// metric returns one sample of the replica's /metrics.
func (r *replica) metric(name string, labels map[string]string) float64 {
	r.t.Helper()
	resp, err := http.Get(r.base + "/metrics")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	return mustValue(r.t, parseMetrics(r.t, resp.Body), name, labels)
}

// electionConfig is the config of one replica: Waldur and Git through its
// own proxies, and a short lease so that the tests take seconds.
func electionConfig(t *testing.T, base, lease, waldurURL, gitURL string, wlog *writeLog, name string, delay time.Duration) string {
	t.Helper()
	text := string(mustRead(t, base))
	text = strings.ReplaceAll(text, "waldur_api_url: "+waldurURL, "waldur_api_url: "+wlog.proxy(t, name, waldurURL, delay))
	text = strings.Replace(text, "url: "+gitURL, "url: "+wlog.proxy(t, name, gitURL, delay), 1)
	text += fmt.Sprintf("serve:\n  leader_election:\n    lease_name: %s\n    namespace: default\n"+
		"    lease_duration: %s\n    renew_deadline: %s\n    retry_period: %s\n", lease, testLease, testRenew, testRetry)
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, text)
	return path
}

// The election durations of the tests.
const (
	testLease = 3 * time.Second
	testRenew = 2 * time.Second
	testRetry = 500 * time.Millisecond
)

// lastWrite returns the last of writes, zero when there is none.
func lastWrite(writes []write) write {
	if len(writes) == 0 {
		return write{}
	}
	return slices.MaxFunc(writes, func(a, b write) int { return a.at.Compare(b.at) })
}

// replicaRun is one run of a replica, as its "run finished" line tells it.
type replicaRun struct {
	start, end time.Time
	exitCode   int
}

// runs returns the replica's finished runs, in the order they ended.
func (r *replica) runs() []replicaRun {
	r.t.Helper()
	var out []replicaRun
	for _, line := range strings.Split(r.stderr.String(), "\n") {
		if !strings.Contains(line, `"msg":"run finished"`) {
			continue
		}
		var l struct {
			Time     time.Time `json:"time"`
			Duration string    `json:"duration"`
			ExitCode int       `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			r.t.Fatalf("%s: %v: %s", r.name, err, line)
		}
		d, err := time.ParseDuration(l.Duration)
		if err != nil {
			r.t.Fatalf("%s: %v: %s", r.name, err, line)
		}
		out = append(out, replicaRun{start: l.Time.Add(-d), end: l.Time, exitCode: l.ExitCode})
	}
	return out
}

// handedOver checks that every run of from ended before the first run of
// to started: the two replicas never ran at once.
func handedOver(t *testing.T, from, to *replica) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(to.runs()) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // the first run of the new leader is still going on
	}
	fromRuns, toRuns := from.runs(), to.runs()
	if len(fromRuns) == 0 || len(toRuns) == 0 {
		t.Fatalf("runs: %s %d, %s %d", from.name, len(fromRuns), to.name, len(toRuns))
	}
	last, first := fromRuns[len(fromRuns)-1], toRuns[0]
	if !last.end.Before(first.start) {
		t.Errorf("%s's last run (%s to %s, exit %d) ended after %s's first run started (%s)", from.name,
			last.start.Format("15:04:05.000"), last.end.Format("15:04:05.000"), last.exitCode, to.name, first.start.Format("15:04:05.000"))
	}
}
