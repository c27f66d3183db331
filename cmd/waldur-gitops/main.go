// Command waldur-gitops renders Waldur marketplace state into GitOps manifests.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	_ "time/tzdata" // the config's timezone must resolve in images without zoneinfo

	_ "golang.org/x/crypto/x509roots/fallback" // root certificates where the system has none

	"github.com/waldur/waldur-gitops/cli"
	"github.com/waldur/waldur-gitops/internal/memlimit"
)

// cpuProfileEnv names a file to write a pprof CPU profile of the whole run
// to: a diagnostic for measuring a fresh process (docs/troubleshooting.md).
const cpuProfileEnv = "WALDUR_GITOPS_CPUPROFILE"

func main() {
	// A soft memory limit of 60 % of the container's, unless GOMEMLIMIT is
	// set: the collector works harder near it instead of letting the heap
	// double past the live data (BENCHMARKS.md, "Memory of a sync").
	memlimit.Set(os.Getenv, "/")
	// Within that limit, fewer collections (memlimit.GCPercent).
	memlimit.TuneGC(os.Getenv)
	stop := startCPUProfile(os.Getenv(cpuProfileEnv))
	code := cli.Main(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// startCPUProfile starts a CPU profile into path when it is set and returns
// the function that ends it. A profile that cannot start is reported and
// skipped: a diagnostic never fails the run.
func startCPUProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: cpu profile %s: %v\n", cpuProfileEnv, path, err)
		if f != nil {
			f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
