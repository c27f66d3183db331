package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestCutRunsConverge: a first pass too big for one deadline (here every
// Keycloak write is slow) converges over several bounded runs. The first
// run pushes its commit, is cut in the Keycloak stage with exit 12 and a
// report that says so, and moves no order of a change whose Keycloak side
// did not land. Each later run keeps what the earlier ones wrote and goes on
// from there, each cut one saying it is incomplete, until one ends with exit
// 0: every group and membership is in Keycloak, none was written twice, and
// the orders are done. It holds with every group read at each pass and with
// a keycloak_state file kept from run to run (written after a cut pass too).
func TestCutRunsConverge(t *testing.T) {
	t.Run("no memory", func(t *testing.T) { convergeOverRuns(t, false) })
	t.Run("keycloak_state", func(t *testing.T) { convergeOverRuns(t, true) })
}

func convergeOverRuns(t *testing.T, remember bool) {
	const (
		timeout  = 3 * time.Second
		write    = 200 * time.Millisecond // the slow Keycloak's time per write
		maxRuns  = 10
		cutWords = "incomplete, deadline of 3s reached"
	)
	wsrv, waldurCfg := serveExample(t)
	kc := kctest.NewServer()
	defer kc.Close()
	gsrv, repo, url := gitRepo(t)
	// One request at a time: the first pass takes about 52 writes × 200ms,
	// several times what one deadline leaves for Keycloak.
	cfg := withGit(t, keycloakConfigFrom(t, waldurCfg, kc.URL, "concurrency: 1", true), gsrv, url)
	state := filepath.Join(filepath.Dir(cfg), "keycloak-state.json")
	if remember {
		writeFile(t, cfg, "keycloak_state: keycloak-state.json\n"+string(mustRead(t, cfg)))
	}
	addExampleUsers(t, kc, cfg)
	kc.SetWriteLatency(write)
	orders := []string{orderPendingCreate, orderCreate, orderUpdate, orderTerminate}
	sync := func() (int, string, string) {
		t.Helper()
		start := time.Now()
		code, stdout, stderr := run(t, "sync", "--config", cfg, "--timeout", timeout.String())
		if d := time.Since(start); d > timeout+5*time.Second {
			t.Errorf("a run with a deadline of %s took %s", timeout, d)
		}
		return code, stdout, stderr
	}

	// The first run: the commit is pushed, Keycloak is cut short.
	code, stdout, stderr := sync()
	if code != ExitDeadline {
		t.Fatalf("first run: exit %d, want %d\n%s\n%s", code, ExitDeadline, stdout, stderr)
	}
	head := gittest.Head(t, repo, "main")
	rep := stoppedReport(t, cfg)
	st := rep.Stopped
	if st.By != "deadline" || st.During != "keycloak" || st.Done != "commit "+head+" pushed" || rep.Commit != head || head == "" {
		t.Errorf("first run: stopped %+v, commit %q, head %q", *st, rep.Commit, head)
	}
	if len(st.Pending) < 2 || st.Pending[0] != "keycloak" || !slices.Contains(st.Pending, "orders") {
		t.Errorf("first run: pending %v, want keycloak first and orders", st.Pending)
	}
	if rep.ExitCode != ExitDeadline || !strings.Contains(stdout, cutWords) {
		t.Errorf("first run: report exit %d, summary:\n%s", rep.ExitCode, stdout)
	}
	if !strings.Contains(stderr, "deadline of 3s reached during keycloak: commit "+head+" pushed; pending: keycloak, proof, orders") {
		t.Errorf("first run: stderr lacks the stop line:\n%s", stderr)
	}
	for _, s := range rep.Stages {
		if s.Name == "orders" {
			t.Error("first run: the orders stage ran after the deadline")
		}
	}
	for _, id := range []string{orderPendingCreate, orderCreate} {
		if s := orderState(t, wsrv, id); s != waldur.OrderExecuting {
			t.Errorf("first run: Create order %s is %s, want executing", id, s)
		}
	}
	for _, id := range orders {
		if s := orderState(t, wsrv, id); s == waldur.OrderDone {
			t.Errorf("first run: order %s is done", id)
		}
	}
	written := kcObjects(kc)
	if written == 0 {
		t.Fatal("first run: nothing written to Keycloak before the deadline")
	}
	t.Logf("run 1: exit %d, %d groups and memberships in Keycloak", code, written)

	// The next runs go on from there until one ends.
	runs := 1
	for code != ExitOK {
		if runs++; runs > maxRuns {
			t.Fatalf("no run ended within %d runs of %s; %d groups and memberships in Keycloak", maxRuns, timeout, kcObjects(kc))
		}
		code, stdout, stderr = sync()
		rep = readReport(t, mustRead(t, filepath.Join(filepath.Dir(cfg), "report.json")))
		switch code {
		case ExitDeadline:
			if rep.Stopped == nil || rep.ExitCode != ExitDeadline || !strings.Contains(stdout, cutWords) {
				t.Errorf("run %d: exit 12, yet the report (exit %d, stopped %v) or summary does not say it is incomplete:\n%s", runs, rep.ExitCode, rep.Stopped, stdout)
			}
		case ExitOK:
			if rep.Stopped != nil || rep.ExitCode != ExitOK {
				t.Errorf("run %d: exit 0, report exit %d, stopped %v", runs, rep.ExitCode, rep.Stopped)
			}
		default:
			t.Fatalf("run %d: exit %d, want %d or 0\n%s\n%s", runs, code, ExitDeadline, stdout, stderr)
		}
		t.Logf("run %d: exit %d, %d groups and memberships in Keycloak", runs, code, kcObjects(kc))
		if n := kcObjects(kc); n < written {
			t.Errorf("run %d: %d groups and memberships in Keycloak, %d before it", runs, n, written)
		} else {
			written = n
		}
		if h := gittest.Head(t, repo, "main"); h != head || rep.Commit != "" {
			t.Errorf("run %d: committed again (%s, report %q) with nothing new in Waldur", runs, h, rep.Commit)
		}
	}
	if runs < 3 {
		t.Errorf("the first pass took %d runs: the Keycloak fake is not slow enough to test convergence", runs)
	}
	t.Logf("converged in %d runs", runs)
	if _, err := os.Stat(state); (err == nil) != remember {
		t.Errorf("keycloak_state set %v, yet the state file: %v", remember, err)
	}

	// Every desired group, with its members, is in Keycloak.
	l, st0 := exampletest.Load(t, cfg, exampleSnapshot)
	res := exampletest.Render(t, l.Config, st0)
	realms := map[string]string{}
	for _, o := range l.Offerings {
		realms[o.Name] = o.Settings.Common().Keycloak.Realm
	}
	for _, g := range res.Groups {
		got, ok := kc.Group(realms[g.Offering], g.Path())
		if !ok {
			t.Errorf("group %s missing in realm %s", g.Path(), realms[g.Offering])
			continue
		}
		for _, m := range g.Members {
			if !slices.Contains(got.Members, strings.ToLower(m)) {
				t.Errorf("group %s lacks member %s (has %v)", g.Path(), m, got.Members)
			}
		}
	}
	// Nothing was written twice: each run went on from what the last left.
	if w := kc.Writes(); w != kcObjects(kc) {
		t.Errorf("%d Keycloak writes for %d groups and memberships", w, kcObjects(kc))
	}
	for _, id := range orders {
		if s := orderState(t, wsrv, id); s != waldur.OrderDone {
			t.Errorf("order %s is %s after the run that ended, want done", id, s)
		}
	}
}

// kcObjects counts the groups and direct memberships of the example's realms.
func kcObjects(kc *kctest.Server) int {
	n := 0
	for _, realm := range []string{"hpc", kctest.Realm} {
		for _, p := range kc.Paths(realm) {
			g, _ := kc.Group(realm, p)
			n += 1 + len(g.Members)
		}
	}
	return n
}
