// Command prepare makes sure the Keycloak the tests run against is in the
// cache: downloaded, checked, unpacked and built
// (internal/testenv/keycloaktest). make test runs it before go test, where a
// test binary's progress stays hidden until its package ends, so that a first
// run says what it is doing and a machine without a suitable JDK fails at once
// with the reason.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/waldur/waldur-gitops/internal/testenv/keycloaktest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	d, err := keycloaktest.EnsureDist(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "keycloaktest: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "keycloaktest: Keycloak %s ready in %s (Java %d at %s)\n", keycloaktest.Version, d.Home, d.Java.Major, d.Java.Home)
}
