//go:build linux

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/gittest"
	"github.com/waldur/waldur-gitops/internal/synth"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// goalSyncRSSMiB is the peak RSS every profile's 10,000-tenant sync must stay
// under (issue 16, item 8): the example CronJob's memory limit is derived from
// the measured peaks in BENCHMARKS.md.
const goalSyncRSSMiB = 300.0

// keycloakFailure is how the Keycloak stage of every benchmark run fails.
// The benchmark's config enables Keycloak, as a production site would, so
// that the render carries its groups, but gives it no credentials: the
// Keycloak stage fails at once, before any call, and everything before it
// (read the snapshot, render, fetch, plan, commit, push) is what is measured.
// Such a run exits 2 (config) when it pushed nothing and 8 when it did
// (docs/run-report.md).
const keycloakFailure = "unusable Keycloak connection settings"

// syncBench holds the built binary and the inputs of one profile's sync.
type syncBench struct {
	self, bin, dir string
	config         string
	// snapshots: [0] the generated state, [1] the same with one resource's CPU
	// limit changed (one tenant file differs).
	snapshots [2]string
}

// benchTenants is 10,000, or $WALDUR_GITOPS_BENCH_TENANTS for a quick check.
func benchTenants() int {
	if n, err := strconv.Atoi(os.Getenv("WALDUR_GITOPS_BENCH_TENANTS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// buildCLI builds the waldur-gitops binary into dir.
func buildCLI(b *testing.B, dir string) string {
	b.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build the CLI with:", err)
	}
	bin := filepath.Join(dir, "waldur-gitops")
	build := exec.Command(gobin, "build", "-trimpath", "-o", bin, "github.com/waldur/waldur-gitops/cmd/waldur-gitops")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// newSyncBench writes the config (git.url left for each run's repository)
// and the two snapshots of one profile.
func newSyncBench(b *testing.B, self, bin, profile string, n int) *syncBench {
	b.Helper()
	dir := b.TempDir()
	s := &syncBench{self: self, bin: bin, dir: dir, config: filepath.Join(dir, "config.yaml")}
	opts := synth.Options{Tenants: n, Seed: seed, BackendTypes: []string{profile}}
	if err := os.WriteFile(s.config, synth.ConfigYAML(opts), 0o644); err != nil {
		b.Fatal(err)
	}
	snap := synth.Snapshot(opts)
	for i := range s.snapshots {
		if i == 1 && !setCPULimit(&snap.State, 4321) {
			b.Fatal("no resource to change")
		}
		var buf bytes.Buffer
		if err := waldur.WriteSnapshot(&buf, snap); err != nil {
			b.Fatal(err)
		}
		s.snapshots[i] = filepath.Join(dir, "snapshot"+strconv.Itoa(i)+".json")
		if err := os.WriteFile(s.snapshots[i], buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// setCPULimit changes the CPU limit of the first resource that renders one.
func setCPULimit(st *waldur.State, v int) bool {
	for i := range st.Offerings {
		for j := range st.Offerings[i].Resources {
			r := &st.Offerings[i].Resources[j]
			if r.State == waldur.ResourceOK && r.Limits != nil && !r.Paused && !r.Downscaled {
				r.Limits["cpu"] = waldur.Amount(strconv.Itoa(v))
				return true
			}
		}
	}
	return false
}

// repoConfig writes a config whose git.url is the bare repository repo.
func (s *syncBench) repoConfig(b *testing.B, repo string) string {
	b.Helper()
	raw, err := os.ReadFile(s.config)
	if err != nil {
		b.Fatal(err)
	}
	const synthURL = "url: https://git.example.org/platform/tenants.git"
	if !bytes.Contains(raw, []byte(synthURL)) {
		b.Fatalf("the synthetic config has no %q", synthURL)
	}
	raw = bytes.Replace(raw, []byte(synthURL), []byte("url: file://"+repo), 1)
	raw = append(raw, "report: "+repo+".report.json\n"...)
	path := repo + ".yaml"
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// newRepo makes an empty bare repository and its config.
func (s *syncBench) newRepo(b *testing.B) (repo, cfg string) {
	b.Helper()
	repo, err := os.MkdirTemp(s.dir, "repo")
	if err != nil {
		b.Fatal(err)
	}
	repo = filepath.Join(repo, "tenants.git")
	gittest.InitBare(b, repo, "main")
	return repo, s.repoConfig(b, repo)
}

// run syncs snapshot into the repository of cfg with the CLI, through the
// measuring runner, and fails unless the run pushed (or not) as expected.
func (s *syncBench) run(b *testing.B, cfg, repo, snapshot string, wantCommit bool) measurement {
	b.Helper()
	before := head(repo)
	mfile := filepath.Join(s.dir, "measurement.json")
	os.Remove(mfile)
	cmd := exec.Command(s.self, s.bin, "sync", "--config", cfg, "--snapshot", snapshot, "--log-level", "warn")
	cmd.Env = append(os.Environ(), measureEnv+"="+mfile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	raw, rerr := os.ReadFile(mfile)
	if rerr != nil {
		b.Fatalf("waldur-gitops sync: %v %v\n%s", err, rerr, tail(out.Bytes(), 3000))
	}
	var m measurement
	if err := json.Unmarshal(raw, &m); err != nil {
		b.Fatal(err)
	}
	var rep report.Run
	if raw, err := os.ReadFile(repo + ".report.json"); err != nil {
		b.Fatalf("waldur-gitops sync exited %d without a run report: %v\n%s", m.ExitCode, err, tail(out.Bytes(), 3000))
	} else if err := json.Unmarshal(raw, &rep); err != nil {
		b.Fatalf("the run report: %v", err)
	}
	for _, st := range rep.Stages {
		if st.Error != "" && (st.Name != "keycloak" || !strings.Contains(st.Error, keycloakFailure)) {
			b.Fatalf("waldur-gitops sync exited %d, stage %s failed: %s\n%s", m.ExitCode, st.Name, st.Error, tail(out.Bytes(), 3000))
		}
	}
	if after := head(repo); (after != before) != wantCommit {
		b.Fatalf("commit before %q, after %q; want a new commit: %t\n%s", before, after, wantCommit, tail(out.Bytes(), 3000))
	}
	return m
}

// head is the commit main points to in repo, "" before the first.
func head(repo string) string {
	out, err := gittest.GitErr(repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/main")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// BenchmarkCLISync runs the real binary, `waldur-gitops sync --config C
// --snapshot S`, against a local bare repository (file transport: the real
// git-upload-pack and git-receive-pack), one profile at a time with all its
// tenants in one offering, and reports each run's peak RSS against the goal
// (< 300 MiB): what the example CronJob's memory limit is derived from.
// "first" syncs into an empty repository, "noop" re-syncs the same state,
// "one-tenant" changes one resource's CPU limit each time.
func BenchmarkCLISync(b *testing.B) {
	n := benchTenants()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bin := buildCLI(b, b.TempDir())
	for _, profile := range config.BackendTypes {
		s := newSyncBench(b, self, bin, profile, n)
		name := fmt.Sprintf("%d/%s/", n, profile)
		b.Run(name+"first", func(b *testing.B) {
			var runs []measurement
			for b.Loop() {
				b.StopTimer()
				repo, cfg := s.newRepo(b)
				b.StartTimer()
				runs = append(runs, s.run(b, cfg, repo, s.snapshots[0], true))
			}
			reportSync(b, runs)
		})
		repo, cfg := s.newRepo(b)
		s.run(b, cfg, repo, s.snapshots[0], true)
		b.Run(name+"noop", func(b *testing.B) {
			var runs []measurement
			for b.Loop() {
				runs = append(runs, s.run(b, cfg, repo, s.snapshots[0], false))
			}
			reportSync(b, runs)
		})
		b.Run(name+"one-tenant", func(b *testing.B) {
			var runs []measurement
			i := 0
			for b.Loop() {
				i++ // alternate: each run changes the limit the last one pushed
				runs = append(runs, s.run(b, cfg, repo, s.snapshots[i%2], true))
			}
			reportSync(b, runs)
		})
	}
}

// reportSync reports the largest peak RSS against the goal and the mean wall
// and CPU time.
func reportSync(b *testing.B, runs []measurement) {
	var wall, cpu time.Duration
	var rss int64
	for _, r := range runs {
		wall += r.Wall
		cpu += r.User + r.Sys
		rss = max(rss, r.MaxRSSKiB)
	}
	k := float64(len(runs))
	rssMiB := float64(rss) / 1024
	b.ReportMetric(rssMiB, "peak-RSS-MiB")
	b.ReportMetric(rssMiB/goalSyncRSSMiB, "RSS-vs-goal")
	b.ReportMetric(wall.Seconds()/k, "wall-s")
	b.ReportMetric(cpu.Seconds()/k, "cpu-s")
}
