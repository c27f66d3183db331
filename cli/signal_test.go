package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/unreachabletest"
)

// mainArgsEnv carries, as JSON, the arguments of a test binary started to
// run Main as the command itself (TestMain hands over to mainFromEnv).
const mainArgsEnv = "WALDUR_GITOPS_TEST_MAIN_ARGS"

// mainFromEnv runs Main with the arguments in args, as the process does.
func mainFromEnv(args string) int {
	var list []string
	if err := json.Unmarshal([]byte(args), &list); err != nil {
		os.Stderr.WriteString("bad " + mainArgsEnv + ": " + err.Error() + "\n")
		return 125
	}
	return Main(list, os.Stdout, os.Stderr)
}

// TestRealSignals sends the process real SIGINT and SIGTERM while sync
// waits on a Waldur that never answers: it stops at once, writes its report
// and exits 130 or 143 with the one line.
func TestRealSignals(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		code int
	}{
		{"SIGINT", syscall.SIGINT, ExitInterrupted},
		{"SIGTERM", syscall.SIGTERM, ExitTerminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			silent := unreachabletest.NewSilent(t)
			cfg, _ := deadEndConfig(t, silent.URL())
			args, _ := json.Marshal([]string{"sync", "--config", cfg})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(args))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(20 * time.Second); silent.Accepted() == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("the run never reached Waldur:\n%s", stderr.String())
				}
			}
			sent := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("wait: %v, want exit %d\n%s", err, tc.code, stderr.String())
			}
			if d := time.Since(sent); d > 5*time.Second {
				t.Errorf("the run took %s to stop", d)
			}
			if !strings.Contains(stderr.String(), "interrupted during waldur: nothing pushed or applied; pending: waldur") {
				t.Errorf("stderr lacks the stop line:\n%s", stderr.String())
			}
			rep := stoppedReport(t, cfg)
			if rep.ExitCode != tc.code || rep.Stopped.Signal != tc.name {
				t.Errorf("report: exit %d, stopped %+v", rep.ExitCode, *rep.Stopped)
			}
		})
	}
}
