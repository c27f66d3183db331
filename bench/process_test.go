//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
)

// measureEnv, when set, turns the test binary into a measuring runner: it runs
// its arguments as a command, waits for it and writes a measurement as JSON to
// the file the variable names.
//
// The runner exists because of how Linux accounts ru_maxrss: a child started
// with vfork (as os/exec does) shares its parent's address space until it
// execs, and exec records that address space's high-water mark as the child's
// maxrss. A child of this benchmark process, which has just rendered 10,000
// tenants in memory, would therefore report the benchmark's own peak. The
// runner is a fresh process of a few MiB, so the command it starts reports its
// own peak only.
const measureEnv = "WALDUR_GITOPS_BENCH_MEASURE"

// measurement is what the runner reports about one command.
type measurement struct {
	Wall      time.Duration `json:"wall"`
	User      time.Duration `json:"user"`
	Sys       time.Duration `json:"sys"`
	MaxRSSKiB int64         `json:"maxrss_kib"`
	ExitCode  int           `json:"exit_code"`
}

// runMeasured runs argv with this process's stdout and stderr and writes its
// measurement to out. It returns the command's exit code.
func runMeasured(out string, argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "measure: no command")
		return 127
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	for i, kv := range cmd.Env {
		if len(kv) > len(measureEnv) && kv[:len(measureEnv)+1] == measureEnv+"=" {
			cmd.Env = append(cmd.Env[:i], cmd.Env[i+1:]...)
			break
		}
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		return 127
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	m := measurement{
		Wall:      wall,
		User:      time.Duration(ru.Utime.Nano()),
		Sys:       time.Duration(ru.Stime.Nano()),
		MaxRSSKiB: ru.Maxrss, // KiB on Linux
		ExitCode:  cmd.ProcessState.ExitCode(),
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		return 127
	}
	return m.ExitCode
}

// cliRun is one measured run of the CLI.
type cliRun struct {
	measurement
	// Render is the duration the CLI logs for render.Render; 0 when not logged.
	Render time.Duration
}

// cliBench holds the built binary and the inputs of BenchmarkCLIRender.
type cliBench struct {
	self, bin, config, snapshot, dir string
}

// run renders the snapshot into out with the CLI, through the runner.
func (c *cliBench) run(b *testing.B, out string) cliRun {
	b.Helper()
	mfile := filepath.Join(c.dir, "measurement.json")
	os.Remove(mfile) // never read a previous run's
	cmd := exec.Command(c.self, c.bin, "render", "--config", c.config, "--snapshot", c.snapshot, "--out", out, "--log-level", "info")
	cmd.Env = append(os.Environ(), measureEnv+"="+mfile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // stdout (one line per tenant) goes to /dev/null
	err := cmd.Run()
	raw, rerr := os.ReadFile(mfile)
	if err != nil || rerr != nil {
		b.Fatalf("waldur-gitops render: %v %v\n%s", err, rerr, tail(stderr.Bytes(), 2000))
	}
	var r cliRun
	if err := json.Unmarshal(raw, &r.measurement); err != nil {
		b.Fatal(err)
	}
	// The CLI logs JSON lines to a non-terminal; pick the render duration,
	// written as nanoseconds or as a Go duration string.
	sc := bufio.NewScanner(&stderr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg      string          `json:"msg"`
			Duration json.RawMessage `json:"duration"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "rendered" {
			continue
		}
		var ns int64
		var text string
		if json.Unmarshal(line.Duration, &ns) == nil {
			r.Render = time.Duration(ns)
		} else if json.Unmarshal(line.Duration, &text) == nil {
			r.Render, _ = time.ParseDuration(text)
		}
	}
	return r
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// BenchmarkCLIRender runs the real binary, `waldur-gitops render --config C
// --snapshot S --out DIR`, on a 10,000-tenant snapshot and reports its wall
// time and peak RSS against the goals (≤ 3 s, ≤ 500 MiB): "fresh" writes into
// a new directory, "rerender" replaces the tree of the previous run (read back,
// compared, swapped), which is what a periodic run does. Both run once per
// file system of outDirs; runs on ext4 are spaced as described at ext4Quiet.
func BenchmarkCLIRender(b *testing.B) {
	const n = 10000
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build the CLI with:", err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	c := &cliBench{
		self:     self,
		bin:      filepath.Join(dir, "waldur-gitops"),
		config:   filepath.Join(dir, "config.yaml"),
		snapshot: filepath.Join(dir, "snapshot.json"),
		dir:      dir,
	}
	build := exec.Command(gobin, "build", "-o", c.bin, "github.com/waldur/waldur-gitops/cmd/waldur-gitops")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	opts := synth.Options{Tenants: n, Seed: seed}
	if err := os.WriteFile(c.config, synth.ConfigYAML(opts), 0o644); err != nil {
		b.Fatal(err)
	}
	var snap bytes.Buffer
	if err := waldur.WriteSnapshot(&snap, synth.Snapshot(opts)); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(c.snapshot, snap.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	snapMiB := mib(uint64(snap.Len()))
	snap = bytes.Buffer{}

	for _, od := range outDirs(b) {
		b.Run(strconv.Itoa(n)+"/fresh/"+od.fs, func(b *testing.B) {
			var runs []cliRun
			i := 0
			settle(od.fs)
			for b.Loop() {
				out := filepath.Join(od.root, "fresh"+strconv.Itoa(i))
				i++
				runs = append(runs, c.run(b, out))
				b.StopTimer()
				settle(od.fs) // the tree stays until TestMain ends: no deletes here
				b.StartTimer()
			}
			reportCLI(b, runs, snapMiB)
		})
		b.Run(strconv.Itoa(n)+"/rerender/"+od.fs, func(b *testing.B) {
			out := filepath.Join(od.root, "steady")
			c.run(b, out) // the tree of the previous run
			var runs []cliRun
			settle(od.fs)
			for b.Loop() {
				runs = append(runs, c.run(b, out))
				b.StopTimer()
				deletedTree(od.fs) // the CLI removed the previous tree
				settle(od.fs)
				b.StartTimer()
			}
			reportCLI(b, runs, snapMiB)
		})
	}
}

// reportCLI reports the mean wall, CPU and render time, the largest peak RSS,
// and both against the goals.
func reportCLI(b *testing.B, runs []cliRun, snapMiB float64) {
	var wall, cpu, rend time.Duration
	var rss int64
	for _, r := range runs {
		if r.ExitCode != 0 {
			b.Fatalf("waldur-gitops render exited %d", r.ExitCode)
		}
		wall += r.Wall
		cpu += r.User + r.Sys
		rend += r.Render
		rss = max(rss, r.MaxRSSKiB)
	}
	k := float64(len(runs))
	wallS := wall.Seconds() / k
	rssMiB := float64(rss) / 1024
	b.ReportMetric(wallS, "wall-s")
	b.ReportMetric(rssMiB, "peak-RSS-MiB")
	b.ReportMetric(cpu.Seconds()/k, "cpu-s")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu/wall")
	if rend > 0 {
		b.ReportMetric(rend.Seconds()/k, "render-s")
		b.ReportMetric(rend.Seconds()/wall.Seconds(), "render-share")
	}
	b.ReportMetric(wallS/goalWallSeconds, "wall-vs-goal")
	b.ReportMetric(rssMiB/goalRSSMiB, "RSS-vs-goal")
	b.ReportMetric(snapMiB, "snapshot-MiB")
}
