// Package chromiumtest finds the headless Chromium the browser tests drive
// (Debian's chromium package, installed once by its prepare command) and
// gives the launch flags every test uses.
package chromiumtest

import (
	"context"
	"io"
	"os"
	"os/exec"

	"github.com/waldur/waldur-gitops/internal/testenv/apt"
)

// candidates are the names Debian and other distributions install the
// browser under.
var candidates = []string{"chromium", "chromium-browser", "google-chrome"}

// Find returns the path of the browser, or "" when none is installed.
// WALDUR_GITOPS_CHROMIUM names one explicitly.
func Find() string {
	if p := os.Getenv("WALDUR_GITOPS_CHROMIUM"); p != "" {
		return p
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// Install makes sure Debian's chromium is installed: nothing when Find
// finds a browser, else apt-get as root. log gets progress lines.
func Install(ctx context.Context, log io.Writer) error {
	return apt.Install(ctx, log, "chromiumtest", "chromium", func() bool { return Find() != "" })
}

// Flags are the command-line flags of every test browser: headless, no
// sandbox (tests run as root in containers), and nothing that reaches the
// network on its own. The caller adds a fresh --user-data-dir.
var Flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
}
