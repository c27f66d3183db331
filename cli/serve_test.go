package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/metrics/metricstest"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/serve"
	"github.com/waldur/waldur-gitops/waldur"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is a serve command running in the background.
type served struct {
	t      *testing.T
	base   string
	stderr *syncBuffer
	cancel context.CancelFunc
	// done is closed when the command returned, with code set.
	done chan struct{}
	code int
}

var listenRE = regexp.MustCompile(`"msg":"serving".*"listen":"(127\.0\.0\.1:\d+)"`)

// startServe runs serve with args on a free port of 127.0.0.1; stop ends it
// the way SIGTERM does (the command's context is cancelled). Each run's
// deadline is a minute unless args say otherwise: the tests' intervals of a
// millisecond would otherwise be the deadline too.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	stderr := &syncBuffer{}
	a := &app{stdout: stderr, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(append([]string{"serve", "--listen", "127.0.0.1:0", "--timeout", "1m"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{t: t, stderr: stderr, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.code = failure.ExitCode(root.ExecuteContext(ctx))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if m := listenRE.FindStringSubmatch(stderr.String()); m != nil {
			s.base = "http://" + m[1]
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("serve exited with %d before listening:\n%s", s.code, stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not log its address:\n%s", stderr.String())
	return nil
}

// stop cancels the command and returns its exit code and how long it took.
func (s *served) stop() (int, time.Duration) {
	s.t.Helper()
	start := time.Now()
	s.cancel()
	select {
	case <-s.done:
		return s.code, time.Since(start)
	case <-time.After(10 * time.Second):
		s.t.Fatalf("serve did not stop:\n%s", s.stderr.String())
	}
	return -1, 0
}

// health fetches /healthz.
func (s *served) health() (int, serve.Status) {
	s.t.Helper()
	resp, err := http.Get(s.base + "/healthz")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st serve.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		s.t.Fatalf("/healthz: %v", err)
	}
	return resp.StatusCode, st
}

// waitRun waits until a run that ended after prev is reported by /healthz.
func (s *served) waitRun(prev time.Time) (int, serve.Status) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		code, st := s.health()
		if st.LastRun != nil && st.LastRun.Finished.After(prev) {
			return code, st
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Fatalf("no run ended after %s:\n%s", prev, s.stderr.String())
	return 0, serve.Status{}
}

// waitRunning waits until a run is in progress.
func (s *served) waitRunning() {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, st := s.health(); st.Running {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.t.Fatal("no run started")
}

// scrape fetches /metrics and parses it.
func (s *served) scrape() metricSet {
	s.t.Helper()
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("/metrics: %s", resp.Status)
	}
	return parseMetrics(s.t, resp.Body)
}

// metricSet is a parsed exposition.
type metricSet = metricstest.Set

func parseMetrics(t *testing.T, r io.Reader) metricSet {
	t.Helper()
	fams, err := metricstest.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func mustValue(t *testing.T, m metricSet, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := m.Value(name, want)
	if !ok {
		t.Fatalf("no sample %s%v", name, want)
	}
	return v
}

// gateRuns makes every serve run wait for a value on the returned channel.
func gateRuns(t *testing.T) chan<- struct{} {
	gate := make(chan struct{})
	old := tuneServeLoop
	tuneServeLoop = func(l *serve.Loop) {
		run := l.Run
		l.Run = func(ctx context.Context) serve.Outcome {
			select {
			case <-gate:
			case <-ctx.Done():
				return serve.Outcome{Result: serve.ResultFailed, Started: time.Now(), Finished: time.Now()}
			}
			return run(ctx)
		}
	}
	t.Cleanup(func() { tuneServeLoop = old })
	return gate
}

// TestServeRunsAndMetrics drives three runs of serve against a real git
// server: a first sync that commits every tenant, one with a resource that
// cannot be rendered, and one whose snapshot is broken. After each it checks
// /healthz and the parsed /metrics; a stop while it waits for the next run
// exits 0.
func TestServeRunsAndMetrics(t *testing.T) {
	srv, repo, url := gitRepo(t)
	cfg := withGit(t, exampleConfig, srv, url)
	// A site-agent key that has no use here: warned about once, not per run.
	writeFile(t, cfg, "sentry_dsn: https://sentry.example.org/1\n"+string(mustRead(t, cfg)))
	snap := filepath.Join(t.TempDir(), "state.json")
	example, err := os.ReadFile(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, snap, string(example))
	gate := gateRuns(t)
	// Health may not go stale between a run and the checks after it, however
	// slow a loaded machine makes them (the default would be 102ms here).
	s := startServe(t, "--config", cfg, "--snapshot", snap, "--interval", "1ms", "--jitter", "0", "--shutdown-grace", "100ms", "--stale-after", "1m")

	code, st := s.health()
	if code != http.StatusOK || st.Status != "starting" || st.LastRun != nil {
		t.Errorf("before the first run: %d %+v", code, st)
	}
	m := s.scrape()
	if v, ok := m.Value("waldur_gitops_last_success_timestamp_seconds", nil); ok {
		t.Errorf("last success %v before any run", v)
	}

	// Run 1: every tenant is created and committed.
	gate <- struct{}{}
	code, st = s.waitRun(time.Time{})
	head := gittest.Head(t, repo, "main")
	if code != http.StatusOK || st.Status != "ok" || st.LastRun.Result != "ok" || st.LastRun.ExitCode != 0 || head == "" {
		t.Fatalf("after the first run: %d %+v, head %q\n%s", code, st, head, s.stderr.String())
	}
	m = s.scrape()
	rep := readReport(t, mustRead(t, filepath.Join(filepath.Dir(cfg), "report.json")))
	if rep.Command != "serve" || rep.Commit != head || rep.ExitCode != 0 {
		t.Errorf("report file: command %q commit %q (head %s) exit %d", rep.Command, rep.Commit, head, rep.ExitCode)
	}
	stages := m.Samples("waldur_gitops_stage_duration_seconds", nil, "stage")
	for _, name := range []string{"waldur", "render", "git"} {
		if _, ok := stages[name]; !ok {
			t.Errorf("no duration for stage %s: %v", name, stages)
		}
	}
	if len(stages) != len(rep.Stages) {
		t.Errorf("stage durations %v, the report has %d stages", stages, len(rep.Stages))
	}
	firstSuccess := mustValue(t, m, "waldur_gitops_last_success_timestamp_seconds", nil)
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"waldur_gitops_runs_total", map[string]string{"result": "ok"}, 1},
		{"waldur_gitops_runs_total", map[string]string{"result": "failed"}, 0},
		{"waldur_gitops_last_run_exit_code", nil, 0},
		{"waldur_gitops_last_run_timestamp_seconds", nil, float64(rep.Finished.UnixMilli()) / 1000},
		{"waldur_gitops_last_success_timestamp_seconds", nil, float64(rep.Finished.UnixMilli()) / 1000},
		{"waldur_gitops_last_run_objects", map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}, float64(rep.Counts["render"]["create"])},
		{"waldur_gitops_last_run_objects", map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}, 15},
		{"waldur_gitops_objects_changed_total", map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}, 15},
		{"waldur_gitops_last_run_objects", map[string]string{"stage": "git", "kind": "Commit", "action": "create"}, 1},
		{"waldur_gitops_run_in_progress", nil, 0},
		{"waldur_gitops_build_info", nil, 1},
		{"waldur_gitops_leader", nil, 1}, // without --leader-elect the one replica leads
		{"waldur_gitops_leader_transitions_total", nil, 0},
	}
	for _, c := range checks {
		if got := mustValue(t, m, c.name, c.labels); got != c.want {
			t.Errorf("after the first run: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// Run 2: one resource cannot be rendered; the run is partial, the skip
	// is counted by class, nothing else changes.
	partial := strings.Replace(string(example), `"slug": "genomics-pipeline"`, `"slug": "Not_Valid"`, 1)
	writeFile(t, snap, partial)
	gate <- struct{}{}
	code, st = s.waitRun(st.LastRun.Finished)
	m = s.scrape()
	if code != http.StatusOK || st.LastRun.Result != "partial" || st.LastRun.ExitCode != ExitPartial {
		t.Errorf("after a partial run: %d %+v", code, st.LastRun)
	}
	skipped := m.Samples("waldur_gitops_last_run_skipped", nil, "stage", "class")
	if len(skipped) != 1 || skipped["render "+metrics.SkipInvalidName] != 1 {
		t.Errorf("skipped after the partial run: %v", skipped)
	}
	if got := mustValue(t, m, "waldur_gitops_runs_total", map[string]string{"result": "partial"}); got != 1 {
		t.Errorf("partial runs %v", got)
	}
	if got, _ := m.Value("waldur_gitops_last_run_objects", map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}); got != 0 {
		t.Errorf("tenants created by the second run: %v", got)
	}
	rep = readReport(t, mustRead(t, filepath.Join(filepath.Dir(cfg), "report.json")))
	unchanged := 0
	for _, e := range rep.Changes {
		if e.Stage == "render" && e.Kind == "Tenant" && e.Action == "unchanged" {
			unchanged++
		}
	}
	if got := mustValue(t, m, "waldur_gitops_last_run_objects", map[string]string{"stage": "render", "kind": "Tenant", "action": "unchanged"}); got != float64(unchanged) || unchanged == 0 {
		t.Errorf("tenants left as they were by the second run: %v, the report has %d", got, unchanged)
	}
	if got := mustValue(t, m, "waldur_gitops_objects_changed_total", map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}); got != 15 {
		t.Errorf("tenants created in total: %v", got)
	}
	success := mustValue(t, m, "waldur_gitops_last_success_timestamp_seconds", nil)
	if success <= firstSuccess {
		t.Errorf("the second successful run left the last success at %v (the first run's: %v)", success, firstSuccess)
	}

	// Run 3: the snapshot is broken; the run fails, health says so, the last
	// success stays where it was.
	writeFile(t, snap, "{not json")
	gate <- struct{}{}
	code, st = s.waitRun(st.LastRun.Finished)
	m = s.scrape()
	if code != http.StatusServiceUnavailable || st.Status != "failing" || st.LastRun.Result != "failed" || st.LastRun.ExitCode != ExitUsage {
		t.Errorf("after a failed run: %d %+v", code, st)
	}
	if st.LastSuccess == nil || float64(st.LastSuccess.UnixMilli())/1000 != success {
		t.Errorf("health's last success %v, metrics %v", st.LastSuccess, success)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"waldur_gitops_runs_total", map[string]string{"result": "failed"}, 1},
		{"waldur_gitops_runs_total", map[string]string{"result": "ok"}, 1},
		{"waldur_gitops_last_success_timestamp_seconds", nil, success},
		{"waldur_gitops_last_run_exit_code", nil, ExitUsage},
		{"waldur_gitops_stage_failed", map[string]string{"stage": "waldur"}, 1},
	} {
		if got := mustValue(t, m, c.name, c.labels); got != c.want {
			t.Errorf("after the failed run: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := m.Value("waldur_gitops_last_run_skipped", nil); ok {
		t.Error("the failed run still shows the skips of the run before")
	}
	if gittest.Head(t, repo, "main") != head {
		t.Error("a later run committed")
	}
	if !strings.Contains(s.stderr.String(), `"msg":"run finished"`) {
		t.Errorf("no summary line logged:\n%s", s.stderr.String())
	}
	// The ignored site-agent key is reported once, not at every run.
	if n := strings.Count(s.stderr.String(), `"msg":"config key ignored"`); n != 1 {
		t.Errorf("%d config warnings after three runs, want the one ignored key once", n)
	}

	// The fourth run waits at the gate; the stop cancels it after the grace.
	if code, took := s.stop(); code != ExitOK || took > 3*time.Second {
		t.Errorf("stop: exit %d after %s", code, took)
	}
}

// TestServeStop stops serve while it waits for the next run and during runs
// against a Waldur server that answers slowly: a run that ends within the
// grace commits, a longer one is cancelled and leaves the branch as it was.
// Every stop exits 0.
func TestServeStop(t *testing.T) {
	tests := []struct {
		name       string
		delay      time.Duration
		grace      string
		idle       bool
		wantCommit bool
		wantLog    string
		maxStop    time.Duration
	}{
		{"idle", 0, "5s", true, true, "stopping: no run in progress", 2 * time.Second},
		{"run finishes within the grace", 100 * time.Millisecond, "10s", false, true, "stopping: letting the run in progress finish", 9 * time.Second},
		{"run cancelled after the grace", 20 * time.Second, "300ms", false, false, "cancelling it", 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wsrv, waldurCfg := serveExample(t)
			wsrv.SetDelay("/api/marketplace-provider-resources/", tt.delay)
			gsrv, repo, url := gitRepo(t)
			cfg := withGit(t, waldurCfg, gsrv, url)
			before := gittest.Head(t, repo, "main")
			s := startServe(t, "--config", cfg, "--interval", "1h", "--shutdown-grace", tt.grace)
			if tt.idle {
				if code, st := s.waitRun(time.Time{}); code != http.StatusOK || st.Running {
					t.Fatalf("first run: %d %+v\n%s", code, st, s.stderr.String())
				}
				m := s.scrape()
				// The Waldur traffic of the run, counted by call kind.
				reqs := m.Samples("waldur_gitops_api_requests_total", map[string]string{"api": "waldur"}, "call")
				if reqs[waldur.KindResourcesList] < 1 || reqs[waldur.KindOrdersList] < 1 {
					t.Errorf("waldur requests by call: %v", reqs)
				}
				if errs := m.Samples("waldur_gitops_api_errors_total", map[string]string{"api": "waldur"}, "call"); len(errs) != 0 {
					t.Errorf("waldur errors: %v", errs)
				}
			} else {
				s.waitRunning()
				for wsrv.Requests("/api/marketplace-provider-resources/") == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
			code, took := s.stop()
			if code != ExitOK || took > tt.maxStop {
				t.Errorf("stop: exit %d after %s, want 0 within %s\n%s", code, took, tt.maxStop, s.stderr.String())
			}
			head := gittest.Head(t, repo, "main")
			if committed := head != before; committed != tt.wantCommit {
				t.Errorf("committed %v, want %v", committed, tt.wantCommit)
			}
			if !strings.Contains(s.stderr.String(), tt.wantLog) || !strings.Contains(s.stderr.String(), `"msg":"stopped"`) {
				t.Errorf("the log lacks %q or the stop:\n%s", tt.wantLog, s.stderr.String())
			}
			if strings.Contains(s.stderr.String(), wsrv.Token()) {
				t.Error("the Waldur token was logged")
			}
		})
	}
}

// TestServeWaldurErrors: a Waldur call that fails is counted by call kind,
// the run fails and health turns 503; the next run succeeds and health
// recovers.
func TestServeWaldurErrors(t *testing.T) {
	wsrv, waldurCfg := serveExample(t)
	gsrv, _, url := gitRepo(t)
	cfg := withGit(t, waldurCfg, gsrv, url)
	gate := gateRuns(t)
	s := startServe(t, "--config", cfg, "--interval", "1ms", "--jitter", "0", "--shutdown-grace", "100ms")

	// Every offering's reads fail: the run fails (one offering failing alone
	// would be a partial run, TestOneOfferingFailingKeepsItsTenants).
	wsrv.FailNext(1000, http.StatusNotFound)
	gate <- struct{}{}
	code, st := s.waitRun(time.Time{})
	wsrv.ClearFaults()
	m := s.scrape()
	errs := m.Samples("waldur_gitops_api_errors_total", map[string]string{"api": "waldur"}, "call")
	total := 0.0
	for _, v := range errs {
		total += v
	}
	// The 404s fail the calls; the reads in flight beside them are abandoned
	// and fail too.
	if code != http.StatusServiceUnavailable || st.LastRun.ExitCode != ExitWaldur || total < 1 {
		t.Errorf("after a 404: health %d %+v, errors %v", code, st.LastRun, errs)
	}
	if _, ok := m.Value("waldur_gitops_last_success_timestamp_seconds", nil); ok {
		t.Error("a last success after a failed first run")
	}
	first := m.Samples("waldur_gitops_api_requests_total", map[string]string{"api": "waldur"}, "call")

	gate <- struct{}{}
	code, st = s.waitRun(st.LastRun.Finished)
	m = s.scrape()
	if code != http.StatusOK || st.LastRun.Result != "ok" {
		t.Errorf("after the recovery: %d %+v", code, st.LastRun)
	}
	second := m.Samples("waldur_gitops_api_requests_total", map[string]string{"api": "waldur"}, "call")
	if second[waldur.KindResourcesList] <= first[waldur.KindResourcesList] {
		t.Errorf("resource list requests did not grow: %v then %v", first, second)
	}
	if again := m.Samples("waldur_gitops_api_errors_total", map[string]string{"api": "waldur"}, "call"); !maps.Equal(again, errs) {
		t.Errorf("errors after the recovery: %v, before %v", again, errs)
	}
	if _, ok := m.Value("waldur_gitops_last_success_timestamp_seconds", nil); !ok {
		t.Error("no last success after a successful run")
	}
}

func TestServeFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"zero interval", []string{"--interval", "0s"}, "--interval"},
		{"jitter of 1", []string{"--jitter", "1"}, "--jitter"},
		{"negative grace", []string{"--shutdown-grace", "-1s"}, "--shutdown-grace must not be negative, got -1s"},
		{"negative stale-after", []string{"--stale-after", "-1s"}, "--stale-after must not be negative"},
		{"stale-after within one interval", []string{"--interval", "1h", "--stale-after", "1s"}, "--stale-after 1s must be longer than the longest wait between two runs, --interval × (1 + --jitter) = 1h6m0s"},
		{"listen address unusable", []string{"--listen", "256.0.0.1:1"}, "--listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"serve", "--config", exampleConfig}, tt.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want %d naming %s:\n%s", code, ExitUsage, tt.want, stderr)
			}
		})
	}
}

// TestSyncPushesMetrics runs sync with metrics.pushgateway_url pointing at a
// fake Pushgateway: the run's metrics arrive with PUT under the job and
// grouping labels, with basic auth; a gateway that refuses leaves the exit
// code alone and is logged without the password.
func TestSyncPushesMetrics(t *testing.T) {
	const pwEnv = "WALDUR_GITOPS_TEST_PUSH_PASSWORD"
	const password = "push-secret-0123456789"
	t.Setenv(pwEnv, password)
	type request struct {
		method, path, auth string
		body               []byte
	}
	var (
		mu     sync.Mutex
		got    []request
		status = http.StatusOK
	)
	pgw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"), b})
		w.WriteHeader(status)
		mu.Unlock()
	}))
	defer pgw.Close()
	srv, repo, url := gitRepo(t)
	base := withGit(t, exampleConfig, srv, url)
	text := string(mustRead(t, base)) + "metrics:\n  pushgateway_url: " + pgw.URL + "\n  grouping: {instance: site-a}\n  username: pusher\n  password_env: " + pwEnv + "\n"
	cfg := filepath.Join(filepath.Dir(base), "push.yaml")
	writeFile(t, cfg, text)

	tests := []struct {
		name     string
		args     []string
		status   int
		wantExit int
		pushes   int
		creates  float64
	}{
		{"dry run pushes nothing", []string{"--dry-run"}, 200, ExitDiff, 0, 0},
		{"first sync", nil, 200, ExitOK, 1, 15},
		{"gateway refuses", nil, 500, ExitOK, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			got, status = nil, tt.status
			mu.Unlock()
			code, _, stderr := run(t, append([]string{"sync", "--config", cfg, "--snapshot", exampleSnapshot}, tt.args...)...)
			if code != tt.wantExit {
				t.Fatalf("exit %d, want %d\n%s", code, tt.wantExit, stderr)
			}
			if strings.Contains(stderr, password) {
				t.Error("the password was logged")
			}
			mu.Lock()
			reqs := got
			mu.Unlock()
			if len(reqs) != tt.pushes {
				t.Fatalf("%d pushes, want %d", len(reqs), tt.pushes)
			}
			if tt.pushes == 0 {
				return
			}
			r := reqs[0]
			wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("pusher:"+password))
			if r.method != http.MethodPut || r.auth != wantAuth {
				t.Errorf("push %s %s auth %q", r.method, r.path, r.auth)
			}
			if labels, _ := metricstest.GroupingLabels(r.path); !maps.Equal(labels, map[string]string{"job": "waldur-gitops", "instance": "site-a", "command": "sync"}) {
				t.Errorf("pushed to %s, want the group of job waldur-gitops, instance site-a, command sync", r.path)
			}
			m := parseMetrics(t, bytes.NewReader(r.body))
			if got, _ := m.Value("waldur_gitops_last_run_objects", map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}); got != tt.creates {
				t.Errorf("tenants created: %v, want %v", got, tt.creates)
			}
			if got := mustValue(t, m, "waldur_gitops_runs_total", map[string]string{"result": "ok"}); got != 1 {
				t.Errorf("ok runs %v", got)
			}
			if _, ok := m.Value("waldur_gitops_last_success_timestamp_seconds", nil); !ok {
				t.Error("no last success pushed")
			}
			if tt.status != 200 {
				warned := false
				sc := bufio.NewScanner(strings.NewReader(stderr))
				for sc.Scan() {
					l := sc.Text()
					warned = warned || (strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "pushing the run's metrics failed") && strings.Contains(l, pgw.URL))
				}
				if !warned {
					t.Errorf("no warning naming the gateway:\n%s", stderr)
				}
			}
		})
	}
	if gittest.Head(t, repo, "main") == "" {
		t.Error("nothing committed")
	}
}

// TestMetricsConfig checks the validation of the metrics keys through sync.
func TestMetricsConfig(t *testing.T) {
	tests := []struct {
		name, keys string
		want       []string
	}{
		{"credentials in the URL", "  pushgateway_url: http://u:pw@127.0.0.1:9091\n", []string{"metrics.pushgateway_url", "user information"}},
		{"not http", "  pushgateway_url: ftp://127.0.0.1\n", []string{"metrics.pushgateway_url"}},
		{"password without user", "  pushgateway_url: http://127.0.0.1:9091\n  password_env: X\n", []string{"metrics.username"}},
		{"both password sources", "  pushgateway_url: http://127.0.0.1:9091\n  username: u\n  password_env: X\n  password_file: f\n", []string{"metrics.password_env"}},
		{"keys without a URL", "  username: u\n  password_env: X\n", []string{"metrics.pushgateway_url"}},
		{"job as grouping label", "  pushgateway_url: http://127.0.0.1:9091\n  grouping: {job: x}\n", []string{"metrics.grouping.job"}},
		{"command as grouping label", "  pushgateway_url: http://127.0.0.1:9091\n  grouping: {command: x}\n", []string{"metrics.grouping.command", "set by waldur-gitops"}},
		{"bad label name", "  pushgateway_url: http://127.0.0.1:9091\n  grouping: {\"a-b\": x}\n", []string{"metrics.grouping.a-b"}},
		{"timeout", "  pushgateway_url: http://127.0.0.1:9091\n  timeout_seconds: 0\n", []string{}},
		{"timeout too long", "  pushgateway_url: http://127.0.0.1:9091\n  timeout_seconds: 301\n", []string{"metrics.timeout_seconds"}},
	}
	base := string(mustRead(t, exampleConfig))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			abs, _ := filepath.Abs("../examples/site-templates")
			writeFile(t, cfg, strings.ReplaceAll(base, "templates_dir: site-templates", "templates_dir: "+abs)+"metrics:\n"+tt.keys)
			code, _, stderr := run(t, "render", "--config", cfg, "--snapshot", exampleSnapshot, "--out", filepath.Join(t.TempDir(), "out"))
			if len(tt.want) == 0 {
				if code != ExitOK {
					t.Errorf("exit %d:\n%s", code, stderr)
				}
				return
			}
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "u:pw@") {
				t.Error("the URL's password is repeated")
			}
		})
	}
}

// TestServeKeycloakMetrics counts the Keycloak calls of a run, then, with
// Keycloak gone, its errors and the realm skipped for it.
func TestServeKeycloakMetrics(t *testing.T) {
	kc := kctest.NewServer()
	defer kc.Close()
	gsrv, _, url := gitRepo(t)
	// No retries: Keycloak going away must fail the run at once.
	cfg := withGit(t, keycloakConfigFrom(t, exampleConfig, kc.URL, "max_retries: 0", true), gsrv, url)
	addExampleUsers(t, kc, cfg)
	gate := gateRuns(t)
	s := startServe(t, "--config", cfg, "--snapshot", exampleSnapshot, "--interval", "1ms", "--jitter", "0", "--shutdown-grace", "100ms")

	gate <- struct{}{}
	code, st := s.waitRun(time.Time{})
	m := s.scrape()
	reqs := m.Samples("waldur_gitops_api_requests_total", map[string]string{"api": "keycloak"}, "call")
	if code != http.StatusOK || reqs[keycloak.CallLogin] < 1 || reqs[keycloak.CallCreateGroup] < 1 {
		t.Errorf("first run: health %d %+v, keycloak requests %v\n%s", code, st.LastRun, reqs, s.stderr.String())
	}
	if errs := m.Samples("waldur_gitops_api_errors_total", map[string]string{"api": "keycloak"}, "call"); len(errs) != 0 {
		t.Errorf("keycloak errors in a good run: %v", errs)
	}
	created := m.Samples("waldur_gitops_last_run_objects", map[string]string{"stage": "keycloak", "action": "create"}, "kind")
	if created["KeycloakGroup"] < 1 {
		t.Errorf("keycloak objects created: %v", created)
	}

	kc.Close()
	gate <- struct{}{}
	code, st = s.waitRun(st.LastRun.Finished)
	m = s.scrape()
	errs := m.Samples("waldur_gitops_api_errors_total", map[string]string{"api": "keycloak"}, "call")
	if code != http.StatusServiceUnavailable || st.LastRun.ExitCode != ExitKeycloak || errs[keycloak.CallLogin] < 1 {
		t.Errorf("Keycloak down: health %d %+v, errors %v", code, st.LastRun, errs)
	}
	if got := mustValue(t, m, "waldur_gitops_stage_failed", map[string]string{"stage": "keycloak"}); got != 1 {
		t.Errorf("keycloak stage failed = %v", got)
	}
	if got := m.Samples("waldur_gitops_last_run_skipped", map[string]string{"stage": "keycloak"}, "class"); got[metrics.SkipRealmFailure] < 1 {
		t.Errorf("keycloak skips: %v", got)
	}
}

// A run ended by SIGTERM (activeDeadlineSeconds, a node drain) still pushes
// its result: the push does not use the cancelled command context.
func TestPushAfterSignal(t *testing.T) {
	pushed := make(chan string, 1)
	pgw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pushed <- r.URL.EscapedPath()
	}))
	defer pgw.Close()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, "offerings:\n  - name: A\n    waldur_api_url: https://waldur.example.org/api/\n    waldur_offering_uuid: 41e0012c52dd79adfde833ef9fe7aaaa\n    backend_type: namespace\nmetrics:\n  pushgateway_url: "+pgw.URL+"\n")
	l, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep := report.New("sync", "test", false, time.Now())
	rep.Finish(ExitGit, time.Now())
	var stderr bytes.Buffer
	a := &app{stdout: io.Discard, stderr: &stderr, log: newLogger(&stderr, "info")}
	a.pushMetrics(ctx, l, rep, waldur.CallStats{})
	select {
	case p := <-pushed:
		if labels, _ := metricstest.GroupingLabels(p); labels["command"] != "sync" {
			t.Errorf("pushed to %s", p)
		}
	default:
		t.Fatalf("nothing pushed after the signal:\n%s", stderr.String())
	}
}

// TestServeKeepsOneEngine: serve builds its engine once and keeps it (and
// with it the opened repository) from run to run, and builds it anew when
// the config file changes.
func TestServeKeepsOneEngine(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	abs, err := filepath.Abs("../examples/site-templates")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(mustRead(t, exampleConfig)), "templates_dir: site-templates", "templates_dir: "+abs)
	writeFile(t, cfgPath, text)
	a := &app{configPath: cfgPath, stdout: &strings.Builder{}, stderr: &strings.Builder{}}
	runs := a.serveService(engine.Options{Snapshot: exampleSnapshot}, nil, 0, 0)
	load := func() *engine.Engine {
		t.Helper()
		cfg, err := a.loadConfig()
		if err != nil {
			t.Fatal(err)
		}
		e, err := runs.Engine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first := load()
	if again := load(); again != first {
		t.Error("the engine was built anew for an unchanged config")
	}
	writeFile(t, cfgPath, text+"\n# edited\n")
	if changed := load(); changed == first {
		t.Error("the engine was kept after the config file changed")
	}
}
