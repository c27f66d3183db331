package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"

	"github.com/waldur/waldur-gitops/render"
)

// ReviewPrefix is the prefix of the review branches: a risky change waits
// on refs/heads/waldur-gitops/review/<digest> until a person merges it.
const ReviewPrefix = "waldur-gitops/review/"

// Branch is a review branch on the remote as the last fetch saw it.
type Branch struct {
	// Name is the branch name, ReviewPrefix included.
	Name string
	// Commit is its tip; Time the tip's commit time (zero when the tip
	// could not be read).
	Commit string
	Time   time.Time
}

// ReviewBranches returns the review branches the last Fetch saw, by name.
func (r *Repo) ReviewBranches() []Branch {
	out := make([]Branch, 0, len(r.review))
	for _, name := range slices.Sorted(maps.Keys(r.review)) {
		b := Branch{Name: name, Commit: r.review[name].String()}
		if r.store.Storage != nil {
			if c, err := object.GetCommit(r.store, r.review[name]); err == nil {
				b.Time = c.Committer.When
			}
		}
		out = append(out, b)
	}
	return out
}

// reviewRefs collects the review branches among the advertised references.
func reviewRefs(ar *packp.AdvRefs) (map[string]plumbing.Hash, error) {
	refs, err := ar.AllReferences()
	if err != nil {
		return nil, err
	}
	out := map[string]plumbing.Hash{}
	for name, ref := range refs {
		if n := plumbing.ReferenceName(name); n.IsBranch() && strings.HasPrefix(n.Short(), ReviewPrefix) && ref.Type() == plumbing.HashReference {
			out[n.Short()] = ref.Hash()
		}
	}
	return out, nil
}

// PushReview makes a commit on the branch's tip (after a Push, the pushed
// commit) in which the owned directory holds tree, and points the review
// branch name at it: it creates the branch, or replaces the one the fetch saw
// (deleted and created again, as servers refuse to move a branch to a commit
// that does not descend from it). It returns "" and pushes nothing when
// tree is what the tip holds.
func (r *Repo) PushReview(ctx context.Context, name string, tree render.Tree, message string) (string, error) {
	if !strings.HasPrefix(name, ReviewPrefix) {
		return "", fmt.Errorf("gitsync: %s is not a review branch", name)
	}
	if !r.commit.IsZero() {
		return "", errors.New("gitsync: PushReview with an unpushed commit of the branch")
	}
	h, err := r.commitTree(ctx, tree, message)
	if err != nil || h == "" {
		return "", err
	}
	defer func() { r.commit, r.newRoot, r.objs = plumbing.ZeroHash, plumbing.ZeroHash, &objects{s: r.store} }()
	ref := plumbing.NewBranchReferenceName(name)
	if _, ok := r.review[name]; ok {
		if err := r.DeleteReview(ctx, name); err != nil {
			return "", err
		}
	}
	if err := r.updateRef(ctx, ref, plumbing.ZeroHash, r.commit, r.objs.added); err != nil {
		return "", err
	}
	if r.review == nil {
		r.review = map[string]plumbing.Hash{}
	}
	r.review[name] = r.commit
	return h, nil
}

// DeleteReview deletes a review branch the fetch saw.
func (r *Repo) DeleteReview(ctx context.Context, name string) error {
	old, ok := r.review[name]
	if !ok || !strings.HasPrefix(name, ReviewPrefix) {
		return fmt.Errorf("gitsync: no review branch %s", name)
	}
	if err := r.updateRef(ctx, plumbing.NewBranchReferenceName(name), old, plumbing.ZeroHash, nil); err != nil {
		return err
	}
	delete(r.review, name)
	return nil
}

// updateRef moves the review branch ref from old to new (zero old: create;
// zero new: delete), sending the objects hashes.
func (r *Repo) updateRef(ctx context.Context, ref plumbing.ReferenceName, old, new plumbing.Hash, hashes []plumbing.Hash) error {
	if err := r.sendRef(ctx, ref, old, new, hashes); err != nil {
		return err
	}
	r.opts.Log.Info("updated a review branch", "repository", r.url, "branch", ref.Short(), "from", short(old), "to", short(new))
	return nil
}
