// Package promtest finds promtool, the rule checker and unit-test runner of
// Prometheus (Debian's prometheus package, installed once by its prepare
// command), for the tests of the example alert rules.
package promtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Find returns the path of promtool, or "" when it is not installed.
// WALDUR_GITOPS_PROMTOOL names one explicitly.
func Find() string {
	if p := os.Getenv("WALDUR_GITOPS_PROMTOOL"); p != "" {
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	return ""
}

// Install makes sure promtool is installed: nothing when Find finds it,
// else Debian's prometheus package with apt-get as root (its service is
// not started: policy-rc.d is left as the machine has it, and the tests
// only run promtool). log gets progress lines.
func Install(ctx context.Context, log io.Writer) error {
	if Find() != "" {
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("promtool is not installed and this is not root: apt-get install -y --no-install-recommends prometheus")
	}
	fmt.Fprintln(log, "promtest: installing prometheus (for promtool) with apt-get (once)")
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "prometheus"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), err)
		}
	}
	if Find() == "" {
		return errors.New("apt-get installed prometheus but promtool is not on PATH")
	}
	return nil
}
