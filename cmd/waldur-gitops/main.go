// Command waldur-gitops renders Waldur marketplace state into GitOps manifests.
package main

import (
	"os"
	_ "time/tzdata" // the config's timezone must resolve in images without zoneinfo

	"github.com/waldur/waldur-gitops/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
