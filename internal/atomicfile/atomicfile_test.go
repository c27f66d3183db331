//go:build unix

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// entries lists the names in dir, to see that nothing was left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatalf("mkfifo %s: %v", p, err)
	}
}

func symlink(t *testing.T, to, p string) {
	t.Helper()
	if err := os.Symlink(to, p); err != nil {
		t.Fatal(err)
	}
}

// What is not a regular file is refused, by Check and by Write, with an error
// naming the path and what it is, and is left exactly as it was: a FIFO stays
// a FIFO (the /dev/null case without touching /dev/null), a directory keeps
// its contents, a link keeps pointing where it did.
func TestRefusesWhatIsNotAFile(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string) string // returns the path to write
		want    []string
		mode    fs.FileMode // the type the path must still have
	}{
		{"fifo", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "null")
			mkfifo(t, p)
			return p
		}, []string{"is a FIFO (named pipe), not a regular file: refusing to replace it"}, fs.ModeNamedPipe},
		{"directory", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "reports")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "keep.txt"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, []string{"is a directory, not a regular file"}, fs.ModeDir},
		{"link to a fifo", func(t *testing.T, dir string) string {
			mkfifo(t, filepath.Join(dir, "pipe"))
			p := filepath.Join(dir, "out.json")
			symlink(t, "pipe", p)
			return p
		}, []string{"is a symbolic link to " + "DIR/pipe, which is a FIFO (named pipe), not a regular file"}, fs.ModeSymlink},
		{"link to a directory", func(t *testing.T, dir string) string {
			if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "out.json")
			symlink(t, "d", p)
			return p
		}, []string{"which is a directory, not a regular file"}, fs.ModeSymlink},
		{"dangling link", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "out.json")
			symlink(t, "nowhere/file.json", p)
			return p
		}, []string{"symbolic link whose target cannot be resolved", "refusing to write through it"}, fs.ModeSymlink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			p := tt.prepare(t, dir)
			before := entries(t, dir)
			for name, fn := range map[string]func() error{
				"Check": func() error { return Check(p) },
				"Write": func() error { return Write(p, []byte("{}\n")) },
			} {
				err := fn()
				if err == nil {
					t.Fatalf("%s(%s) = nil, want a refusal", name, p)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, "write "+p+": ") {
					t.Errorf("%s: error %q does not name the path", name, msg)
				}
				for _, w := range tt.want {
					if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(msg, w) {
						t.Errorf("%s: error %q lacks %q", name, msg, w)
					}
				}
				if tt.name != "dangling link" && !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s: error %q does not match ErrNotRegular", name, msg)
				}
			}
			st, err := os.Lstat(p)
			if err != nil {
				t.Fatalf("the path is gone: %v", err)
			}
			if st.Mode().Type() != tt.mode {
				t.Errorf("%s is now %v, want %v", p, st.Mode().Type(), tt.mode)
			}
			if after := entries(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Errorf("directory changed: %v → %v", before, after)
			}
		})
	}
}

// A regular file is replaced and keeps its permissions; a new one is private;
// a link (or a chain of links) is written through: its final target gets the
// new contents and every link stays a link.
func TestWrites(t *testing.T) {
	dir := t.TempDir()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t.Run("new file", func(t *testing.T) {
		p := filepath.Join(dir, "new.json")
		if err := Check(p); err != nil {
			t.Fatal(err)
		}
		if err := Write(p, []byte("1")); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if read(p) != "1" || st.Mode().Perm() != 0o600 {
			t.Errorf("contents %q, mode %v", read(p), st.Mode())
		}
	})
	t.Run("existing file keeps its mode", func(t *testing.T) {
		p := filepath.Join(dir, "old.json")
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := Write(p, []byte("new")); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if read(p) != "new" || st.Mode().Perm() != 0o640 {
			t.Errorf("contents %q, mode %v", read(p), st.Mode())
		}
	})
	t.Run("chain of links", func(t *testing.T) {
		sub := filepath.Join(dir, "shared")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		real := filepath.Join(sub, "report.json")
		if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		symlink(t, "shared/report.json", filepath.Join(dir, "hop"))
		p := filepath.Join(dir, "report.json")
		symlink(t, "hop", p)
		if err := Write(p, []byte("through")); err != nil {
			t.Fatal(err)
		}
		if read(real) != "through" {
			t.Errorf("target holds %q", read(real))
		}
		for _, l := range []string{p, filepath.Join(dir, "hop")} {
			if st, err := os.Lstat(l); err != nil || st.Mode().Type() != fs.ModeSymlink {
				t.Errorf("%s is no longer a link: %v, %v", l, st, err)
			}
		}
		if got := entries(t, sub); len(got) != 1 {
			t.Errorf("temporary files left beside the target: %v", got)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		p := filepath.Join(dir, "none", "r.json")
		for _, err := range []error{Check(p), Write(p, []byte("x"))} {
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want one naming %s", err, p)
			}
		}
	})
	t.Run("no name", func(t *testing.T) {
		if err := Write("", nil); err == nil {
			t.Error("an empty path was accepted")
		}
	})
}
