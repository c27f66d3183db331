package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/waldur/waldur-gitops/internal/hostbound"
	redactpkg "github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/render"
)

// Repo is the go-git Writer. It keeps the fetched tip and the objects of the
// run in memory; there is no clone on disk and no worktree.
type Repo struct {
	opts     Options
	url      string // safe to print
	ep       *transport.Endpoint
	client   transport.Transport
	branch   plumbing.ReferenceName
	dir      string
	store    store
	objs     *objects
	tip      plumbing.Hash
	root     plumbing.Hash // tree of tip
	cur      render.Tree   // the owned directory at tip, once read
	curBlobs map[string]plumbing.Hash
	curExact bool                     // writing cur back gives the same tree
	commit   plumbing.Hash            // made since the fetch, not pushed yet
	newRoot  plumbing.Hash            // tree of commit
	review   map[string]plumbing.Hash // review branches at the fetch, by name
	shard    shardState               // the shard branches (SetShards)
	keeps    int                      // fetches in a row that kept the store
	hint     *changedHint             // where the next commit's tree changes (Changed)
	pending  *pendingFiles            // the files of a scoped commit, until pushed
}

// Open prepares a Repo; it does no I/O.
func Open(o Options) (*Repo, error) {
	if o.Branch == "" {
		o.Branch = "main"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	r := &Repo{opts: o, url: RedactURL(o.URL), branch: plumbing.NewBranchReferenceName(o.Branch), dir: o.dir()}
	if !r.branch.IsBranch() || strings.ContainsAny(o.Branch, " ~^:?*[\\") || strings.Contains(o.Branch, "..") {
		return nil, fmt.Errorf("git.branch %q is not a valid branch name", o.Branch)
	}
	ep, err := transport.NewEndpoint(o.URL)
	if err != nil {
		return nil, r.wrap("open", err)
	}
	c, err := NewTransport(ep)
	if err != nil {
		return nil, r.wrap("open", err)
	}
	r.ep, r.client = ep, c
	return r, nil
}

// NewTransport returns the go-git client of an endpoint. Over HTTP it is a
// client of its own (not go-git's shared default) that follows a redirect
// only within the origin of git.url, as smart HTTP servers use them (a
// renamed repository, a ".git" added): go-git re-points the session to where
// /info/refs was answered, so a redirect to another host would get the
// credential, the fetch and the push. (go-git needs an *http.Transport only
// for an endpoint with TLS or proxy options, which a git.url never has.)
func NewTransport(ep *transport.Endpoint) (transport.Transport, error) {
	if ep.Protocol == "http" || ep.Protocol == "https" {
		return githttp.NewClient(hostbound.Client(nil, "git.url", hostbound.SameOrigin)), nil
	}
	return client.NewClient(ep)
}

// URL is the repository URL without credentials.
func (r *Repo) URL() string { return r.url }

// Fetch reads the branch tip, shallowly, into a new in-memory store; when
// the branch is still at the commit this Repo last fetched or pushed, it
// keeps what it holds and downloads nothing.
func (r *Repo) Fetch(ctx context.Context) error {
	return r.bounded(ctx, "fetch", r.fetch)
}

func (r *Repo) fetch(ctx context.Context) error {
	start := time.Now()
	sess, err := r.client.NewUploadPackSession(r.ep, r.opts.Auth)
	if err != nil {
		r.reset()
		return r.wrap("fetch", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err == nil && r.keep(ar) {
		r.opts.Log.Debug("the branch has not moved: keeping the fetched tree", "repository", r.url, "branch", r.opts.Branch,
			"commit", r.tip.String(), "duration", time.Since(start).Round(time.Millisecond).String())
		return nil
	}
	r.reset()
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		r.opts.Log.Info("the repository is empty: the first commit creates the branch", "repository", r.url, "branch", r.opts.Branch)
		return nil
	}
	if err != nil {
		return r.wrap("fetch", err)
	}
	tip, err := advertised(ar, r.branch)
	if err != nil {
		return r.wrap("fetch", err)
	}
	if r.review, err = reviewRefs(ar); err != nil {
		return r.wrap("fetch", err)
	}
	if r.shard.tips, err = shardRefs(ar); err != nil {
		return r.wrap("fetch", err)
	}
	if tip.IsZero() {
		r.opts.Log.Info("the branch does not exist yet: the first commit creates it", "repository", r.url, "branch", r.opts.Branch)
		return nil
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Wants = []plumbing.Hash{tip}
	for _, h := range r.review {
		// Their tips, for their age; they share most objects with the tip.
		if !slices.Contains(req.Wants, h) {
			req.Wants = append(req.Wants, h)
		}
	}
	filtered := ar.Capabilities.Supports(capability.Filter)
	for _, h := range r.shard.tips {
		// Their trees, to tell which shards change and to send only
		// what a changed shard adds; in a request of their own, without
		// their blobs, where the server can leave them out.
		if !filtered && !slices.Contains(req.Wants, h) {
			req.Wants = append(req.Wants, h)
		}
	}
	shallow(ar, req)
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return r.wrap("fetch", err)
	}
	defer resp.Close()
	if err := packfile.UpdateObjectStorage(r.store, demux(req.Capabilities, resp)); err != nil {
		return r.wrap("fetch", err)
	}
	c, err := object.GetCommit(r.store, tip)
	if err != nil {
		return r.wrap("fetch", fmt.Errorf("the fetched pack lacks the tip %s: %w", tip, err))
	}
	if filtered {
		r.fetchShardTips(ctx)
	}
	r.tip, r.root = tip, c.TreeHash
	r.opts.Log.Debug("fetched", "repository", r.url, "branch", r.opts.Branch, "commit", tip.String(), "duration", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// shallow asks, where the server can, for the wanted commits alone (depth
// 1) and without progress messages.
func shallow(ar *packp.AdvRefs, req *packp.UploadPackRequest) {
	if ar.Capabilities.Supports(capability.Shallow) {
		req.Depth = packp.DepthCommits(1)
		_ = req.Capabilities.Set(capability.Shallow)
	}
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
}

// maxKeeps bounds how many fetches in a row keep the store: each keep adds
// the objects of the commits pushed since, so a fresh fetch now and then
// drops those no longer reachable.
const maxKeeps = 100

// keep reports whether the branch is where this Repo last saw it (fetched or
// pushed), so that the in-memory store, tip and tree stay as they are: a
// long-running serve then downloads the tree only when another writer moved
// the branch. It drops a commit made but not pushed.
func (r *Repo) keep(ar *packp.AdvRefs) bool {
	if r.store.Storage == nil || r.tip.IsZero() || r.keeps >= maxKeeps || len(r.shard.moves) > 0 {
		// (Shard commits cut and not pushed: the store holds objects the
		// server does not.)
		return false
	}
	tip, err := advertised(ar, r.branch)
	if err != nil || tip != r.tip {
		return false
	}
	if review, err := reviewRefs(ar); err != nil || !maps.Equal(review, r.review) {
		return false // a review branch moved: fetch its tip too
	}
	if tips, err := shardRefs(ar); err != nil || !maps.Equal(tips, r.shard.tips) {
		return false // a shard branch moved
	}
	r.keeps++
	r.commit, r.newRoot, r.objs = plumbing.ZeroHash, plumbing.ZeroHash, &objects{s: r.store}
	r.hint, r.pending = nil, nil
	return true
}

// stale makes the next fetch start from nothing: after a refused push the
// store holds objects the server may not have, which a commit of the same
// files would otherwise not send again.
func (r *Repo) stale() { r.keeps = maxKeeps }

// reset starts a fetch from nothing.
func (r *Repo) reset() {
	r.keeps = 0
	r.store = newStore()
	r.objs = &objects{s: r.store}
	r.tip, r.root, r.cur, r.curBlobs, r.commit, r.newRoot = plumbing.ZeroHash, plumbing.ZeroHash, nil, nil, plumbing.ZeroHash, plumbing.ZeroHash
	r.review, r.hint, r.pending = nil, nil, nil
	r.shard.tips, r.shard.moves, r.shard.remote = nil, nil, nil
}

// Tip is the fetched commit, "" when the branch does not exist yet.
func (r *Repo) Tip() string {
	if r.tip.IsZero() {
		return ""
	}
	return r.tip.String()
}

// Current returns the files of the owned directory at the fetched tip.
func (r *Repo) Current(ctx context.Context) (render.Tree, error) {
	if r.store.Storage == nil {
		return nil, errors.New("gitsync: Current before Fetch")
	}
	if r.cur != nil {
		return r.cur, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub, err := subtree(r.store, r.root, r.dir)
	if err != nil {
		return nil, r.wrap("read", err)
	}
	t, blobs, exact, err := readTree(r.store, sub)
	if err != nil {
		return nil, r.wrap("read", err)
	}
	if _, ok := t[render.MarkerFile]; len(t) > 0 && !ok {
		return nil, r.wrap("read", fmt.Errorf("%s holds %d file(s) but no %s marker: it was not written by waldur-gitops, refusing to replace it (choose another git.path)",
			r.displayDir(), len(t), render.MarkerFile))
	}
	r.cur, r.curBlobs, r.curExact = t, blobs, exact
	return t, nil
}

func (r *Repo) displayDir() string {
	if r.dir == "" {
		return "the repository root"
	}
	return r.dir + "/"
}

// Commit makes the commit that sets the owned directory to tree and, with
// SetShards, the commits of the shard branches whose files change, which
// Push pushes with it (PushShards alone when the branch is unchanged).
func (r *Repo) Commit(ctx context.Context, tree render.Tree, message string) (string, error) {
	h, err := r.commitTree(ctx, tree, message)
	if err != nil {
		return "", err
	}
	from := r.commit
	if from.IsZero() {
		from = r.tip
	}
	if err := r.cutShards(r.cur, tree, from, true); err != nil {
		return "", r.wrap("commit", err)
	}
	return h, nil
}

// commitTree makes the commit of the branch that sets the owned directory
// to tree.
func (r *Repo) commitTree(ctx context.Context, tree render.Tree, message string) (string, error) {
	if _, err := r.Current(ctx); err != nil {
		return "", err
	}
	r.pending = nil
	if h := r.takeHint(tree); h != nil {
		if c, ok, err := r.commitChanged(ctx, h, message); ok {
			return c, err
		}
	}
	if r.curExact && !r.tip.IsZero() && sameTree(r.cur, tree) {
		r.opts.Log.Info("the repository already holds the rendered tree: nothing to commit", "repository", r.url, "branch", r.opts.Branch, "commit", r.Tip())
		return "", nil
	}
	sub, err := r.objs.buildTree(tree, r.cur, r.curBlobs)
	if err != nil {
		return "", r.wrap("commit", err)
	}
	root, err := r.objs.splice(r.root, r.dir, sub)
	if err != nil {
		return "", r.wrap("commit", err)
	}
	if root == r.root {
		r.opts.Log.Info("the repository already holds the rendered tree: nothing to commit", "repository", r.url, "branch", r.opts.Branch, "commit", r.Tip())
		return "", nil
	}
	h, err := r.writeCommit(r.objs, root, r.tip, message, true)
	if err != nil {
		return "", r.wrap("commit", err)
	}
	r.commit, r.newRoot = h, root
	return h.String(), nil
}

// writeCommit stores, through objs, a commit of root on parent (zero: none)
// with message, signed when sign and a signer is configured.
func (r *Repo) writeCommit(objs *objects, root, parent plumbing.Hash, message string, sign bool) (plumbing.Hash, error) {
	sig := object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: r.opts.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: root}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	if sign && r.opts.Signer != nil {
		unsigned := r.store.NewEncodedObject()
		if err := c.EncodeWithoutSignature(unsigned); err != nil {
			return plumbing.ZeroHash, err
		}
		rd, err := unsigned.Reader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		sigBytes, err := r.opts.Signer.Sign(rd)
		_ = rd.Close()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		c.PGPSignature = string(sigBytes)
	}
	obj := r.store.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return objs.put(obj)
}

// Push sends the commit and the objects it added, moving the branch from the
// fetched tip to the commit.
func (r *Repo) Push(ctx context.Context) error {
	if r.commit.IsZero() {
		return errors.New("gitsync: Push without a commit")
	}
	start := time.Now()
	if err := r.pushWithShards(ctx); err != nil {
		r.stale()
		return err
	}
	r.opts.Log.Info("pushed", "repository", r.url, "branch", r.opts.Branch, "commit", r.commit.String(), "parent", r.Tip(),
		"objects", len(r.objs.added), "duration", time.Since(start).Round(time.Millisecond).String())
	r.tip, r.root = r.commit, r.newRoot
	r.pushed()
	r.commit, r.objs = plumbing.ZeroHash, &objects{s: r.store}
	return nil
}

// sendRef moves ref on the server from old to new (zero old: create it; zero
// new: delete it), sending the objects hashes in one pack. It fails with
// ErrRaced when the server's ref is not at old, and with a declined error
// (ErrDeclined) when a server hook said no, carrying what the hook printed.
func (r *Repo) sendRef(ctx context.Context, ref plumbing.ReferenceName, old, new plumbing.Hash, hashes []plumbing.Hash) error {
	return r.bounded(ctx, "push", func(ctx context.Context) error { return r.sendRefNow(ctx, ref, old, new, hashes) })
}

func (r *Repo) sendRefNow(ctx context.Context, ref plumbing.ReferenceName, old, new plumbing.Hash, hashes []plumbing.Hash) error {
	return r.sendRefsNow(ctx, []*packp.Command{{Name: ref, Old: old, New: new}}, hashes, false, nil)
}

// sendRefsNow moves every ref of cmds on the server from its Old to its New
// in one request, sending the objects hashes in one pack. With atomic the
// server applies all of them or none (its atomic capability; the caller
// checks Atomic first). A ref not at its Old fails the whole request with
// ErrRaced before anything is sent.
func (r *Repo) sendRefsNow(ctx context.Context, cmds []*packp.Command, hashes []plumbing.Hash, atomic bool, expect map[plumbing.ReferenceName]plumbing.Hash) error {
	return r.sendRefsFrom(ctx, r.store, cmds, hashes, atomic, expect)
}

// sendRefsFrom is sendRefsNow with the objects read from src.
func (r *Repo) sendRefsFrom(ctx context.Context, src storer.EncodedObjectStorer, cmds []*packp.Command, hashes []plumbing.Hash, atomic bool, expect map[plumbing.ReferenceName]plumbing.Hash) error {
	sess, err := r.client.NewReceivePackSession(r.ep, r.opts.Auth)
	if err != nil {
		return r.wrap("push", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return r.wrap("push", err)
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		now, err := advertised(ar, c.Name)
		if err != nil {
			return r.wrap("push", err)
		}
		if now != c.Old {
			return r.wrap("push", fmt.Errorf("%w: %s is at %s, expected %s", ErrRaced, c.Name.Short(), short(now), short(c.Old)))
		}
		names[i] = c.Name.Short()
	}
	for ref, want := range expect {
		if now, err := advertised(ar, ref); err != nil || now != want {
			return r.wrap("push", fmt.Errorf("%w: %s is at %s, expected %s", ErrRaced, ref.Short(), short(now), short(want)))
		}
	}
	ref, new := cmds[0].Name, cmds[0].New
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = cmds
	if atomic {
		if !ar.Capabilities.Supports(capability.Atomic) {
			return errNoAtomic
		}
		_ = req.Capabilities.Set(capability.Atomic)
	}
	// Ask for the side band, so that what the server's hooks print (the
	// reason a push is declined) reaches us, and for quiet, so that nothing
	// else does.
	remote := &remoteMessages{}
	switch {
	case ar.Capabilities.Supports(capability.Sideband64k):
		_ = req.Capabilities.Set(capability.Sideband64k)
		req.Progress = remote
	case ar.Capabilities.Supports(capability.Sideband):
		_ = req.Capabilities.Set(capability.Sideband)
		req.Progress = remote
	}
	if req.Progress != nil && ar.Capabilities.Supports(capability.Quiet) {
		_ = req.Capabilities.Set(capability.Quiet)
	}
	done := make(chan error, 1)
	if new.IsZero() && len(cmds) == 1 {
		if !ar.Capabilities.Supports(capability.DeleteRefs) {
			return r.wrap("push", fmt.Errorf("the server cannot delete %s (no delete-refs capability)", ref.Short()))
		}
		_ = req.Capabilities.Set(capability.DeleteRefs)
		done <- nil
	} else {
		pr, pw := io.Pipe()
		req.Packfile = pr
		go func() {
			err := writePack(pw, src, hashes)
			_ = pw.CloseWithError(err)
			done <- err
		}()
	}
	rs, err := sess.ReceivePack(ctx, req)
	if req.Packfile != nil {
		_ = req.Packfile.Close() // a server that stopped reading must not leave writePack blocked
	}
	encErr := <-done
	which := strings.Join(names, ", ")
	if rs != nil && rs.Error() != nil && len(rs.CommandStatuses) > 0 {
		// The server took the objects but refused to move the ref. A hook
		// that said no is final. Otherwise its old value may no longer have
		// matched; Sync tells a race from another refusal by fetching again.
		if declined(rs.Error().Error()) {
			return r.wrap("push", &declinedError{branch: which, err: rs.Error(), said: remote.said()})
		}
		return r.wrap("push", fmt.Errorf("%w: %s: %w%s", ErrRaced, which, rs.Error(), remote.said()))
	}
	if err != nil {
		return r.wrap("push", classifyPush(err, which, remote.said()))
	}
	if encErr != nil {
		return r.wrap("push", encErr)
	}
	return nil
}

// classifyPush marks the transport errors that mean a hook declined the push
// or the branch moved, and adds what the server said (said, from
// remoteMessages.said) to the error.
func classifyPush(err error, branch, said string) error {
	msg := err.Error()
	if declined(msg) {
		return &declinedError{branch: branch, err: err, said: said}
	}
	for _, s := range []string{"non-fast-forward", "fetch first", "stale info", "failed to lock", "cannot lock ref", "failed to update ref"} {
		if strings.Contains(msg, s) {
			return fmt.Errorf("%w: %w%s", ErrRaced, err, said)
		}
	}
	if said != "" {
		return fmt.Errorf("%w%s", err, said)
	}
	return err
}

// declinedError is a push a server hook declined: the branch, the server's
// status and what it said. It matches ErrDeclined and the status.
type declinedError struct {
	branch, said string
	err          error
}

func (e *declinedError) Error() string {
	return fmt.Sprintf("the server's hook declined the push to %s (%v)%s", e.branch, e.err, e.said)
}

func (e *declinedError) Unwrap() []error { return []error{ErrDeclined, e.err} }

// declined reports whether a push status or error says that a server hook
// refused the update: git's "pre-receive hook declined" and "hook declined",
// which hosting services also use for their branch protection.
func declined(msg string) bool {
	return strings.Contains(msg, "hook declined")
}

// remoteMessages keeps what the server prints on the side band during a
// push (the output of its hooks), up to a bound.
type remoteMessages struct {
	b         []byte
	truncated bool
}

// maxRemoteMessages bounds what is kept of the server's messages, and
// maxRemoteLines how many lines of it an error shows.
const (
	maxRemoteMessages = 4096
	maxRemoteLines    = 10
)

// Write keeps p, or what fits of it; it never fails, so that a talkative
// server cannot break the push.
func (m *remoteMessages) Write(p []byte) (int, error) {
	keep := p
	if room := maxRemoteMessages - len(m.b); len(keep) > room {
		m.truncated = true
		keep = keep[:max(room, 0)]
	}
	m.b = append(m.b, keep...)
	return len(p), nil
}

// ansiEscape matches the terminal control sequences (colours) hooks print.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// said is "; the server said: " and the server's messages on one line (each
// line trimmed, colour codes and control characters dropped, lines separated by " / "), or ""
// when it said nothing.
func (m *remoteMessages) said() string {
	if m == nil {
		return ""
	}
	var lines []string
	text := ansiEscape.ReplaceAllString(string(m.b), "")
	for _, l := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				return -1
			}
			return r
		}, l))
		if l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	more := m.truncated
	if len(lines) > maxRemoteLines {
		lines, more = lines[:maxRemoteLines], true
	}
	out := "; the server said: " + strings.Join(lines, " / ")
	if more {
		out += " / …"
	}
	return out
}

// advertised finds the branch among the advertised references; zero when it
// is not there.
func advertised(ar *packp.AdvRefs, branch plumbing.ReferenceName) (plumbing.Hash, error) {
	refs, err := ar.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ref, err := refs.Reference(branch)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if ref.Type() != plumbing.HashReference {
		return plumbing.ZeroHash, fmt.Errorf("%s is a symbolic reference", branch)
	}
	return ref.Hash(), nil
}

func demux(caps *capability.List, r io.Reader) io.Reader {
	switch {
	case caps.Supports(capability.Sideband64k):
		return sideband.NewDemuxer(sideband.Sideband64k, r)
	case caps.Supports(capability.Sideband):
		return sideband.NewDemuxer(sideband.Sideband, r)
	}
	return r
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "(no commit)"
	}
	return h.String()[:12]
}

// wrap names the operation and the repository, adds a hint for authentication
// failures, and makes sure no credential is in the message.
func (r *Repo) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	hint := ""
	switch {
	case r.opts.CredentialSource != "" && (errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed)):
		hint = ": check the credential, " + r.opts.CredentialSource
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		hint = ": check git.username and the password or token (git.password_file, git.password_env, git.token_file, git.token_env)"
	case errors.Is(err, transport.ErrRepositoryNotFound):
		hint = ": check git.url (and that the credentials may read it)"
	}
	e := fmt.Errorf("git %s %s: %w%s", op, r.url, err, hint)
	return redact(e, r.opts.secrets)
}

// redactedError keeps the chain of an error whose text had to be cleaned.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact masks the secrets, and every secret registered from the config, in
// every form they can take (internal/redact).
func redact(err error, secrets []string) error {
	msg := err.Error()
	clean := redactpkg.Default().With(secrets...).String(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}
