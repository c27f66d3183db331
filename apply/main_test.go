package apply_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
)

// TestMain builds etcd and kube-apiserver into the cache before any test runs
// (a few minutes on a fresh machine, nothing afterwards), outside the tests'
// timeout. With -short the cluster tests are skipped instead.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		if _, err := kubetest.EnsureBinaries(context.Background(), os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "apply tests need a real kube-apiserver: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}
