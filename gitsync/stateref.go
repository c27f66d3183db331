package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// StateRefPrefix is where waldur-gitops keeps state of its own in the GitOps
// repository: what a run that starts afresh (a CronJob with no volume)
// wants to know of the runs before it. A state ref is not a branch: Flux,
// Argo CD and people's clones do not fetch it, and deleting it costs only
// the work it saved.
const StateRefPrefix = "refs/waldur-gitops/state/"

// MaxStateSize bounds the file a state ref holds, read or written.
const MaxStateSize = 64 << 20

// stateName is what a state's name may be: it names a ref and the one file
// of its commit.
var stateName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// State is what a state ref held when it was read.
type State struct {
	// Data is the state's file; nil when the ref does not exist.
	Data []byte
	// Commit is the ref's commit, the old value WriteState replaces; ""
	// when the ref does not exist.
	Commit string
}

// StateRef is the full name of the state ref name.
func StateRef(name string) string { return StateRefPrefix + name }

// ReadState fetches the state ref name alone (no branch, no other object)
// and returns the file it holds. A ref that does not exist, or an empty
// repository, is State{}. The content is whatever anyone with push access
// wrote: the caller decides what of it to trust.
func (r *Repo) ReadState(ctx context.Context, name string) (State, error) {
	if !stateName.MatchString(name) {
		return State{}, fmt.Errorf("gitsync: state name %q is not valid", name)
	}
	var st State
	err := r.bounded(ctx, "fetch", func(ctx context.Context) error {
		var err error
		st, err = r.readState(ctx, name)
		return err
	})
	return st, err
}

func (r *Repo) readState(ctx context.Context, name string) (State, error) {
	ref := plumbing.ReferenceName(StateRef(name))
	sess, err := r.client.NewUploadPackSession(r.ep, r.opts.Auth)
	if err != nil {
		return State{}, r.wrap("read state "+name, err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return State{}, nil
	}
	if err != nil {
		return State{}, r.wrap("read state "+name, err)
	}
	tip, err := advertised(ar, ref)
	if err != nil {
		return State{}, r.wrap("read state "+name, err)
	}
	if tip.IsZero() {
		return State{}, nil
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Wants = []plumbing.Hash{tip}
	shallow(ar, req)
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return State{}, r.wrap("read state "+name, err)
	}
	defer resp.Close()
	s := newStore()
	body := io.LimitReader(demux(req.Capabilities, resp), MaxStateSize+1<<20)
	if err := packfile.UpdateObjectStorage(s, body); err != nil {
		return State{}, r.wrap("read state "+name, err)
	}
	data, err := stateFile(s, tip, name)
	if err != nil {
		return State{}, r.wrap("read state "+name, err)
	}
	return State{Data: data, Commit: tip.String()}, nil
}

// stateFile is the file name in the tree of the state commit tip.
func stateFile(s store, tip plumbing.Hash, name string) ([]byte, error) {
	c, err := object.GetCommit(s, tip)
	if err != nil {
		return nil, fmt.Errorf("the fetched pack lacks the state commit %s: %w", short(tip), err)
	}
	t, err := object.GetTree(s, c.TreeHash)
	if err != nil {
		return nil, fmt.Errorf("state commit %s: %w", short(tip), err)
	}
	e, err := t.FindEntry(name)
	if err != nil || e.Mode != filemode.Regular {
		return nil, fmt.Errorf("state commit %s holds no file %q", short(tip), name)
	}
	obj, err := s.EncodedObject(plumbing.BlobObject, e.Hash)
	if err != nil {
		return nil, fmt.Errorf("state commit %s: %w", short(tip), err)
	}
	if obj.Size() > MaxStateSize {
		return nil, fmt.Errorf("state file %q is %d bytes, over the %d-byte bound", name, obj.Size(), MaxStateSize)
	}
	b, err := readBlob(obj)
	if err != nil {
		return nil, err
	}
	return b.data, nil
}

// WriteState replaces the state ref name with a commit holding data as its
// one file, when the ref is still at old (the Commit ReadState returned;
// "": the ref must not exist yet). The commit has no parent, so that a state
// ref keeps no history for the server to store; a server that refuses to
// replace a ref by one that does not descend from it (a hook, a hosting
// rule against force pushes) gets a commit on top of old instead, with a
// warning that the ref's history grows. A ref another writer moved since
// fails with ErrRaced and is left as it is. It returns the new commit.
func (r *Repo) WriteState(ctx context.Context, name string, data []byte, old string) (string, error) {
	if !stateName.MatchString(name) {
		return "", fmt.Errorf("gitsync: state name %q is not valid", name)
	}
	if len(data) > MaxStateSize {
		return "", r.wrap("write state "+name, fmt.Errorf("%d bytes, over the %d-byte bound", len(data), MaxStateSize))
	}
	oldHash := plumbing.ZeroHash
	if old != "" {
		if !plumbing.IsHash(old) {
			return "", fmt.Errorf("gitsync: state %s: old commit %q is not a hash", name, old)
		}
		oldHash = plumbing.NewHash(old)
	}
	h, err := r.pushState(ctx, name, data, oldHash, plumbing.ZeroHash)
	if err == nil || oldHash.IsZero() || !(errors.Is(err, ErrRaced) || errors.Is(err, ErrDeclined)) {
		return h, err
	}
	// Refused: a race, or a server (or its hook) that keeps refs from going
	// back.
	if now, lerr := r.remoteRef(ctx, plumbing.ReferenceName(StateRef(name)), "read state "+name); lerr != nil || now != oldHash {
		return "", err
	}
	r.opts.Log.Warn("the server refuses to replace a state ref by a commit that does not descend from it: each state is kept in the ref's history; allow non-fast-forward pushes to "+StateRefPrefix+"* to let the server drop old states",
		"repository", r.url, "ref", StateRef(name))
	return r.pushState(ctx, name, data, oldHash, oldHash)
}

// pushState moves the state ref name from old to a new commit of data on
// parent (zero: none).
func (r *Repo) pushState(ctx context.Context, name string, data []byte, old, parent plumbing.Hash) (string, error) {
	s := newStore()
	objs := &objects{s: s}
	commit, err := r.stateCommit(objs, name, data, parent)
	if err != nil {
		return "", r.wrap("write state "+name, err)
	}
	cmd := &packp.Command{Name: plumbing.ReferenceName(StateRef(name)), Old: old, New: commit}
	err = r.bounded(ctx, "push", func(ctx context.Context) error {
		return r.sendRefsFrom(ctx, s, []*packp.Command{cmd}, objs.added, false, nil)
	})
	if err != nil {
		return "", err
	}
	return commit.String(), nil
}

// stateCommit stores the unsigned commit, on parent (zero: none), of a tree
// holding data as the file name.
func (r *Repo) stateCommit(objs *objects, name string, data []byte, parent plumbing.Hash) (plumbing.Hash, error) {
	b, err := objs.put(newBlob(data))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	root, err := objs.tree([]object.TreeEntry{{Name: name, Mode: filemode.Regular, Hash: b}})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: r.opts.Now()}
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: root,
		Message: "waldur-gitops state: " + name + "\n\nKept by waldur-gitops between runs; not a branch. Deleting it costs the work it saved.\n"}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	obj := objs.s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return objs.put(obj)
}
