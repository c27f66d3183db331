// Command waldur-gitops renders Waldur marketplace state into GitOps manifests.
package main

import (
	"os"
	_ "time/tzdata" // the config's timezone must resolve in images without zoneinfo

	_ "golang.org/x/crypto/x509roots/fallback" // root certificates where the system has none

	"github.com/waldur/waldur-gitops/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
