// Package localtree reads a rendered tree from a local directory and replaces a
// directory with a new tree atomically: a failed write leaves the old one as it was.
package localtree

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/waldur/waldur-gitops/render"
)

// Read loads every regular file below dir. A missing dir is an empty tree.
func Read(dir string) (render.Tree, error) {
	t := render.Tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return fs.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		t[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", dir, err)
	}
	return t, nil
}

// Write replaces dir with the tree. It builds the new tree beside dir and swaps
// the two with renames, so dir holds either the old or the new tree, never a mix.
// A non-empty dir without the render marker file is refused, so that a mistyped
// --out never deletes unrelated files.
func Write(dir string, t render.Tree) error {
	dir = filepath.Clean(dir)
	if err := checkOwned(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write tree: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-")
	if err != nil {
		return fmt.Errorf("write tree: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := writeFiles(tmp, t); err != nil {
		return fmt.Errorf("write tree: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("write tree: %w", err)
	}
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("write tree: move old %s aside: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return fmt.Errorf("write tree: %w", err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("write tree: remove old tree %s: %w", old, err)
		}
	}
	return nil
}

func checkOwned(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write tree: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, render.MarkerFile)); err != nil {
		return fmt.Errorf("write tree: %s is not empty and was not written by waldur-gitops (no %s file): refusing to replace it", dir, render.MarkerFile)
	}
	return nil
}

// writeWorkers is how many files are written at once: file creation, not CPU,
// bounds a large tree, and a few writers in flight keep the disk busy.
const writeWorkers = 4

// writeFiles writes every file of t below root: the directories first, in
// order, then the files from a few goroutines.
func writeFiles(root string, t render.Tree) error {
	dirs := map[string]bool{}
	for p := range t {
		if clean := path.Clean(p); path.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("refusing path %q", p)
		}
		dirs[path.Dir(p)] = true
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	paths := make(chan string)
	errs := make(chan error, writeWorkers)
	var wg sync.WaitGroup
	for i := 0; i < writeWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first error
			for p := range paths {
				if first == nil {
					first = os.WriteFile(filepath.Join(root, filepath.FromSlash(p)), t[p], 0o644)
				}
			}
			errs <- first
		}()
	}
	for p := range t {
		paths <- p
	}
	close(paths)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
