package kube_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
	"github.com/waldur/waldur-gitops/kube"
)

// TestRedirectToAnotherHostIsRefused: an API server that redirects to
// another host gets no request there (client-go would send the bearer token
// along), and the error names the kubeconfig and both URLs.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	const token = "kube-token-s3cret"
	for _, code := range redirecttest.Codes {
		t.Run(http.StatusText(code), func(t *testing.T) {
			rec := redirecttest.NewRecorder(t)
			from := redirecttest.Redirect(t, code, rec.URL)
			src := kube.Source{Path: writeKubeconfig(t, from.URL, token)}
			cfg, err := src.RESTConfig()
			if err != nil {
				t.Fatal(err)
			}
			r, err := kube.NewReader(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Namespaces(context.Background(), "")
			redirecttest.AssertRefused(t, err, src.ServerKey(), from.URL, rec.URL, token)
			_, err = r.Version(context.Background())
			redirecttest.AssertRefused(t, err, src.ServerKey(), from.URL, rec.URL, token)
			rec.AssertUntouched(t)
		})
	}
}

func writeKubeconfig(t *testing.T, server, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + `
users:
- name: u
  user:
    token: ` + token + `
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
