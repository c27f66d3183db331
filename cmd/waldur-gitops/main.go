// Command waldur-gitops renders Waldur marketplace state into GitOps manifests.
package main

import (
	"os"
	_ "time/tzdata" // the config's timezone must resolve in images without zoneinfo

	_ "golang.org/x/crypto/x509roots/fallback" // root certificates where the system has none

	"github.com/waldur/waldur-gitops/cli"
	"github.com/waldur/waldur-gitops/internal/memlimit"
)

func main() {
	// A soft memory limit of 60 % of the container's, unless GOMEMLIMIT is
	// set: the collector works harder near it instead of letting the heap
	// double past the live data (BENCHMARKS.md, "Memory of a sync").
	memlimit.Set(os.Getenv, "/")
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
