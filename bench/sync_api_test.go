//go:build linux

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/memlimit"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// BenchmarkCLISyncAPI is the no-op of BenchmarkCLISync as a CronJob runs
// it: the real binary, `waldur-gitops sync --config C`, reads the synthetic
// state (one k8s-ut-namespace offering, no Keycloak) from the in-repo
// Waldur over the API instead of a snapshot, in a fresh process each time,
// and syncs to a local bare repository. The test Waldur runs in this
// process; the CPU time and peak RSS reported are the CLI's alone. Warm-up
// runs first settle what a first pass changes (orders set done, the first
// feedback), then every measured run must be a no-op (no commit):
//
//	go test ./bench -run '^$' -bench CLISyncAPI -benchtime 3x
func BenchmarkCLISyncAPI(b *testing.B) {
	n := benchTenants()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bin := buildCLI(b, b.TempDir())
	opts := synth.Options{Tenants: n, Seed: seed, BackendTypes: []string{config.BackendK8sUTNamespace}, DisableKeycloak: true}
	// The contract checks of thousands of answers would be most of the
	// machine's work and the wall time; the tests keep them.
	wsrv := waldurtest.New(b, waldurtest.LogViolations(), waldurtest.WithoutContractChecks(), waldurtest.WithAnswerCache())
	wsrv.Seed(synth.Generate(opts))
	s := &syncBench{self: self, bin: bin, dir: b.TempDir()}
	text := string(synth.ConfigYAML(opts))
	text = strings.ReplaceAll(text, "waldur_api_url: https://waldur.example.org/api/", "waldur_api_url: "+wsrv.URL())
	text = strings.ReplaceAll(text, "waldur_api_token: synthetic-token", "waldur_api_token: "+wsrv.Token())
	s.config = filepath.Join(s.dir, "config.yaml")
	if err := os.WriteFile(s.config, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	limit := cronJobMemoryLimit(b)
	soft := memlimit.Soft(limit)
	modes := [][]string{{"GOMEMLIMIT=" + strconv.FormatInt(soft, 10)}, nil}
	var repo, cfg [2]string
	for m, env := range modes {
		repo[m], cfg[m] = s.newRepo(b)
		s.env, s.anyCommit = env, true
		s.run(b, cfg[m], repo[m], "", true)
		for range 3 {
			before := head(repo[m])
			if s.run(b, cfg[m], repo[m], "", false); head(repo[m]) == before {
				break
			}
		}
	}
	s.anyCommit = false
	b.Run(fmt.Sprintf("%d/%s/noop", n, config.BackendK8sUTNamespace), func(b *testing.B) {
		var runs [2][]measurement
		var served time.Duration // the test Waldur's CPU (this process's)
		for b.Loop() {
			for m, env := range modes {
				s.env = env
				began := cpuTime()
				runs[m] = append(runs[m], s.run(b, cfg[m], repo[m], "", false))
				served += cpuTime() - began
			}
		}
		reportSync(b, runs, limit, soft)
		b.ReportMetric(served.Seconds()/float64(len(runs[0])+len(runs[1])), "waldur-cpu-s")
	})
}
