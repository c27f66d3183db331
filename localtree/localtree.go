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

	"github.com/waldur/waldur-gitops/internal/atomicfile"
	"github.com/waldur/waldur-gitops/render"
)

// Read loads every regular file below dir. A missing dir is an empty tree. It
// refuses, before walking anything, a dir that Write would refuse to replace
// (see Target), so that a mistyped --out never walks a whole file system.
func Read(dir string) (render.Tree, error) {
	dir, err := Target(dir)
	if err != nil {
		return nil, err
	}
	if err := checkOwned(dir); err != nil {
		return nil, err
	}
	t := render.Tree{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
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
// --out never deletes unrelated files, and so is every path Target refuses.
// A symbolic link is written through: the directory it leads to is replaced
// and the link stays.
func Write(dir string, t render.Tree) error {
	dir, err := Target(dir)
	if err != nil {
		return err
	}
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
	if _, err := os.Lstat(dir); err == nil {
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

// Target returns the directory that Read reads and Write replaces for dir:
// dir made absolute, or, when dir is a symbolic link, the directory it leads
// to. It refuses, with an error naming dir:
//   - something that is not a directory (a file, a device, a FIFO, a link to
//     one, or a link whose target does not exist): replacing it by a rename
//     would destroy it;
//   - the filesystem root, the current directory and every directory above
//     it, and the home directory and every directory above it: replacing
//     them would take the ground from under the process or the user, marker
//     file or not.
//
// Paths are compared after resolving symbolic links, so a link to / or to
// the home directory is refused too.
func Target(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("write tree: no output directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("write tree %s: %w", dir, err)
	}
	target := abs
	st, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		target = resolvePrefix(abs)
	case err != nil:
		return "", fmt.Errorf("write tree %s: %w", dir, err)
	case st.Mode()&fs.ModeSymlink != 0:
		if target, err = filepath.EvalSymlinks(abs); err != nil {
			return "", fmt.Errorf("write tree %s: it is a symbolic link whose target cannot be resolved (%w): refusing to write through it", dir, err)
		}
		if st, err = os.Stat(target); err != nil {
			return "", fmt.Errorf("write tree %s: %w", dir, err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("write tree %s: it is a symbolic link to %s, which is %s, not a directory: refusing to replace it", dir, target, atomicfile.Describe(st.Mode()))
		}
	case !st.IsDir():
		return "", fmt.Errorf("write tree %s: it is %s, not a directory: refusing to replace it", dir, atomicfile.Describe(st.Mode()))
	default:
		target = resolvePrefix(abs)
	}
	if why := protected(target); why != "" {
		return "", fmt.Errorf("write tree %s: it is %s: refusing to use it as the output directory (choose a directory of its own)", dir, why)
	}
	return target, nil
}

// protected says why replacing dir (absolute, links resolved) would be
// catastrophic, or "" when it would not.
func protected(dir string) string {
	if filepath.Dir(dir) == dir {
		return "the filesystem root"
	}
	if wd, err := os.Getwd(); err == nil && contains(dir, resolvePrefix(wd)) {
		return "the current directory or a directory above it"
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" && contains(dir, resolvePrefix(home)) {
		return "the home directory or a directory above it"
	}
	return ""
}

// contains reports whether p is dir or below it.
func contains(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolvePrefix resolves the symbolic links in the longest part of the
// absolute path p that exists, keeping the rest as it is.
func resolvePrefix(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(cur) == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
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
