// Package promtest finds promtool, the rule checker and unit-test runner of
// Prometheus (Debian's prometheus package, installed once by its prepare
// command), for the tests of the example alert rules.
package promtest

import (
	"context"
	"io"
	"os"
	"os/exec"

	"github.com/waldur/waldur-gitops/internal/testenv/apt"
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
	return apt.Install(ctx, log, "promtest", "prometheus", func() bool { return Find() != "" })
}
