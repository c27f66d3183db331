//go:build unix

package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatalf("mkfifo %s: %v", p, err)
	}
}

func fileType(t *testing.T, p string) fs.FileMode {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return st.Mode().Type()
}

// snapshot --out never replaces what is not a regular file: a FIFO (what
// /dev/null is to root: a special file) and a directory are refused naming
// the path, before Waldur is read, and stay as they were; a symbolic link is
// written through to its target and stays a link.
func TestSnapshotOutPaths(t *testing.T) {
	srv, cfg := serveExample(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "null")
	mkfifo(t, fifo)
	sub := filepath.Join(dir, "snapshots")
	writeFile(t, filepath.Join(sub, "keep.json"), "{}")
	for _, tc := range []struct {
		name, path, want string
		keep             fs.FileMode
	}{
		{"fifo", fifo, "it is a FIFO (named pipe), not a regular file: refusing to replace it", fs.ModeNamedPipe},
		{"directory", sub, "it is a directory, not a regular file: refusing to replace it", fs.ModeDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Requests("/api/")
			code, _, stderr := run(t, "snapshot", "--config", cfg, "--out", tc.path)
			if code != ExitOutput || !strings.Contains(stderr, tc.path+": "+tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, ExitOutput, tc.want, stderr)
			}
			if got := fileType(t, tc.path); got != tc.keep {
				t.Errorf("%s is now %v, want %v", tc.path, got, tc.keep)
			}
			if n := srv.Requests("/api/") - before; n != 0 {
				t.Errorf("Waldur was read (%d requests) before the output was refused", n)
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		target := filepath.Join(sub, "state.json")
		writeFile(t, target, "old")
		link := filepath.Join(dir, "state.json")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := run(t, "snapshot", "--config", cfg, "--out", link); code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		if got := fileType(t, link); got != fs.ModeSymlink {
			t.Errorf("the link was replaced by %v", got)
		}
		if b := mustRead(t, target); !strings.Contains(string(b), `"offerings"`) {
			t.Errorf("the link's target was not written: %.100s", b)
		}
	})
}

// The report file (config key report) is checked before the run changes
// anything: a FIFO there fails the sync with exit 5 before a push, and stays
// a FIFO. A link to a file is written through.
func TestRunReportFilePaths(t *testing.T) {
	t.Run("fifo", func(t *testing.T) {
		srv, _, url := gitRepo(t)
		cfg := withGit(t, exampleConfig, srv, url)
		rep := filepath.Join(filepath.Dir(cfg), "report.json")
		mkfifo(t, rep)
		code, _, stderr := run(t, "sync", "--config", cfg, "--snapshot", exampleSnapshot)
		if code != ExitOutput || !strings.Contains(stderr, "the run report file (report): write "+rep+": it is a FIFO (named pipe), not a regular file: refusing to replace it") {
			t.Errorf("exit %d, want %d:\n%s", code, ExitOutput, stderr)
		}
		if srv.Pushes() != 0 {
			t.Error("the run pushed although its report file cannot be written")
		}
		if got := fileType(t, rep); got != fs.ModeNamedPipe {
			t.Errorf("the FIFO is now %v", got)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		srv, _, url := gitRepo(t)
		cfg := withGit(t, exampleConfig, srv, url)
		target := filepath.Join(t.TempDir(), "last-run.json")
		writeFile(t, target, "old")
		link := filepath.Join(filepath.Dir(cfg), "report.json")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := run(t, "sync", "--config", cfg, "--snapshot", exampleSnapshot); code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		if got := fileType(t, link); got != fs.ModeSymlink {
			t.Errorf("the link was replaced by %v", got)
		}
		if r := readReport(t, mustRead(t, target)); r.Command != "sync" || r.Commit == "" {
			t.Errorf("the link's target holds no report of the sync: %+v", r)
		}
	})
}

// render --out refuses the filesystem root and the directories it must never
// replace at once, without walking them.
func TestRenderOutRefusesCatastrophicPaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct{ out, want string }{
		{"/", "write tree /: it is the filesystem root: refusing to use it as the output directory"},
		{home, "it is the home directory or a directory above it"},
		{".", "it is the current directory or a directory above it"},
		{"..", "it is the current directory or a directory above it"},
	} {
		t.Run(tc.out, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := run(t, "render", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--out", tc.out)
			if code != ExitOutput || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, ExitOutput, tc.want, stderr)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s: the tree was walked before the refusal", d)
			}
		})
	}
	if es, err := os.ReadDir(home); err != nil || len(es) != 0 {
		t.Errorf("the home directory changed: %v, %v", es, err)
	}
}
