package gitsync

// Benchmarks of the Git stage at 10,000 tenants against a local bare
// repository, with the git CLI doing the equivalent work as the reference:
//
//	go test ./gitsync -run '^$' -bench . -benchtime 3x -timeout 30m
//
// Results and goals are in BENCHMARKS.md. The benchmarks report, besides ns/op:
// render-s (rendering the synthetic state), git-s (fetch, read, build, commit
// and push), files (in the owned directory) and pushed-objects; the process
// benchmarks report the peak RSS of a whole sync run in a fresh process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/templates"
	"github.com/waldur/waldur-gitops/waldur"
)

const (
	benchSeed    = 20261121
	benchTenants = 10000
	// childEnv, when set, makes the test binary run one sync and report on it
	// instead of running tests: see TestMain and runChild.
	childEnv = "WALDUR_GITOPS_GITSYNC_BENCH_CHILD"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

// benchEnv is the synthetic site: one offering of every backend type,
// 10,000 resources in all.
type benchEnv struct {
	cfg   *config.Loaded
	tpls  map[string][]*templates.Template
	state *waldur.State
}

func newBenchEnv(tb testing.TB, n int) *benchEnv {
	tb.Helper()
	e, err := makeBenchEnv(n)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func makeBenchEnv(n int) (*benchEnv, error) {
	opts := synth.Options{Tenants: n, Seed: benchSeed, BackendTypes: config.BackendTypes}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		return nil, err
	}
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		return nil, err
	}
	return &benchEnv{cfg: cfg, tpls: tpls, state: synth.Generate(opts)}, nil
}

// setLimit changes one resource's CPU limit, so that exactly one tenant
// directory changes.
func (e *benchEnv) setLimit(v int) {
	for i := range e.state.Offerings {
		for j := range e.state.Offerings[i].Resources {
			r := &e.state.Offerings[i].Resources[j]
			if r.State == waldur.ResourceOK && r.Limits != nil && !r.Paused && !r.Downscaled {
				r.Limits["cpu"] = waldur.Amount(strconv.Itoa(v))
				return
			}
		}
	}
}

// timings adds up the time spent in each Writer call.
type timedWriter struct {
	Writer
	git time.Duration
}

func (w *timedWriter) time(f func() error) error {
	t := time.Now()
	err := f()
	w.git += time.Since(t)
	return err
}
func (w *timedWriter) Fetch(ctx context.Context) error {
	return w.time(func() error { return w.Writer.Fetch(ctx) })
}
func (w *timedWriter) Current(ctx context.Context) (render.Tree, error) {
	var t render.Tree
	err := w.time(func() (err error) { t, err = w.Writer.Current(ctx); return err })
	return t, err
}
func (w *timedWriter) Commit(ctx context.Context, tree render.Tree, msg string) (string, error) {
	var h string
	err := w.time(func() (err error) { h, err = w.Writer.Commit(ctx, tree, msg); return err })
	return h, err
}
func (w *timedWriter) Push(ctx context.Context) error {
	return w.time(func() error { return w.Writer.Push(ctx) })
}

// syncStats describes one sync.
type syncStats struct {
	Render, Git, Total time.Duration
	Files, Objects     int
	Commit             string
	Changes            changeset.Set
}

// sync renders the state and syncs it to the bare repository at dir the way
// the sync command does: plan with the deletion guard, commit, push.
func (e *benchEnv) sync(ctx context.Context, dir string) (syncStats, error) {
	var st syncStats
	start := time.Now()
	repo, err := Open(Options{URL: dir, Branch: "main", Path: "waldur", AuthorName: "bench", AuthorEmail: "bench@example.org"})
	if err != nil {
		return st, err
	}
	// As the sync command does: fetch while rendering.
	var objects int
	w := &timedWriter{Writer: &countingWriter{Repo: repo, n: &objects}}
	fetching, wait := Prefetch(ctx, w)
	defer wait()
	res, err := render.New(e.cfg.Config, e.tpls).Render(e.state)
	if err != nil {
		return st, err
	}
	st.Render = time.Since(start)
	plan := func(cur render.Tree) (render.Tree, string, error) {
		next := res.Tree(cur)
		cs := res.Compare(cur, next)
		if err := guard.Check(guard.Tenants, guard.TenantRemovals(guard.Tenants, cs, nil, nil), guard.TenantsInPlace(cs, nil), guard.DefaultOptions()); err != nil {
			return nil, "", err
		}
		st.Files, st.Changes = len(next), cs
		return next, Message(cs), nil
	}
	r, err := Sync(ctx, fetching, plan, 3)
	st.Git, st.Total, st.Commit, st.Objects = w.git, time.Since(start), r.Commit, objects
	return st, err
}

// countingWriter remembers how many objects the last commit added.
type countingWriter struct {
	*Repo
	n *int
}

func (c *countingWriter) Push(ctx context.Context) error {
	*c.n = len(c.objs.added)
	return c.Repo.Push(ctx)
}

// bare makes an empty bare repository.
func bare(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "tenants.git")
	gittest.InitBare(tb, dir, "main")
	return dir
}

func report(b *testing.B, stats []syncStats) {
	var r, g time.Duration
	for _, s := range stats {
		r += s.Render
		g += s.Git
	}
	n := float64(len(stats))
	b.ReportMetric(r.Seconds()/n, "render-s")
	b.ReportMetric(g.Seconds()/n, "git-s")
	b.ReportMetric(float64(stats[len(stats)-1].Files), "files")
	b.ReportMetric(float64(stats[len(stats)-1].Objects), "pushed-objects")
}

// BenchmarkSync10k measures the whole sync minus the Waldur API: render and the
// Git stage, for the first sync into an empty repository, a no-op re-sync and a
// one-tenant change.
func BenchmarkSync10k(b *testing.B) {
	ctx := context.Background()
	e := newBenchEnv(b, benchN())
	b.Run("first/go-git", func(b *testing.B) {
		var stats []syncStats
		for b.Loop() {
			b.StopTimer()
			dir := bare(b)
			runtime.GC()
			b.StartTimer()
			s, err := e.sync(ctx, dir)
			if err != nil || s.Commit == "" {
				b.Fatalf("commit %q: %v", s.Commit, err)
			}
			stats = append(stats, s)
		}
		report(b, stats)
	})
	dir := bare(b)
	if _, err := e.sync(ctx, dir); err != nil {
		b.Fatal(err)
	}
	b.Run("noop/go-git", func(b *testing.B) {
		var stats []syncStats
		for b.Loop() {
			s, err := e.sync(ctx, dir)
			if err != nil || s.Commit != "" {
				b.Fatalf("commit %q: %v", s.Commit, err)
			}
			stats = append(stats, s)
		}
		report(b, stats)
	})
	b.Run("one-tenant/go-git", func(b *testing.B) {
		var stats []syncStats
		i := 0
		for b.Loop() {
			i++
			e.setLimit(1000 + i)
			s, err := e.sync(ctx, dir)
			if err != nil || s.Commit == "" {
				b.Fatalf("commit %q: %v", s.Commit, err)
			}
			if c := s.Changes.Counts(); c[changeset.Update] != 1 || c[changeset.Create]+c[changeset.Delete] != 0 {
				b.Fatalf("changes %v, want one update", c)
			}
			stats = append(stats, s)
		}
		changed := strings.Fields(gittest.Git(b, dir, "diff", "--name-only", "main~1", "main"))
		if len(changed) != 1 {
			b.Fatalf("the last commit changes %v", changed)
		}
		report(b, stats)
	})
}

// cliSync does with the git CLI what a sync does: a shallow clone, the owned
// directory replaced by the tree, add, commit (unless nothing changed), push.
// It returns whether it committed.
func cliSync(tb testing.TB, dir string, tree render.Tree, first bool) bool {
	tb.Helper()
	work := filepath.Join(tb.TempDir(), "work")
	if first {
		gittest.Git(tb, tb.TempDir(), "init", "--quiet", "--initial-branch=main", work)
		gittest.Git(tb, work, "remote", "add", "origin", "file://"+dir)
	} else {
		gittest.Git(tb, filepath.Dir(work), "clone", "--quiet", "--depth", "1", "--branch", "main", "file://"+dir, work)
	}
	owned := filepath.Join(work, "waldur")
	if err := os.RemoveAll(owned); err != nil {
		tb.Fatal(err)
	}
	made := map[string]bool{}
	for p, data := range tree {
		full := filepath.Join(owned, filepath.FromSlash(p))
		if d := filepath.Dir(full); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
			made[d] = true
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	gittest.Git(tb, work, "add", "--all", "waldur")
	if _, err := gittest.GitErr(work, nil, "diff", "--cached", "--quiet"); err == nil && !first {
		return false
	}
	gittest.Git(tb, work, "commit", "--quiet", "--message", "waldur: sync")
	gittest.Git(tb, work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	return true
}

// BenchmarkSync10kGitCLI is the reference: the git CLI committing the same
// trees (rendering excluded from its time).
func BenchmarkSync10kGitCLI(b *testing.B) {
	e := newBenchEnv(b, benchN())
	res, err := render.New(e.cfg.Config, e.tpls).Render(e.state)
	if err != nil {
		b.Fatal(err)
	}
	tree := res.Tree(nil)
	b.Run("first/git-cli", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := bare(b)
			b.StartTimer()
			if !cliSync(b, dir, tree, true) {
				b.Fatal("no commit")
			}
		}
		b.ReportMetric(float64(len(tree)), "files")
	})
	dir := bare(b)
	cliSync(b, dir, tree, true)
	b.Run("noop/git-cli", func(b *testing.B) {
		for b.Loop() {
			if cliSync(b, dir, tree, false) {
				b.Fatal("a commit")
			}
		}
	})
	b.Run("one-tenant/git-cli", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			e.setLimit(1000 + i)
			res, err := render.New(e.cfg.Config, e.tpls).Render(e.state)
			if err != nil {
				b.Fatal(err)
			}
			next := res.Tree(nil)
			b.StartTimer()
			if !cliSync(b, dir, next, false) {
				b.Fatal("no commit")
			}
		}
	})
}

// childResult is what a child process reports about its sync.
type childResult struct {
	Commit   string  `json:"commit"`
	Seconds  float64 `json:"seconds"`
	PeakMiB  float64 `json:"peak_mib"`
	Files    int     `json:"files"`
	Objects  int     `json:"objects"`
	ErrorMsg string  `json:"error,omitempty"`
}

// runChild runs one whole sync (generate the state, render, sync) in this
// fresh process and prints a childResult. spec is "<tenants>:<limit>:<repo>".
// Its peak RSS is the kernel's VmHWM of this process: exec gave it a new
// address space, so unlike ru_maxrss it cannot include the parent's memory.
func runChild(spec string) int {
	parts := strings.SplitN(spec, ":", 3)
	n, _ := strconv.Atoi(parts[0])
	limit, _ := strconv.Atoi(parts[1])
	out := childResult{}
	start := time.Now()
	e, err := makeBenchEnv(n)
	if err == nil {
		if limit > 0 {
			e.setLimit(limit)
		}
		var s syncStats
		s, err = e.sync(context.Background(), parts[2])
		out.Commit, out.Files, out.Objects = s.Commit, s.Files, s.Objects
	}
	if err != nil {
		out.ErrorMsg = err.Error()
	}
	out.Seconds = time.Since(start).Seconds()
	out.PeakMiB = peakRSSMiB()
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if err != nil {
		return 1
	}
	return 0
}

// peakRSSMiB reads VmHWM from /proc/self/status; 0 where there is none.
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kib) / 1024
		}
	}
	return 0
}

func child(b *testing.B, n, limit int, dir string) childResult {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d:%s", childEnv, n, limit, dir))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r childResult
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); jerr != nil || err != nil {
		b.Fatalf("child: %v %v\n%s%s", err, jerr, stdout.String(), stderr.String())
	}
	return r
}

// BenchmarkSync10kProcess runs each sync in a fresh process (the synthetic
// state generated, rendered, synced) and reports its peak RSS: what a CronJob
// pod needs as a memory limit.
func BenchmarkSync10kProcess(b *testing.B) {
	n := benchN()
	dir := bare(b)
	if r := child(b, n, 0, dir); r.Commit == "" {
		b.Fatal("the first sync made no commit")
	}
	for _, tc := range []struct {
		name   string
		limit  int
		commit bool
	}{{"first", 0, true}, {"noop", 0, false}, {"one-tenant", 1000, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var peak float64
			i := 0
			for b.Loop() {
				b.StopTimer()
				repo := dir
				if tc.name == "first" {
					repo = bare(b)
				}
				limit := tc.limit
				if limit > 0 {
					i++
					limit += i
				}
				b.StartTimer()
				r := child(b, n, limit, repo)
				if (r.Commit != "") != tc.commit {
					b.Fatalf("commit %q", r.Commit)
				}
				peak = max(peak, r.PeakMiB)
			}
			b.ReportMetric(peak, "peak-RSS-MiB")
		})
	}
}

// benchN is the number of tenants: 10,000, or $WALDUR_GITOPS_BENCH_TENANTS for
// a quick check.
func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("WALDUR_GITOPS_BENCH_TENANTS")); err == nil && n > 0 {
		return n
	}
	return benchTenants
}
