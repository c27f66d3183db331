package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/unreachabletest"
	"github.com/waldur/waldur-gitops/report"
)

// deadEndConfig is the example's config committing to a real Git server,
// with every offering's Waldur at url (a server that hangs or refuses).
func deadEndConfig(t *testing.T, url string) (cfg, repo string) {
	t.Helper()
	_, waldurCfg := serveExample(t)
	gsrv, repo, gitURL := gitRepo(t)
	cfg = withGit(t, waldurCfg, gsrv, gitURL)
	text := regexp.MustCompile(`waldur_api_url: .*`).ReplaceAllString(string(mustRead(t, cfg)), "waldur_api_url: "+url)
	writeFile(t, cfg, text)
	return cfg, repo
}

// stoppedReport reads the run report a stopped run left next to cfg.
func stoppedReport(t *testing.T, cfg string) report.Run {
	t.Helper()
	rep := readReport(t, mustRead(t, filepath.Join(filepath.Dir(cfg), "report.json")))
	if rep.Stopped == nil {
		t.Fatalf("the run report does not say the run was stopped: %+v", rep)
	}
	return rep
}

// TestDeadlineEndsTheRun: a Waldur that accepts connections and never
// answers holds a sync only until its deadline. The run then writes its
// report, prints its summary and one line saying where it stopped, and exits
// 12; nothing is committed and no later stage runs.
func TestDeadlineEndsTheRun(t *testing.T) {
	silent := unreachabletest.NewSilent(t)
	cfg, repo := deadEndConfig(t, silent.URL())
	head := gittest.Git(t, repo, "for-each-ref")
	start := time.Now()
	code, stdout, stderr := run(t, "sync", "--config", cfg, "--timeout", "1s")
	if code != ExitDeadline {
		t.Fatalf("exit %d, want %d\n%s", code, ExitDeadline, stderr)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run took %s with a 1s deadline", d)
	}
	if !strings.Contains(stderr, "deadline of 1s reached during waldur: nothing pushed or applied; pending: waldur, agent, approve, offboard, render, quota, git, proof") {
		t.Errorf("stderr lacks the stop line:\n%s", stderr)
	}
	if n := strings.Count(stderr, "deadline of 1s reached"); n != 1 {
		t.Errorf("the stop is said %d times:\n%s", n, stderr)
	}
	if !strings.Contains(stdout, "incomplete, deadline of 1s reached") {
		t.Errorf("the summary does not say the run is incomplete:\n%s", stdout)
	}
	rep := stoppedReport(t, cfg)
	if rep.ExitCode != ExitDeadline || rep.Stopped.By != "deadline" || rep.Stopped.TimeoutSeconds != 1 || rep.Stopped.During != "waldur" {
		t.Errorf("report: exit %d, stopped %+v", rep.ExitCode, *rep.Stopped)
	}
	for _, st := range rep.Stages {
		if st.Name != "waldur" {
			t.Errorf("stage %s ran after the deadline", st.Name)
		}
	}
	if now := gittest.Git(t, repo, "for-each-ref"); now != head {
		t.Errorf("the repository's refs moved from %q to %q", head, now)
	}
}

// TestInterruptEndsTheRun: SIGINT and SIGTERM stop a one-shot run at the
// next request of the stage in progress; it writes its report and exits
// 130 or 143 with one line.
func TestInterruptEndsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  os.Signal
		code int
	}{
		{"SIGINT", os.Interrupt, ExitInterrupted},
		{"SIGTERM", syscall.SIGTERM, ExitTerminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			silent := unreachabletest.NewSilent(t)
			cfg, _ := deadEndConfig(t, silent.URL())
			sigs := make(chan os.Signal, 1)
			go func() {
				for silent.Accepted() == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				sigs <- tc.sig
			}()
			var stdout, stderr bytes.Buffer
			code := runMain([]string{"sync", "--config", cfg}, &stdout, &stderr, sigs, func(int) { t.Error("a second signal") })
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			want := "interrupted during waldur: nothing pushed or applied; pending: waldur, agent"
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, want) {
				t.Errorf("last line %q, want it to start %q", last, want)
			}
			if strings.Contains(stderr.String(), "FAILED") || strings.Contains(stderr.String(), "error:") {
				t.Errorf("stderr reports failures besides the interrupt:\n%s", stderr.String())
			}
			rep := stoppedReport(t, cfg)
			if rep.ExitCode != tc.code || rep.Stopped.By != "interrupt" || rep.Stopped.Signal != tc.name {
				t.Errorf("report: exit %d, stopped %+v", rep.ExitCode, *rep.Stopped)
			}
		})
	}
}

// TestRefusedWaldurCostsOneStage: a Waldur whose port refuses connections
// is tried (with retries) for the first offering of the first stage only;
// the other offerings fail at once naming that failure, and no later stage
// (the agent registration among them) runs.
func TestRefusedWaldurCostsOneStage(t *testing.T) {
	cfg, _ := deadEndConfig(t, "http://"+unreachabletest.Refused(t))
	code, _, stderr := run(t, "sync", "--config", cfg)
	if code != ExitWaldur {
		t.Fatalf("exit %d, want %d\n%s", code, ExitWaldur, stderr)
	}
	rep := readReport(t, mustRead(t, filepath.Join(filepath.Dir(cfg), "report.json")))
	if len(rep.Stages) != 1 || rep.Stages[0].Name != "waldur" {
		t.Fatalf("stages %+v, want the waldur stage alone", rep.Stages)
	}
	if e := rep.Stages[0].Error; !strings.Contains(e, "connection refused") || strings.Contains(e, "unreachable earlier") {
		t.Errorf("waldur stage: %q, want the first offering's refusal itself", e)
	}
	if n := strings.Count(stderr, "unreachable earlier in this run"); n != 3 {
		t.Errorf("%d fast failures logged, want one per later offering (3):\n%s", n, stderr)
	}
}

// TestRunTimeoutFromConfig: without --timeout the config's run_timeout is
// the run's deadline, and a negative --timeout is a usage error.
func TestRunTimeoutFromConfig(t *testing.T) {
	silent := unreachabletest.NewSilent(t)
	cfg, _ := deadEndConfig(t, silent.URL())
	writeFile(t, cfg, "run_timeout: 1s\n"+string(mustRead(t, cfg)))
	code, _, stderr := run(t, "sync", "--config", cfg)
	if code != ExitDeadline || !strings.Contains(stderr, "deadline of 1s reached") {
		t.Fatalf("exit %d, want %d with the config's deadline\n%s", code, ExitDeadline, stderr)
	}
	if rep := stoppedReport(t, cfg); rep.Stopped.TimeoutSeconds != 1 {
		t.Errorf("report: stopped %+v", *rep.Stopped)
	}
	for _, verb := range []string{"sync", "render", "apply", "keycloak", "report", "serve"} {
		if code, _, stderr := run(t, verb, "--config", cfg, "--timeout", "-1s"); code != ExitUsage || !strings.Contains(stderr, `"--timeout" flag: must not be negative`) {
			t.Errorf("%s --timeout -1s: exit %d\n%s", verb, code, stderr)
		}
	}
}
