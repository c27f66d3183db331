// Package atomicfile replaces one file atomically, and only a file: the new
// contents are written to a temporary file beside the target, flushed, and
// renamed over it, so a reader sees the old file or the new one, never half
// of one.
//
// A rename replaces whatever the name points at, so the target is checked
// first: a regular file or a missing name is replaced; a symbolic link is
// followed (through every link in a chain) and its final target, which must
// be a regular file, is replaced, the link itself staying as it is; anything
// else — a directory, a device such as /dev/null, a FIFO, a socket, a link
// whose target does not exist — is refused with an error naming the path.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is matched by the refusal to replace something that is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// Check reports whether Write could replace path, without writing anything:
// nil for a regular file, a link to one, or a name that does not exist yet
// (in a directory that does), and the error Write would refuse with otherwise.
func Check(path string) error {
	target, _, err := resolve(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("write %s: %s is not a directory", path, dir)
	}
	return nil
}

// Write replaces the file at path with data, atomically (see the package
// documentation for what path may be). A file that exists keeps its
// permission bits; a new one is created readable and writable by its owner
// only. The error names path.
func Write(path string, data []byte) error {
	target, perm, err := resolve(path)
	if err != nil {
		return err
	}
	fail := func(err error) error { return fmt.Errorf("write %s: %w", path, err) }
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-")
	if err != nil {
		return fail(err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone already after a successful rename
	if perm != 0 {
		if err := f.Chmod(perm); err != nil {
			f.Close()
			return fail(err)
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	// Look again right before the rename: what was a file when the write
	// began must not have become something else in the meantime.
	again, _, err := resolve(path)
	if err != nil {
		return err
	}
	if again != target {
		return fail(fmt.Errorf("the target changed from %s to %s while writing", target, again))
	}
	if err := os.Rename(tmp, target); err != nil {
		return fail(err)
	}
	return nil
}

// resolve returns the file a write to path replaces and, when it exists, its
// permission bits (0 when it does not exist yet).
func resolve(path string) (target string, perm fs.FileMode, err error) {
	if path == "" {
		return "", 0, errors.New("write: no file name given")
	}
	path = filepath.Clean(path)
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("write %s: %w", path, err)
	}
	target = path
	if st.Mode()&fs.ModeSymlink != 0 {
		target, err = filepath.EvalSymlinks(path)
		if err != nil {
			return "", 0, fmt.Errorf("write %s: it is a symbolic link whose target cannot be resolved (%w): refusing to write through it", path, err)
		}
		if st, err = os.Lstat(target); err != nil {
			return "", 0, fmt.Errorf("write %s: %w", path, err)
		}
	}
	if !st.Mode().IsRegular() {
		what := Describe(st.Mode())
		if target != path {
			what = "a symbolic link to " + target + ", which is " + what
		}
		return "", 0, &notRegular{path: path, what: what}
	}
	return target, st.Mode().Perm(), nil
}

// notRegular is the refusal to replace what is not a regular file.
type notRegular struct{ path, what string }

func (e *notRegular) Error() string {
	return fmt.Sprintf("write %s: it is %s, not a regular file: refusing to replace it", e.path, e.what)
}

// Is makes the refusal match ErrNotRegular.
func (e *notRegular) Is(target error) bool { return target == ErrNotRegular }

// Describe names the kind of file a mode is, with an article: "a directory",
// "a character device", "a FIFO (named pipe)".
func Describe(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file (" + m.Type().String() + ")"
}
