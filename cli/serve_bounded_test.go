package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/unreachabletest"
)

// TestServeRunDeadline: a serve run against a Waldur that never answers
// ends at its deadline (--timeout, else the interval) with exit 12 in its
// health, its metrics and its report file, and the loop goes on to the next
// run, which gets a deadline of its own; serve itself stops cleanly.
func TestServeRunDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		runs int
	}{
		{"--timeout", []string{"--interval", "1ms", "--timeout", "1s"}, 2},
		{"the interval", []string{"--interval", "1s", "--timeout", "0"}, 1}, // 0 undoes the harness's minute
	} {
		t.Run(tc.name, func(t *testing.T) {
			silent := unreachabletest.NewSilent(t)
			cfg, _ := deadEndConfig(t, silent.URL())
			gate := gateRuns(t)
			s := startServe(t, append([]string{"--config", cfg, "--jitter", "0", "--shutdown-grace", "100ms"}, tc.args...)...)
			var prev time.Time
			for i := 1; i <= tc.runs; i++ {
				gate <- struct{}{}
				start := time.Now()
				code, st := s.waitRun(prev)
				if d := time.Since(start); d > 8*time.Second {
					t.Errorf("run %d took %s with a deadline of 1s", i, d)
				}
				if code != http.StatusServiceUnavailable || st.LastRun.ExitCode != ExitDeadline || st.LastRun.Result != "failed" {
					t.Fatalf("run %d: health %d, last run %+v\n%s", i, code, st.LastRun, s.stderr.String())
				}
				if v := mustValue(t, s.scrape(), "waldur_gitops_last_run_exit_code", nil); v != ExitDeadline {
					t.Errorf("run %d: last_run_exit_code %v, want %d", i, v, ExitDeadline)
				}
				rep := stoppedReport(t, cfg)
				if rep.Command != "serve" || rep.ExitCode != ExitDeadline || rep.Stopped.By != "deadline" || rep.Stopped.TimeoutSeconds != 1 || rep.Stopped.During != "waldur" {
					t.Errorf("run %d: report command %q, exit %d, stopped %+v", i, rep.Command, rep.ExitCode, *rep.Stopped)
				}
				select {
				case <-s.done:
					t.Fatalf("serve ended with %d after run %d:\n%s", s.code, i, s.stderr.String())
				default:
				}
				prev = st.LastRun.Finished
			}
			if code, _ := s.stop(); code != ExitOK {
				t.Errorf("stop: exit %d, want 0\n%s", code, s.stderr.String())
			}
			logged := 0
			for _, l := range strings.Split(s.stderr.String(), "\n") {
				if strings.Contains(l, `"msg":"run finished"`) && strings.Contains(l, `"exit_code":12`) && strings.Contains(l, "deadline of 1s reached during waldur") {
					logged++
				}
			}
			if logged != tc.runs {
				t.Errorf("%d runs logged as ended by their deadline, want %d:\n%s", logged, tc.runs, s.stderr.String())
			}
		})
	}
}
