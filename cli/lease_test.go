package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/status"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// electionSite is one installation for the election tests: a Waldur test
// server that gets a new order every 150 ms (so that every run writes: it
// approves, pushes, sets done), a Git server, and the config they share.
type electionSite struct {
	wsrv   *waldurtest.Server
	repo   string
	base   string // the config, before each replica's proxies
	wURL   string
	gitURL string
	log    *writeLog
	orders chan waldur.UUID // the orders made so far
}

func newElectionSite(t *testing.T) *electionSite {
	t.Helper()
	wsrv, waldurCfg := serveExample(t)
	gsrv, repo, gitURL := gitRepo(t)
	s := &electionSite{wsrv: wsrv, repo: repo, base: withGit(t, waldurCfg, gsrv, gitURL), wURL: wsrv.URL(), gitURL: gitURL,
		log: &writeLog{}, orders: make(chan waldur.UUID, 1000)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			_, ord := newPlainOrder(wsrv, 0x100+i)
			s.orders <- ord
			select {
			case <-ctx.Done():
				return
			case <-time.After(150 * time.Millisecond):
			}
		}
	}()
	return s
}

// replica starts a replica of the site named name, reaching the API server
// with kubeconfig; each of its requests to Waldur and Git waits delay.
func (s *electionSite) replica(t *testing.T, name, lease, kubeconfig string, delay time.Duration) *replica {
	t.Helper()
	return startReplica(t, name, electionConfig(t, s.base, lease, s.wURL, s.gitURL, s.log, name, delay), kubeconfig)
}

// TestServeLeaderElection runs two serve --leader-elect processes on one
// Lease of a real kube-apiserver, against the Waldur test server and a real
// Git server, recording every write each sends (through proxies of its
// own). The API server is started once for both cases.
func TestServeLeaderElection(t *testing.T) {
	cluster := kubetest.StartForTest(t, kubetest.Options{Users: []string{"lease-user", "nobody"}})
	t.Run("failover after SIGKILL", func(t *testing.T) { testFailover(t, cluster) })
	t.Run("lost lease", func(t *testing.T) { testLostLease(t, cluster) })
	t.Run("lease RBAC", func(t *testing.T) { testLeaseRBAC(t, cluster) })
}

// testLeaseRBAC: the Role of examples/deploy/overlays/serve-ha is all a
// replica needs to lead; a replica the API server gives no access to the
// Lease does not stand by for ever but exits 2 naming the verbs.
func testLeaseRBAC(t *testing.T, cluster *kubetest.Cluster) {
	ctx := context.Background()
	ns := filepath.Join(t.TempDir(), "namespace.yaml")
	writeFile(t, ns, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: waldur-gitops\n")
	bind := filepath.Join(t.TempDir(), "bind.yaml")
	writeFile(t, bind, `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lease-user, namespace: waldur-gitops}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: waldur-gitops-leader-election}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: lease-user}]
`)
	if _, err := cluster.ApplyFiles(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ApplyFiles(ctx, "../examples/deploy/overlays/serve-ha/role.yaml", bind); err != nil {
		t.Fatal(err)
	}
	site := newElectionSite(t)
	cfg := electionConfig(t, site.base, "rbac", site.wURL, site.gitURL, site.log, "replica-a", 0)
	writeFile(t, cfg, strings.Replace(string(mustRead(t, cfg)), "namespace: default", "namespace: waldur-gitops", 1))
	a := startReplica(t, "replica-a", cfg, cluster.KubeconfigPath("lease-user"))
	a.waitRole(true, "replica-a", 20*time.Second)
	waitWrites(t, site.log, "replica-a", time.Time{})

	code, _, stderr := run(t, "serve", "--config", cfg, "--leader-elect", "--kubeconfig", cluster.KubeconfigPath("nobody"), "--listen", "127.0.0.1:0")
	if code != ExitUsage || !strings.Contains(stderr, "denies get, create, update on the Lease waldur-gitops/rbac") {
		t.Errorf("a replica without access to the Lease: exit %d\n%s", code, stderr)
	}
}

// testFailover: one replica leads and writes, the other stands by (healthy,
// live, ready, naming the leader); SIGKILL of the leader makes the standby
// lead within the lease duration (plus the retry period it checks at), and
// no write of the old leader comes after the new leader's first.
func testFailover(t *testing.T, cluster *kubetest.Cluster) {
	site := newElectionSite(t)
	kc := cluster.KubeconfigPath(kubetest.Admin)
	a := site.replica(t, "replica-a", "failover", kc, 0)
	a.waitRole(true, "replica-a", 20*time.Second)
	b := site.replica(t, "replica-b", "failover", kc, 0)
	b.waitRole(false, "replica-a", 10*time.Second)
	waitWrites(t, site.log, "replica-a", time.Time{})

	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		code, st := b.get(path)
		if code != http.StatusOK || st.Status != "standby" || !st.Ready || st.LeaderElection.Identity != "replica-b" {
			t.Errorf("the standby's %s: %d %+v", path, code, st)
		}
	}
	if _, st := b.get("/healthz"); st.LastRun != nil || st.Running {
		t.Errorf("the standby ran: %+v", st)
	}
	// The standby's status page names the leader and links to its page,
	// which the leader advertised on the Lease.
	var page struct {
		Leadership *status.Leadership `json:"leadership"`
	}
	resp, err := http.Get(b.base + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if l := page.Leadership; err != nil || l == nil || l.Leader || l.LeaderIdentity != "replica-a" || l.LeaderURL != a.base+"/" {
		t.Errorf("the standby's status page: %+v (%v), want a link to %s/", l, err, a.base)
	}
	if len(site.log.of("replica-b")) != 0 {
		t.Errorf("the standby wrote:\n%s", site.log)
	}
	for _, c := range []struct {
		r    *replica
		want float64
	}{{a, 1}, {b, 0}} {
		if got := c.r.metric("waldur_gitops_leader", nil); got != c.want {
			t.Errorf("%s: waldur_gitops_leader %v, want %v", c.r.name, got, c.want)
		}
	}

	before := b.metric("waldur_gitops_leader_transitions_total", nil)
	killed := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	took := b.waitRole(true, "replica-b", 10*time.Second).Sub(killed)
	if limit := testLease + 2*testRetry; took > limit {
		t.Errorf("the standby took over %s after the SIGKILL, over %s", took, limit)
	}
	first := waitWrites(t, site.log, "replica-b", killed)
	if last := lastWrite(site.log.of("replica-a")); !last.at.Before(first.at) {
		t.Errorf("the old leader wrote %s at %s, after the new leader's first write at %s:\n%s", last.what, last.at, first.at, site.log)
	}
	if got := b.metric("waldur_gitops_leader", nil); got != 1 {
		t.Errorf("the new leader: waldur_gitops_leader %v", got)
	}
	if got := b.metric("waldur_gitops_leader_transitions_total", nil); got != before+1 {
		t.Errorf("the new leader's transitions: %v, before the takeover %v", got, before)
	}
	waitOrderDone(t, site, b)

	// A leader stopped by SIGTERM (a rolling update) releases the Lease once
	// its run ended: the next replica leads well within the lease duration.
	c := site.replica(t, "replica-c", "failover", kc, 0)
	c.waitRole(false, "replica-b", 10*time.Second)
	termed := time.Now()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if took := c.waitRole(true, "replica-c", 10*time.Second).Sub(termed); took >= testLease {
		t.Errorf("after a SIGTERM of the leader the standby took over in %s, not before the lease ran out (%s)", took, testLease)
	}
	<-b.exited
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the stopped leader exited %d", code)
	}
	w := waitWrites(t, site.log, "replica-c", termed)
	handedOver(t, b, c)
	if last := lastWrite(site.log.of("replica-b")); !last.at.Before(w.at) {
		t.Errorf("the stopped leader wrote %s at %s, after the next leader's first write at %s:\n%s", last.what, last.at, w.at, site.log)
	}
}

// testLostLease cuts the leader off the API server (a TCP proxy between
// them closes every connection) while a run of it is in progress: it writes
// nothing once its lease has less than the renew deadline left, that run
// ends stopped by the lease, it stands by, and the other replica leads and
// writes after it.
func testLostLease(t *testing.T, cluster *kubetest.Cluster) {
	site := newElectionSite(t)
	apiURL, err := url.Parse(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, apiURL.Host)
	// Slow requests make the leader's runs long enough to be cut mid-way.
	a := site.replica(t, "replica-a", "partition", proxiedKubeconfig(t, cluster, proxy), 100*time.Millisecond)
	a.waitRole(true, "replica-a", 20*time.Second)
	b := site.replica(t, "replica-b", "partition", cluster.KubeconfigPath(kubetest.Admin), 0)
	b.waitRole(false, "replica-a", 10*time.Second)
	waitWrites(t, site.log, "replica-a", time.Time{})
	a.waitRunning()

	before := a.metric("waldur_gitops_leader_transitions_total", nil)
	cut := time.Now()
	proxy.Cut()
	a.waitRole(false, "", 10*time.Second)
	b.waitRole(true, "replica-b", 10*time.Second)
	first := waitWrites(t, site.log, "replica-b", cut)

	// The permit ends at most lease_duration − renew_deadline after the last
	// renewal, which was sent before the cut (300 ms for a write checked just
	// in time to reach the proxy on a loaded machine).
	permitEnd := cut.Add(testLease - testRenew)
	last := lastWrite(site.log.of("replica-a"))
	if !last.at.Before(first.at) || last.at.After(permitEnd.Add(300*time.Millisecond)) {
		t.Errorf("the cut-off leader wrote %s at %s (cut at %s, permit over by %s, the new leader's first write at %s):\n%s",
			last.what, last.at.Format("15:04:05.000"), cut.Format("15:04:05.000"), permitEnd.Format("15:04:05.000"), first.at.Format("15:04:05.000"), site.log)
	}
	rep := readReport(t, mustRead(t, filepath.Join(filepath.Dir(a.cfg), "report.json")))
	if rep.Stopped == nil || rep.Stopped.By != "lease" || rep.ExitCode != ExitTerminated {
		t.Errorf("the cut run's report: exit %d, stopped %+v", rep.ExitCode, rep.Stopped)
	}
	a.waitLog(regexp.MustCompile(`"msg":"run finished".*leader lease lost`), 5*time.Second)
	handedOver(t, a, b)
	if code, st := a.get("/readyz"); code != http.StatusOK || st.Status != "standby" {
		t.Errorf("the cut-off replica's /readyz: %d %+v", code, st)
	}
	if got, gauge := a.metric("waldur_gitops_leader_transitions_total", nil), a.metric("waldur_gitops_leader", nil); got != before+1 || gauge != 0 {
		t.Errorf("the cut-off replica: transitions %v (before the cut %v), waldur_gitops_leader %v", got, before, gauge)
	}
	waitOrderDone(t, site, b)
}

// waitRunning waits until the replica has a run in progress.
func (r *replica) waitRunning() {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, st := r.get("/healthz"); st.Running {
			return
		}
	}
	r.t.Fatalf("%s started no run", r.name)
}

// waitWrites waits for replica's first write at or after since.
func waitWrites(t *testing.T, log *writeLog, replica string, since time.Time) write {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if w, ok := log.firstAfter(replica, since); ok {
			return w
		}
	}
	t.Fatalf("%s wrote nothing after %s:\n%s", replica, since.Format("15:04:05.000"), log)
	return write{}
}

// waitOrderDone waits until an order made now is done: the new leader works.
func waitOrderDone(t *testing.T, site *electionSite, leader *replica) {
	t.Helper()
	for len(site.orders) > 0 {
		<-site.orders // made before now
	}
	ord := <-site.orders
	waitOrder(t, site.wsrv, ord, 15*time.Second, leader.stderr)
	if !strings.Contains(leader.stderr.String(), `"msg":"pushed"`) {
		t.Errorf("%s pushed nothing", leader.name)
	}
}
