package gitsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"

	"github.com/waldur/waldur-gitops/render"
)

// ShardBranchPrefix starts the name of every shard branch of the
// shard-branch layout (git.flux_shard_branches): the files of the Flux
// shard named N are on refs/heads/waldur-gitops/shards/N.
const ShardBranchPrefix = "waldur-gitops/shards/"

// ShardBranch is the branch of the shard whose Flux objects are named name.
func ShardBranch(name string) string { return ShardBranchPrefix + name }

// ShardContent is what one shard branch is to hold: the files of the Flux
// shard Name, paths relative to the branch's root.
type ShardContent struct {
	Name  string
	Files map[string][]byte
}

// ShardSource returns the content of every shard branch for the owned
// directory going from cur to next. existing lists the shard names whose
// branches the server has, so that a shard no longer generated can be
// emptied.
type ShardSource func(cur, next render.Tree, existing []string) []ShardContent

// ShardMove is a shard branch a run moves (or would move): its shard name,
// its branch, and the commits it goes from ("" when it is created) and to.
type ShardMove struct {
	Name, Branch, From, To string
}

// shardState is what a Repo knows of the shard branches.
type shardState struct {
	src    ShardSource
	tips   map[string]plumbing.Hash // at the fetch (or our last push), by branch
	moves  []ShardMove              // cut, not pushed yet
	objs   *objects                 // the objects the cut commits add
	pushed []ShardMove              // moved by the last push
	err    error                    // the last push of the shard branches, when it failed after the branch's
	remote map[plumbing.Hash]bool   // blobs of the shard tips the server has and the store lacks
}

// errNoAtomic is returned, before anything is sent, by an atomic push to a
// server that does not offer it.
var errNoAtomic = errors.New("the server does not offer atomic pushes")

// SetShards makes every Commit also cut the shard branches src describes,
// and every Push push them with the branch (git.flux_shard_branches).
func (r *Repo) SetShards(src ShardSource) { r.shard.src = src }

// ShardNames lists the shards whose branches the last fetch saw, sorted.
func (r *Repo) ShardNames() []string {
	out := make([]string, 0, len(r.shard.tips))
	for b := range r.shard.tips {
		out = append(out, strings.TrimPrefix(b, ShardBranchPrefix))
	}
	slices.Sort(out)
	return out
}

// ShardMoves returns the shard branches the last push moved.
func (r *Repo) ShardMoves() []ShardMove { return slices.Clone(r.shard.pushed) }

// ShardPending returns the shard moves cut and not pushed.
func (r *Repo) ShardPending() []ShardMove { return slices.Clone(r.shard.moves) }

// ShardTips maps every shard whose branch the server has, as this Repo last
// saw or pushed it, to its tip, by shard name.
func (r *Repo) ShardTips() map[string]string {
	out := make(map[string]string, len(r.shard.tips))
	for b, h := range r.shard.tips {
		out[strings.TrimPrefix(b, ShardBranchPrefix)] = h.String()
	}
	return out
}

// ShardErr is the error of the last push of the shard branches when they
// could not go with the branch and failed after it (the branch is pushed;
// the next run pushes them).
func (r *Repo) ShardErr() error { return r.shard.err }

// PlanShards returns the shard branches a commit of next would move, making
// no commit that Push would send: what a dry run shows.
func (r *Repo) PlanShards(ctx context.Context, next render.Tree) ([]ShardMove, error) {
	cur, err := r.Current(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.cutShards(cur, next, r.tip, false); err != nil {
		return nil, r.wrap("commit", err)
	}
	moves := r.shard.moves
	// The store now holds objects the server does not: the next fetch
	// starts afresh, or a commit of the same files would not send them.
	r.shard.moves = nil
	r.stale()
	return moves, nil
}

// shardRefs collects the shard branches among the advertised references,
// by branch name.
func shardRefs(ar *packp.AdvRefs) (map[string]plumbing.Hash, error) {
	refs, err := ar.AllReferences()
	if err != nil {
		return nil, err
	}
	out := map[string]plumbing.Hash{}
	for name, ref := range refs {
		if n := plumbing.ReferenceName(name); n.IsBranch() && strings.HasPrefix(n.Short(), ShardBranchPrefix) && ref.Type() == plumbing.HashReference {
			out[n.Short()] = ref.Hash()
		}
	}
	return out, nil
}

// cutShards makes a commit on every shard branch whose files, going from
// cur to next, differ from what its tip holds, naming from, the commit of
// the branch they are cut from. Unchanged shards get none.
func (r *Repo) cutShards(cur, next render.Tree, from plumbing.Hash, sign bool) error {
	r.shard.moves, r.shard.objs, r.shard.pushed, r.shard.err = nil, &objects{s: r.store, remote: r.shard.remote}, nil, nil
	if r.shard.src == nil || from.IsZero() {
		return nil
	}
	for _, sc := range r.shard.src(cur, next, r.ShardNames()) {
		root, err := r.shard.objs.buildTree(render.Tree(sc.Files), nil, nil)
		if err != nil {
			return fmt.Errorf("shard %s: %w", sc.Name, err)
		}
		branch := ShardBranch(sc.Name)
		old := r.shard.tips[branch]
		if !old.IsZero() {
			if c, err := object.GetCommit(r.store, old); err == nil && c.TreeHash == root {
				continue
			}
		}
		h, err := r.writeCommit(r.shard.objs, root, old, r.shardMessage(sc.Name, from), sign)
		if err != nil {
			return fmt.Errorf("shard %s: %w", sc.Name, err)
		}
		m := ShardMove{Name: sc.Name, Branch: branch, To: h.String()}
		if !old.IsZero() {
			m.From = old.String()
		}
		r.shard.moves = append(r.shard.moves, m)
	}
	return nil
}

// ShardSourceTrailer is the trailer of a shard branch's commit that names
// the commit of the branch it was cut from.
const ShardSourceTrailer = "Waldur-Source-Commit"

func (r *Repo) shardMessage(name string, from plumbing.Hash) string {
	return fmt.Sprintf(`waldur: shard %s from %s %s

The files of the Flux shard %s as %s commit %s holds them.
waldur-gitops derives this branch from %s, which holds the whole tree and
is the source of truth; a commit made here by hand is replaced.

%s: %s
`, name, r.opts.Branch, from.String()[:12], name, r.opts.Branch, from, r.opts.Branch, ShardSourceTrailer, from)
}

// commands returns the push commands of the cut shard moves.
func (s *shardState) commands() []*packp.Command {
	out := make([]*packp.Command, len(s.moves))
	for i, m := range s.moves {
		out[i] = &packp.Command{Name: plumbing.NewBranchReferenceName(m.Branch), Old: plumbing.NewHash(m.From), New: plumbing.NewHash(m.To)}
	}
	return out
}

// pushWithShards pushes the branch's commit and the cut shard moves: in one
// atomic request where the server offers it, else the branch first and
// then the shards, so that a shard branch never holds what the branch does
// not. A failure of the shards alone is kept in ShardErr.
func (r *Repo) pushWithShards(ctx context.Context) error {
	r.shard.pushed, r.shard.err = nil, nil
	if len(r.shard.moves) == 0 {
		return r.sendRef(ctx, r.branch, r.tip, r.commit, r.objs.added)
	}
	cmds := append([]*packp.Command{{Name: r.branch, Old: r.tip, New: r.commit}}, r.shard.commands()...)
	hashes := append(slices.Clone(r.objs.added), r.shard.objs.added...)
	err := r.bounded(ctx, "push", func(ctx context.Context) error { return r.sendRefsNow(ctx, cmds, hashes, true, nil) })
	if err == nil {
		r.shardsPushed()
		return nil
	}
	if !errors.Is(err, errNoAtomic) {
		return err
	}
	r.opts.Log.Debug("the server does not offer atomic pushes: pushing the branch, then the shard branches", "repository", r.url)
	if err := r.sendRef(ctx, r.branch, r.tip, r.commit, r.objs.added); err != nil {
		return err
	}
	if r.shard.err = r.sendShards(ctx, r.commit); r.shard.err != nil {
		r.stale()
	}
	return nil
}

// PushShards pushes the cut shard moves alone, when the branch had nothing
// to commit: only while the branch is still at the commit they were cut
// from, so that no shard branch gets ahead of it.
func (r *Repo) PushShards(ctx context.Context) error {
	r.shard.pushed, r.shard.err = nil, nil
	if len(r.shard.moves) == 0 {
		return nil
	}
	if r.shard.err = r.sendShards(ctx, r.tip); r.shard.err != nil {
		r.stale()
	}
	return r.shard.err
}

// sendShards pushes the cut shard moves, checking that the branch is at
// from (the commit they name).
func (r *Repo) sendShards(ctx context.Context, from plumbing.Hash) error {
	start := time.Now()
	expect := map[plumbing.ReferenceName]plumbing.Hash{r.branch: from}
	err := r.bounded(ctx, "push", func(ctx context.Context) error {
		err := r.sendRefsNow(ctx, r.shard.commands(), r.shard.objs.added, true, expect)
		if errors.Is(err, errNoAtomic) {
			err = r.sendRefsNow(ctx, r.shard.commands(), r.shard.objs.added, false, expect)
		}
		return err
	})
	if err != nil {
		return err
	}
	r.opts.Log.Info("pushed the shard branches", "repository", r.url, "shards", len(r.shard.moves), "from", from.String(),
		"duration", time.Since(start).Round(time.Millisecond).String())
	r.shardsPushed()
	return nil
}

// fetchShardTips fetches the tips of the shard branches one commit deep
// without their blobs (a blob:none filter, which the server offers), and
// records the blobs their trees name as the server's, so that a changed
// shard sends only its new blobs. A failure costs only that: the shards
// whose tip is not fetched are cut afresh and sent whole.
func (r *Repo) fetchShardTips(ctx context.Context) {
	r.shard.remote = map[plumbing.Hash]bool{}
	if err := r.fetchShardTipsNow(ctx); err != nil {
		r.opts.Log.Debug("could not fetch the shard branches' trees: changed shards are sent whole", "repository", r.url, "error", err.Error())
	}
}

func (r *Repo) fetchShardTipsNow(ctx context.Context) error {
	var wants []plumbing.Hash
	for _, h := range r.shard.tips {
		if r.store.HasEncodedObject(h) != nil && !slices.Contains(wants, h) {
			wants = append(wants, h)
		}
	}
	if len(wants) == 0 {
		return nil
	}
	sess, err := r.client.NewUploadPackSession(r.ep, r.opts.Auth)
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Wants, req.Filter = wants, packp.FilterBlobNone()
	_ = req.Capabilities.Set(capability.Filter)
	shallow(ar, req)
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Close()
	if err := packfile.UpdateObjectStorage(r.store, demux(req.Capabilities, resp)); err != nil {
		return err
	}
	for _, h := range wants {
		c, err := object.GetCommit(r.store, h)
		if err != nil {
			return err
		}
		if err := r.remoteBlobs(c.TreeHash); err != nil {
			return err
		}
	}
	return nil
}

// remoteBlobs records the blobs below the tree as the server's.
func (r *Repo) remoteBlobs(tree plumbing.Hash) error {
	t, err := object.GetTree(r.store, tree)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Dir:
			if err := r.remoteBlobs(e.Hash); err != nil {
				return err
			}
		case e.Mode.IsFile():
			r.shard.remote[e.Hash] = true
		}
	}
	return nil
}

// shardsPushed records the cut moves as pushed.
func (r *Repo) shardsPushed() {
	if r.shard.tips == nil {
		r.shard.tips = map[string]plumbing.Hash{}
	}
	for _, m := range r.shard.moves {
		r.shard.tips[m.Branch] = plumbing.NewHash(m.To)
	}
	r.shard.pushed, r.shard.moves = r.shard.moves, nil
}
