package kube_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/waldur/waldur-gitops/kube"
)

// TestSourceNamespace: the namespace of the kubeconfig's context (the one
// named, else the current one), "default" when the context names none.
func TestSourceNamespace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: x}}]
contexts:
  - {name: tools, context: {cluster: c, user: u, namespace: tools}}
  - {name: plain, context: {cluster: c, user: u}}
current-context: tools
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ context, want string }{{"", "tools"}, {"tools", "tools"}, {"plain", "default"}} {
		t.Run(tc.context, func(t *testing.T) {
			got, err := kube.Source{Path: path, Context: tc.context}.Namespace()
			if err != nil || got != tc.want {
				t.Errorf("Namespace() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := (kube.Source{Path: filepath.Join(t.TempDir(), "missing")}).Namespace(); err == nil {
		t.Error("a kubeconfig that does not exist gave a namespace")
	}
}
