// Command prepare makes sure the headless Chromium of the browser tests is
// installed (Debian's chromium, with apt-get when missing and root;
// internal/testenv/chromiumtest). make test runs it before go test so that a
// machine without the browser fails at once with the reason.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/waldur/waldur-gitops/internal/testenv/chromiumtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := chromiumtest.Install(ctx, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "chromiumtest: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "chromiumtest: chromium is installed:", chromiumtest.Find())
}
