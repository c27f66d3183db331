package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

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
	_, states, err := r.ReadStates(ctx, name)
	return states[name], err
}

// ReadStates is ReadState of several states at once, with where the branch
// is ("" when it or the repository is empty): one look at the references
// the server advertises and one pack holding every state that exists, so
// that a fresh run learns all it kept in two round trips whatever it asks.
// A state that does not exist is State{}.
func (r *Repo) ReadStates(ctx context.Context, names ...string) (tip string, states map[string]State, err error) {
	for _, n := range names {
		if !stateName.MatchString(n) {
			return "", nil, fmt.Errorf("gitsync: state name %q is not valid", n)
		}
	}
	op := "read state " + strings.Join(names, ", ")
	err = r.bounded(ctx, "fetch", func(ctx context.Context) error {
		var err error
		tip, states, err = r.readStates(ctx, names)
		return r.wrap(op, err)
	})
	if err != nil {
		return "", nil, err // nothing half read
	}
	return tip, states, nil
}

func (r *Repo) readStates(ctx context.Context, names []string) (string, map[string]State, error) {
	states := make(map[string]State, len(names))
	sess, err := r.client.NewUploadPackSession(r.ep, r.opts.Auth)
	if err != nil {
		return "", states, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return "", states, nil
	}
	if err != nil {
		return "", states, err
	}
	branch, err := advertised(ar, r.branch)
	if err != nil {
		return "", states, err
	}
	tips := map[string]plumbing.Hash{}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	for _, n := range names {
		h, err := advertised(ar, plumbing.ReferenceName(StateRef(n)))
		if err != nil {
			return "", states, err
		}
		if !h.IsZero() {
			tips[n] = h
			if !slices.Contains(req.Wants, h) {
				req.Wants = append(req.Wants, h)
			}
		}
	}
	if len(req.Wants) == 0 {
		return hashOrEmpty(branch), states, nil
	}
	shallow(ar, req)
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return "", states, err
	}
	defer resp.Close()
	s := newStore()
	body := io.LimitReader(demux(req.Capabilities, resp), int64(len(req.Wants))*(MaxStateSize+1<<20))
	if err := packfile.UpdateObjectStorage(s, body); err != nil {
		return "", states, err
	}
	for n, h := range tips {
		data, err := stateFile(s, h, n)
		if err != nil {
			return "", states, err
		}
		states[n] = State{Data: data, Commit: h.String()}
	}
	return hashOrEmpty(branch), states, nil
}

// hashOrEmpty is h as text, "" when zero.
func hashOrEmpty(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
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
