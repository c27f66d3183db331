package gitsync

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/waldur/waldur-gitops/render"
)

// objects writes Git objects into a store, remembering the ones it added, so
// that a push sends exactly those and nothing the server already has.
type objects struct {
	s     storer.EncodedObjectStorer
	added []plumbing.Hash
	// remote holds objects the server has that the store lacks (the blobs
	// of the shard branches, fetched without them): not sent again.
	remote map[plumbing.Hash]bool
}

// put stores obj unless the store (or the server, remote) has it already.
func (o *objects) put(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if o.s.HasEncodedObject(h) == nil || o.remote[h] {
		return h, nil
	}
	if _, err := o.s.SetEncodedObject(obj); err != nil {
		return h, err
	}
	o.added = append(o.added, h)
	return h, nil
}

// blob stores data as a blob. known is the hash the same bytes had in the tree
// read from the repository, if any: the blob is then already stored and is not
// hashed again.
func (o *objects) blob(data []byte, known plumbing.Hash) (plumbing.Hash, error) {
	if !known.IsZero() {
		return known, nil
	}
	// The rendered bytes are stored as they are, not copied: nothing
	// changes them once rendered.
	return o.put(newBlob(data))
}

// tree stores a tree object with entries, which it sorts in Git's order.
func (o *objects) tree(entries []object.TreeEntry) (plumbing.Hash, error) {
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(sortName(a), sortName(b)) })
	obj := o.s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return o.put(obj)
}

// sortName is the name Git sorts a tree entry by: directories as if they ended in a slash.
func sortName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// dirNode is one directory of a tree being built.
type dirNode struct {
	files map[string]plumbing.Hash
	dirs  map[string]*dirNode
}

func newDirNode() *dirNode {
	return &dirNode{files: map[string]plumbing.Hash{}, dirs: map[string]*dirNode{}}
}

// buildTree stores the blobs and trees of t and returns the hash of its root
// tree. known maps paths of the tree read from the repository to their blob
// hashes; a file whose bytes are unchanged reuses its hash.
func (o *objects) buildTree(t render.Tree, prev render.Tree, known map[string]plumbing.Hash) (plumbing.Hash, error) {
	root := newDirNode()
	for _, p := range slices.Sorted(maps.Keys(t)) {
		if err := checkPath(p); err != nil {
			return plumbing.ZeroHash, err
		}
		var reuse plumbing.Hash
		if h, ok := known[p]; ok && bytes.Equal(prev[p], t[p]) {
			reuse = h
		}
		h, err := o.blob(t[p], reuse)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		dir, name := path.Split(p)
		n := root
		for _, part := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
			if part == "" {
				continue
			}
			child, ok := n.dirs[part]
			if !ok {
				if _, clash := n.files[part]; clash {
					return plumbing.ZeroHash, fmt.Errorf("path %q is both a file and a directory", strings.TrimSuffix(dir, "/"))
				}
				child = newDirNode()
				n.dirs[part] = child
			}
			n = child
		}
		if _, clash := n.dirs[name]; clash {
			return plumbing.ZeroHash, fmt.Errorf("path %q is both a file and a directory", p)
		}
		n.files[name] = h
	}
	return o.writeDir(root)
}

func (o *objects) writeDir(n *dirNode) (plumbing.Hash, error) {
	entries := make([]object.TreeEntry, 0, len(n.files)+len(n.dirs))
	for name, h := range n.files {
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
	}
	for name, d := range n.dirs {
		h, err := o.writeDir(d)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	return o.tree(entries)
}

// splice returns the root tree that is root with the tree at dir (slash
// separated, "" for the root itself) replaced by sub. Trees outside dir are
// reused as they are; root may be zero for an empty repository.
func (o *objects) splice(root plumbing.Hash, dir string, sub plumbing.Hash) (plumbing.Hash, error) {
	if dir == "" {
		return sub, nil
	}
	first, rest, _ := strings.Cut(dir, "/")
	var entries []object.TreeEntry
	var child plumbing.Hash
	if !root.IsZero() {
		t, err := object.GetTree(o.s, root)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", root, err)
		}
		for _, e := range t.Entries {
			if e.Name == first {
				if e.Mode == filemode.Dir {
					child = e.Hash
				}
				continue
			}
			entries = append(entries, e)
		}
	}
	h, err := o.splice(child, rest, sub)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries = append(entries, object.TreeEntry{Name: first, Mode: filemode.Dir, Hash: h})
	return o.tree(entries)
}

// subtree finds the tree at dir below root: zero, with no error, when there is
// nothing at dir.
func subtree(s storer.EncodedObjectStorer, root plumbing.Hash, dir string) (plumbing.Hash, error) {
	h := root
	for part := range strings.SplitSeq(dir, "/") {
		if part == "" || h.IsZero() {
			continue
		}
		t, err := object.GetTree(s, h)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", h, err)
		}
		h = plumbing.ZeroHash
		for _, e := range t.Entries {
			if e.Name != part {
				continue
			}
			if e.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is a file in the repository, not a directory", dir)
			}
			h = e.Hash
		}
	}
	return h, nil
}

// readTree reads every file below the tree h into a render.Tree, with the
// blob hash of each path. exact is false when the tree holds entries a
// render.Tree cannot express (executable files, symbolic links, submodules),
// so that writing the same files back would change it.
func readTree(s storer.EncodedObjectStorer, h plumbing.Hash) (files render.Tree, hashes map[string]plumbing.Hash, exact bool, err error) {
	files, hashes, exact = render.Tree{}, map[string]plumbing.Hash{}, true
	if h.IsZero() {
		return files, hashes, exact, nil
	}
	var walk func(h plumbing.Hash, prefix string) error
	walk = func(h plumbing.Hash, prefix string) error {
		t, err := object.GetTree(s, h)
		if err != nil {
			return fmt.Errorf("read tree %s: %w", prefix, err)
		}
		for _, e := range t.Entries {
			p := prefix + e.Name
			switch e.Mode {
			case filemode.Dir:
				if err := walk(e.Hash, p+"/"); err != nil {
					return err
				}
			case filemode.Submodule:
				// Not ours to read; replacing the directory drops it.
				exact = false
			default:
				if e.Mode != filemode.Regular {
					exact = false
				}
				obj, err := s.EncodedObject(plumbing.BlobObject, e.Hash)
				if err != nil {
					return fmt.Errorf("read %s: %w", p, err)
				}
				b, ok := obj.(*blob)
				if !ok {
					if b, err = readBlob(obj); err != nil {
						return fmt.Errorf("read %s: %w", p, err)
					}
				}
				// Shared with the store: neither ever changes it.
				files[p], hashes[p] = b.data, e.Hash
			}
		}
		return nil
	}
	if err := walk(h, ""); err != nil {
		return nil, nil, false, err
	}
	return files, hashes, exact, nil
}

// sameTree reports whether a and b hold the same paths with the same bytes.
func sameTree(a, b render.Tree) bool {
	if len(a) != len(b) {
		return false
	}
	for p, x := range a {
		y, ok := b[p]
		if !ok || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

// checkPath refuses paths that Git or a checkout would treat specially.
func checkPath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.HasPrefix(p, "../") || p == ".." {
		return fmt.Errorf("refusing path %q in the rendered tree", p)
	}
	for part := range strings.SplitSeq(p, "/") {
		if part == "." || part == ".." || strings.EqualFold(part, ".git") || strings.ContainsRune(part, 0) {
			return fmt.Errorf("refusing path %q in the rendered tree", p)
		}
	}
	return nil
}
