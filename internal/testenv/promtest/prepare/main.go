// Command prepare makes sure promtool is installed for the tests of the
// example alert rules (Debian's prometheus, with apt-get when missing and
// root; internal/testenv/promtest). make test runs it before go test.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/waldur/waldur-gitops/internal/testenv/promtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := promtest.Install(ctx, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "promtest: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "promtest: promtool is installed:", promtest.Find())
}
