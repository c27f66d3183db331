package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/rabbittest"
)

// TestMain builds the real etcd and kube-apiserver the --validate-server test
// needs (shared with the apply and kube tests through a cache and a file lock);
// with -short that test is skipped instead.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(mainArgsEnv); ok {
		os.Exit(mainFromEnv(args)) // a child of TestRealSignals
	}
	flag.Parse()
	if !testing.Short() {
		if _, err := kubetest.EnsureBinaries(context.Background(), os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "cli tests need a real kube-apiserver: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(rabbittest.Main(m, &rmq))
}

// TestSyncValidateServer runs sync --validate-server against a real API
// server: without the ManagedNamespace and Rancher CRDs the server rejects
// those objects and nothing is committed; once the CRDs are installed the same
// sync validates every object and commits.
func TestSyncValidateServer(t *testing.T) {
	ctx := context.Background()
	cluster := startCluster(t)
	kubeconfig := cluster.KubeconfigPath(kubetest.Admin)
	srv, repo, url := gitRepo(t)
	cfg := withGit(t, exampleConfig, srv, url)
	args := []string{"sync", "--config", cfg, "--snapshot", exampleSnapshot, "--validate-server", "--kubeconfig", kubeconfig}

	code, _, stderr := run(t, args...)
	if code != ExitApply || !strings.Contains(stderr, "managednamespaces") {
		t.Fatalf("without CRDs: exit %d, want %d\n%s", code, ExitApply, stderr)
	}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", "refs/heads/main").Output(); err == nil {
		t.Fatalf("a rejected validation still committed %s", out)
	}

	if _, err := cluster.ApplyFiles(ctx, "../apply/testdata/crds/managednamespace.yaml", "../apply/testdata/crds/rancher.yaml"); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, args...)
	if code != ExitOK {
		t.Fatalf("with CRDs: exit %d\n%s", code, stderr)
	}
	if files := gittest.Files(t, repo, "main"); len(files) < 40 {
		t.Errorf("validated sync committed %d files", len(files))
	}
}

// startCluster starts a throwaway API server for one test (skipped with -short).
func startCluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	return kubetest.StartForTest(t, kubetest.Options{})
}
