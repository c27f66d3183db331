package localtree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/render"
)

func TestWriteReplacesAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	first := render.Tree{render.MarkerFile: []byte("m"), "a/b/c/one.yaml": []byte("1"), "a/b/c/two.yaml": []byte("2")}
	if err := Write(dir, first); err != nil {
		t.Fatal(err)
	}
	second := render.Tree{render.MarkerFile: []byte("m"), "a/b/c/one.yaml": []byte("1b")}
	if err := Write(dir, second); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got["a/b/c/one.yaml"]) != "1b" {
		t.Errorf("after replace: %v", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("temporary directories left behind: %v", entries)
	}
}

func TestWriteRefusals(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(dir string)
		tree    render.Tree
		want    string
	}{
		{"foreign directory", func(dir string) { os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644) },
			render.Tree{render.MarkerFile: nil}, "was not written by waldur-gitops"},
		{"path escaping the tree", func(string) {}, render.Tree{"../escape.yaml": []byte("x")}, `refusing path "../escape.yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.prepare(dir)
			before, _ := Read(dir)
			err := Write(dir, tt.tree)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			after, _ := Read(dir)
			if len(after) != len(before) {
				t.Errorf("refused write changed the directory: %v → %v", before, after)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.yaml")); err == nil {
				t.Error("a file was written outside the tree")
			}
		})
	}
}

func TestReadMissingDirectory(t *testing.T) {
	got, err := Read(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(got) != 0 {
		t.Errorf("Read(missing) = %v, %v", got, err)
	}
}
