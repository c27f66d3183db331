//go:build linux

package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

func BenchmarkZZServe(b *testing.B) {
	n := benchTenants()
	self, _ := os.Executable()
	bin := buildCLI(b, b.TempDir())
	opts := synth.Options{Tenants: n, Seed: seed, BackendTypes: []string{config.BackendK8sUTNamespace}, DisableKeycloak: true}
	wsrv := waldurtest.New(b, waldurtest.LogViolations())
	wsrv.Seed(synth.Generate(opts))
	s := &syncBench{self: self, bin: bin, dir: "/tmp/noop2/srv"}
	os.MkdirAll(s.dir, 0o755)
	text := string(synth.ConfigYAML(opts))
	text = strings.ReplaceAll(text, "waldur_api_url: https://waldur.example.org/api/", "waldur_api_url: "+wsrv.URL())
	text = strings.ReplaceAll(text, "waldur_api_token: synthetic-token", "waldur_api_token: "+wsrv.Token())
	s.config = filepath.Join(s.dir, "config.yaml")
	os.WriteFile(s.config, []byte(text), 0o600)
	repo, cfg := s.newRepo(b)
	s.anyCommit = true
	s.run(b, cfg, repo, "", true)
	for range 3 {
		before := head(repo)
		if s.run(b, cfg, repo, "", false); head(repo) == before {
			break
		}
	}
	os.WriteFile("/tmp/noop2/ready", []byte(cfg+"\n"+repo+"\n"), 0o644)
	for {
		if _, err := os.Stat("/tmp/noop2/stop"); err == nil {
			return
		}
		time.Sleep(time.Second)
	}
}
