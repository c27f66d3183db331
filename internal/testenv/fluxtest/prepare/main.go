// Command prepare builds the Flux controllers of internal/testenv/fluxtest into
// their cache (a no-op when they are there), so that `make test` pays the cold
// build once, visibly, before the tests run:
//
//	go run ./internal/testenv/fluxtest/prepare
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/waldur/waldur-gitops/internal/testenv/fluxtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := fluxtest.EnsureBinaries(ctx, os.Stderr)
	if err == nil {
		_, err = fluxtest.CRDs(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fluxtest/prepare:", err)
		os.Exit(1)
	}
	fmt.Println(b.SourceController)
	fmt.Println(b.KustomizeController)
}
