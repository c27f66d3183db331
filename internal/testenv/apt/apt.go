// Package apt installs a Debian package for a test environment's prepare
// step (RabbitMQ, Chromium, promtool): once, as root, with apt-get, and
// only when what the tests need is not there already.
package apt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Install installs pkg unless present reports it is there, then checks
// present again. who prefixes the progress line written to log.
func Install(ctx context.Context, log io.Writer, who, pkg string, present func() bool) error {
	if present() {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is not installed and this is not root: apt-get install -y --no-install-recommends %s", pkg, pkg)
	}
	fmt.Fprintf(log, "%s: installing %s with apt-get (once)\n", who, pkg)
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", pkg}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), err)
		}
	}
	if !present() {
		return errors.New("apt-get installed " + pkg + " but what the tests need is still not found")
	}
	return nil
}
