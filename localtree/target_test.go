//go:build unix

package localtree

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/render"
)

var owned = render.Tree{render.MarkerFile: []byte("m"), "o/c/t/ns.yaml": []byte("x")}

// Paths whose replacement would be a disaster, and things that are not
// directories, are refused by Read (before walking anything) and by Write,
// with an error naming the path; nothing is changed.
func TestRefusedTargets(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, base string) string // returns the --out path
		want    string
	}{
		{"filesystem root", func(*testing.T, string) string { return "/" }, "it is the filesystem root: refusing to use it as the output directory"},
		{"link to the root", func(t *testing.T, base string) string {
			p := filepath.Join(base, "root")
			if err := os.Symlink("/", p); err != nil {
				t.Fatal(err)
			}
			return p
		}, "it is the filesystem root"},
		{"current directory", func(t *testing.T, base string) string {
			mustWrite(t, base, owned)
			t.Chdir(base)
			return "."
		}, "it is the current directory or a directory above it"},
		{"above the current directory", func(t *testing.T, base string) string {
			sub := filepath.Join(base, "a", "b")
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(base, render.MarkerFile), []byte("m"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(sub)
			return "../.."
		}, "it is the current directory or a directory above it"},
		{"home directory", func(t *testing.T, base string) string {
			home := filepath.Join(base, "home", "provider")
			mustWrite(t, home, owned) // even one that holds the marker
			t.Setenv("HOME", home)
			return home
		}, "it is the home directory or a directory above it"},
		{"above the home directory", func(t *testing.T, base string) string {
			home := filepath.Join(base, "home", "provider")
			if err := os.MkdirAll(home, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("HOME", home)
			return filepath.Join(base, "home")
		}, "it is the home directory or a directory above it"},
		{"regular file", func(t *testing.T, base string) string {
			p := filepath.Join(base, "out")
			if err := os.WriteFile(p, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, "it is a regular file, not a directory: refusing to replace it"},
		{"fifo", func(t *testing.T, base string) string {
			p := filepath.Join(base, "out")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, "it is a FIFO (named pipe), not a directory: refusing to replace it"},
		{"link to a file", func(t *testing.T, base string) string {
			if err := os.WriteFile(filepath.Join(base, "f"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(base, "out")
			if err := os.Symlink("f", p); err != nil {
				t.Fatal(err)
			}
			return p
		}, "which is a regular file, not a directory: refusing to replace it"},
		{"dangling link", func(t *testing.T, base string) string {
			p := filepath.Join(base, "out")
			if err := os.Symlink("nowhere", p); err != nil {
				t.Fatal(err)
			}
			return p
		}, "symbolic link whose target cannot be resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			p := tt.prepare(t, base)
			before := snapshotDir(t, base)
			start := time.Now()
			_, rerr := Read(p)
			werr := Write(p, owned)
			for name, err := range map[string]error{"Read": rerr, "Write": werr} {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "write tree "+p+": ") {
					t.Errorf("%s(%s) = %v, want an error naming the path and containing %q", name, p, err, tt.want)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusing took %s: the tree was walked", d)
			}
			if after := snapshotDir(t, base); after != before {
				t.Errorf("a refused write changed %s:\nbefore %s\nafter  %s", base, before, after)
			}
		})
	}
}

// A symbolic link to a tree this tool wrote is written through: the
// directory it leads to gets the new tree, the link stays a link.
func TestWriteThroughLink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real", "out")
	mustWrite(t, real, owned)
	link := filepath.Join(base, "out")
	if err := os.Symlink(filepath.Join("real", "out"), link); err != nil {
		t.Fatal(err)
	}
	got, err := Read(link)
	if err != nil || len(got) != len(owned) {
		t.Fatalf("Read(link) = %d files, %v; want the %d files of the target", len(got), err, len(owned))
	}
	next := render.Tree{render.MarkerFile: []byte("m"), "o/c/u/ns.yaml": []byte("y")}
	if err := Write(link, next); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode().Type() != os.ModeSymlink {
		t.Fatalf("the link was replaced: %v, %v", st, err)
	}
	got, err = Read(real)
	if err != nil || string(got["o/c/u/ns.yaml"]) != "y" || got["o/c/t/ns.yaml"] != nil {
		t.Errorf("target holds %v, %v", got, err)
	}
	if es, _ := os.ReadDir(filepath.Join(base, "real")); len(es) != 1 {
		t.Errorf("temporary directories left beside the target: %v", es)
	}
}

func mustWrite(t *testing.T, dir string, tree render.Tree) {
	t.Helper()
	if err := Write(dir, tree); err != nil {
		t.Fatal(err)
	}
}

// snapshotDir describes every entry below dir: name, type, size.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
