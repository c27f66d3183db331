package argotest

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
)

// TestProcUsage reads this test process's own CPU time and peak memory.
func TestProcUsage(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// Burn some CPU so that the counters move.
	deadline := time.Now().Add(50 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		_ = strings.Repeat("x", n%100)
	}
	u, err := procUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.CPU <= 0 || u.CPU > time.Hour || u.PeakRSS < 1<<20 || u.PeakRSS > 1<<40 {
		t.Errorf("usage %+v: want some CPU and a peak RSS of at least 1 MiB", u)
	}
}

// TestSetupObjects: the cluster Secret carries the API server's address, CA
// and token in Argo CD's format, the repository Secret the credentials.
func TestSetupObjects(t *testing.T) {
	c := &kubetest.Cluster{URL: "https://127.0.0.1:6443", CA: []byte("-----BEGIN CERTIFICATE-----\n")}
	b := setupObjects(c, Options{RepoURL: "http://127.0.0.1:1/tenants.git", Username: "bot", Password: "s3cret"})
	byName := map[string]map[string]any{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		byName[obj["kind"].(string)+"/"+obj["metadata"].(map[string]any)["name"].(string)] = obj
	}
	for _, want := range []string{"Namespace/argocd", "ConfigMap/argocd-cm", "Secret/argocd-secret", "Secret/waldur-tenants-repo", "Secret/cluster-" + ClusterName} {
		if byName[want] == nil {
			t.Errorf("no %s in\n%s", want, b)
		}
	}
	data := func(obj, key string) string {
		v, _ := byName[obj]["data"].(map[string]any)[key].(string)
		d, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("%s %s: %v", obj, key, err)
		}
		return string(d)
	}
	repo := "Secret/waldur-tenants-repo"
	if data(repo, "url") != "http://127.0.0.1:1/tenants.git" || data(repo, "username") != "bot" || data(repo, "password") != "s3cret" || data(repo, "type") != "git" {
		t.Errorf("repository secret: %v", byName[repo]["data"])
	}
	cl := "Secret/cluster-" + ClusterName
	if data(cl, "server") != c.URL {
		t.Errorf("cluster secret server %q, want %q", data(cl, "server"), c.URL)
	}
	var cfg struct {
		TLSClientConfig struct{ CAData []byte } `json:"tlsClientConfig"`
	}
	if err := json.Unmarshal([]byte(data(cl, "config")), &cfg); err != nil || string(cfg.TLSClientConfig.CAData) != string(c.CA) {
		t.Errorf("cluster secret config: %v, CA %q", err, cfg.TLSClientConfig.CAData)
	}
}
