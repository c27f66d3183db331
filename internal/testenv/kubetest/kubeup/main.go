// Command kubeup starts the test control plane of internal/testenv/kubetest by
// hand, for trying the apply command or debugging a test:
//
//	go run ./internal/testenv/kubetest/kubeup [-kcm] [-crds DIR] [-user NAME]...
//
// With -kcm it runs kube-controller-manager too (quota status, namespace
// deletion, garbage collection, service accounts). It builds etcd and
// kube-apiserver (and kube-controller-manager) on first use, prints the admin kubeconfig
// path and runs until interrupted; everything is removed on exit.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
)

type userList []string

func (u *userList) String() string     { return strings.Join(*u, ",") }
func (u *userList) Set(v string) error { *u = append(*u, v); return nil }

func main() {
	crds := flag.String("crds", "", "apply every *.yaml file of this directory (CRDs, RBAC, …)")
	var users userList
	flag.Var(&users, "user", "add a user with its own token and no permissions (repeatable)")
	buildOnly := flag.Bool("build", false, "only build the binaries into the cache")
	kcm := flag.Bool("kcm", false, "also run (or, with -build, build) kube-controller-manager")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *buildOnly {
		ensure := kubetest.EnsureBinaries
		if *kcm {
			ensure = kubetest.EnsureBinariesWithControllerManager
		}
		b, err := ensure(ctx, os.Stderr)
		if err != nil {
			fail(err)
		}
		fmt.Println(b.Etcd)
		fmt.Println(b.KubeAPIServer)
		if b.KubeControllerManager != "" {
			fmt.Println(b.KubeControllerManager)
		}
		return
	}
	c, err := kubetest.Start(ctx, kubetest.Options{Users: users, Log: os.Stderr, ControllerManager: *kcm})
	if err != nil {
		fail(err)
	}
	defer c.Stop()
	if *crds != "" {
		files, _ := filepath.Glob(filepath.Join(*crds, "*.yaml"))
		if _, err := c.ApplyFiles(ctx, files...); err != nil {
			c.Stop()
			fail(err)
		}
	}
	fmt.Printf("export KUBECONFIG=%s\n", c.KubeconfigPath(kubetest.Admin))
	for _, u := range users {
		fmt.Printf("# %s: %s\n", u, c.KubeconfigPath(u))
	}
	fmt.Fprintln(os.Stderr, "kubeup: running; Ctrl-C stops and removes the cluster")
	<-ctx.Done()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kubeup:", err)
	os.Exit(1)
}
