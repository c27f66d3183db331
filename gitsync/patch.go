package gitsync

import (
	"context"
	"errors"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/waldur/waldur-gitops/render"
)

// changedHint is what a caller told the Repo about the next tree it
// commits (Changed): the tree, the fetched tip it was planned on and the
// paths where it differs from the owned directory there.
type changedHint struct {
	tree  render.Tree
	base  plumbing.Hash
	paths []string
}

// pendingFiles are the files a scoped commit changed, applied to the
// Repo's tree once its push succeeds.
type pendingFiles struct {
	tree  render.Tree
	blobs map[string]plumbing.Hash // zero hash: the file was removed
}

// Changed tells the Repo that tree, which the next Commit is given, differs
// from the owned directory at the fetched tip only at paths (added,
// changed or removed files). Commit then rewrites the Git trees on those
// paths alone and takes every other tree of the tip as it is, instead of
// hashing the whole directory again; the commit is the same. After the
// push the Repo keeps tree as its current files, so that the next run on
// the same tip reads nothing. The hint is used only for that very tree on
// that tip, and only when the tip's files are ones the Repo can write back
// unchanged; otherwise Commit builds the whole directory as always.
func (r *Repo) Changed(tree render.Tree, paths []string) {
	r.hint = &changedHint{tree: tree, base: r.tip, paths: slices.Clone(paths)}
}

// takeHint returns and forgets the hint given for tree on the current tip.
func (r *Repo) takeHint(tree render.Tree) *changedHint {
	h := r.hint
	r.hint = nil
	if h == nil || h.base != r.tip || r.tip.IsZero() || !r.curExact || r.cur == nil || !sameMap(h.tree, tree) {
		return nil
	}
	return h
}

// sameMap reports whether a and b are the same map, not only equal ones.
func sameMap(a, b render.Tree) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// commitChanged is commitTree with a hint: it patches the owned
// directory's tree at the hinted paths. ok is false when the paths cannot
// be patched in (a file where a directory is needed, or the reverse), and
// the caller builds the whole tree.
func (r *Repo) commitChanged(ctx context.Context, h *changedHint, message string) (commit string, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return "", true, err
	}
	if len(h.paths) == 0 {
		r.opts.Log.Info("the repository already holds the rendered tree: nothing to commit", "repository", r.url, "branch", r.opts.Branch, "commit", r.Tip())
		return "", true, nil
	}
	sub, err := subtree(r.store, r.root, r.dir)
	if err != nil {
		return "", true, r.wrap("commit", err)
	}
	paths := slices.Clone(h.paths)
	slices.Sort(paths)
	pending := &pendingFiles{tree: h.tree, blobs: make(map[string]plumbing.Hash, len(paths))}
	sub, err = r.objs.patch(sub, "", paths, h.tree, pending.blobs)
	if errors.Is(err, errNoPatch) {
		return "", false, nil
	}
	if err != nil {
		return "", true, r.wrap("commit", err)
	}
	root, err := r.objs.splice(r.root, r.dir, sub)
	if err != nil {
		return "", true, r.wrap("commit", err)
	}
	if root == r.root {
		r.opts.Log.Info("the repository already holds the rendered tree: nothing to commit", "repository", r.url, "branch", r.opts.Branch, "commit", r.Tip())
		return "", true, nil
	}
	c, err := r.writeCommit(r.objs, root, r.tip, message, true)
	if err != nil {
		return "", true, r.wrap("commit", err)
	}
	r.commit, r.newRoot, r.pending = c, root, pending
	return c.String(), true, nil
}

// pushed moves the Repo's current files to those of the commit just
// pushed: the tree of a scoped commit, with the blob hashes it changed;
// after a whole-tree commit they are read again when next asked for.
func (r *Repo) pushed() {
	p := r.pending
	r.pending = nil
	if p == nil || r.curBlobs == nil {
		r.cur, r.curBlobs = nil, nil
		return
	}
	for f, h := range p.blobs {
		if h.IsZero() {
			delete(r.curBlobs, f)
		} else {
			r.curBlobs[f] = h
		}
	}
	r.cur = p.tree
}

// errNoPatch: the changed paths do not fit the tree they are patched into.
var errNoPatch = errors.New("the changed paths do not fit the tree")

// patch returns the tree h (below prefix, "" or ending in a slash) with the
// files at paths (relative to the root patched, sorted) set to their bytes
// in t, or removed where t has none; it records each file's new blob hash
// (zero when removed) in blobs. A directory left empty is dropped: zero
// hash. Every tree not on a path is kept as it is.
func (o *objects) patch(h plumbing.Hash, prefix string, paths []string, t render.Tree, blobs map[string]plumbing.Hash) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if !h.IsZero() {
		tr, err := object.GetTree(o.s, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, e := range tr.Entries {
			entries[e.Name] = e
		}
	}
	for i := 0; i < len(paths); {
		name, _, isDir := strings.Cut(paths[i], "/")
		if !isDir {
			if err := o.patchFile(entries, name, prefix+name, t, blobs); err != nil {
				return plumbing.ZeroHash, err
			}
			i++
			continue
		}
		j := i
		var sub []string
		for ; j < len(paths) && strings.HasPrefix(paths[j], name+"/"); j++ {
			sub = append(sub, paths[j][len(name)+1:])
		}
		old, ok := entries[name]
		if ok && old.Mode != filemode.Dir {
			return plumbing.ZeroHash, errNoPatch
		}
		nh, err := o.patch(old.Hash, prefix+name+"/", sub, t, blobs)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if nh.IsZero() {
			delete(entries, name)
		} else {
			entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: nh}
		}
		i = j
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	list := make([]object.TreeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	return o.tree(list)
}

// patchFile sets or removes the file name (full path p) among entries.
func (o *objects) patchFile(entries map[string]object.TreeEntry, name, p string, t render.Tree, blobs map[string]plumbing.Hash) error {
	if old, ok := entries[name]; ok && old.Mode == filemode.Dir {
		return errNoPatch
	}
	data, ok := t[p]
	if !ok {
		delete(entries, name)
		blobs[p] = plumbing.ZeroHash
		return nil
	}
	if err := checkPath(p); err != nil {
		return err
	}
	if path.Base(p) != name {
		return errNoPatch
	}
	bh, err := o.blob(data, plumbing.ZeroHash)
	if err != nil {
		return err
	}
	entries[name] = object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: bh}
	blobs[p] = bh
	return nil
}
