// Command prepare makes sure the Argo CD the end-to-end test runs is in the
// cache (internal/testenv/argotest): Argo CD and kustomize built from the Go
// module proxy, Redis fetched from Debian. make e2e-argocd runs it before go
// test, where a test binary's progress stays hidden until its package ends.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/argotest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	d, err := argotest.Ensure(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "argotest: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "argotest: Argo CD %s, kustomize %s and Redis ready in %s (%s)\n",
		argotest.Version, argotest.KustomizeVersion, d.Bin, time.Since(start).Round(time.Second))
}
