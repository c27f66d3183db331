package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/forge"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/review"
	"github.com/waldur/waldur-gitops/waldur"
)

// ReviewEntryKind is the kind of the entries naming review branches and the
// changes that wait on them.
const (
	ReviewBranchKind = "ReviewBranch"
	ReviewChangeKind = "ReviewChange"
	// ReviewRequestKind entries name the pull or merge request of a branch.
	ReviewRequestKind = "ReviewRequest"
)

// routing is how one publish splits between git.branch and a review branch.
type routing struct {
	// main is the tree git.branch gets: the routed directories as they were.
	main render.Tree
	// tree is the review branch's tree (the whole render); branch its name.
	tree   render.Tree
	branch string
	// changes are the routed tenant entries, for the review commit's message.
	changes changeset.Set
	// entries say, in the report, which change waits on which branch.
	entries changeset.Set
	waiting map[waldur.UUID]string
}

// route classifies the tenant entries of a publish from cur to next and
// splits off those whose class config review: sends to a branch; nil when
// none is. layout is the one that made next.
func route(cfg *config.Config, res *render.Result, layout gitsync.FluxLayout, cur, next render.Tree, tenants changeset.Set) *routing {
	policy := map[review.Class]string{review.Additive: cfg.Review.Additive, review.Risky: cfg.Review.Risky}
	var dirs []string
	whys := map[string]string{}
	rt := &routing{waiting: map[waldur.UUID]string{}}
	classifier := review.NewClassifier(cur, next)
	for _, e := range tenants.Entries {
		if e.Kind != "Tenant" || (e.Action != changeset.Create && e.Action != changeset.Update && e.Action != changeset.Delete) {
			continue
		}
		class, why := classifier.Classify(e)
		if asked, ok := res.Review[waldur.UUID(e.Resource)]; ok && e.Action == changeset.Update {
			class, why = review.Risky, asked
		} else if policy[class] != config.ReviewBranch {
			continue
		}
		dirs = append(dirs, e.Subject)
		whys[e.Subject] = string(class) + ": " + why
		if why == "" {
			whys[e.Subject] = string(class)
		}
		rt.changes.Add(e)
	}
	if len(dirs) == 0 {
		return nil
	}
	rt.branch = review.Branch(gitsync.ReviewPrefix, cur, next, dirs)
	// The same layout as next (Previous included), so that main keeps every
	// tenant in the shard it is in; Apply writes into the tree it gets, so
	// the routed tree is rendered afresh rather than taken from next.
	rt.main = layout.Apply(review.Carry(res.Tree(cur), cur, dirs))
	rt.tree = next
	for _, e := range rt.changes.Entries {
		reason := fmt.Sprintf("waits on review branch %s until a person merges it (%s)", rt.branch, whys[e.Subject])
		rt.entries.Add(changeset.Entry{Stage: "git", Kind: ReviewChangeKind, Subject: e.Subject, Action: changeset.Skip,
			Offering: e.Offering, Resource: e.Resource, Orders: e.Orders, Reason: reason, Cause: changeset.CauseAwaitingReview})
		if e.Resource != "" {
			rt.waiting[waldur.UUID(e.Resource)] = reason
		}
	}
	return rt
}

// syncReview opens the review branch of rt unless it is open already, and
// deletes every other review branch: Waldur no longer wants their change, or
// it was merged. In a dry run it only says what it would do.
func (p *GitPublisher) syncReview(ctx context.Context, rt *routing, dryRun bool, calls map[string]int, pub *Published) (changeset.Set, error) {
	if pub != nil {
		defer func() {
			for _, b := range p.repo.ReviewBranches() {
				pub.ReviewBranches = append(pub.ReviewBranches, report.ReviewBranch{Name: b.Name, Commit: b.Commit, Opened: b.Time})
			}
		}()
	}
	var cs changeset.Set
	would := ""
	if dryRun {
		would = "would be "
	}
	for _, b := range p.repo.ReviewBranches() {
		if rt != nil && b.Name == rt.branch {
			cs.Add(changeset.Entry{Stage: "git", Kind: ReviewBranchKind, Subject: b.Name, Action: changeset.Unchanged, Reason: "open " + age(b.Time) + ", waiting for a person to merge it", Cause: changeset.CauseAwaitingReview})
			continue
		}
		e := changeset.Entry{Stage: "git", Kind: ReviewBranchKind, Subject: b.Name, Action: changeset.Delete, Reason: would + "deleted: Waldur no longer asks for its change, or it was merged"}
		if !dryRun {
			calls["push"]++
			if err := p.repo.DeleteReview(ctx, b.Name); err != nil {
				cs.Add(e)
				return cs, err
			}
		}
		cs.Add(e)
	}
	if rt == nil {
		return cs, nil
	}
	for _, b := range p.repo.ReviewBranches() {
		if b.Name == rt.branch {
			p.request(ctx, rt, dryRun, calls, &cs)
			return cs, nil
		}
	}
	e := changeset.Entry{Stage: "git", Kind: ReviewBranchKind, Subject: rt.branch, Action: changeset.Create, Reason: would + "opened for " + rt.changes.Summary()}
	if !dryRun {
		calls["push"]++
		msg := gitsync.Message(rt.changes)
		h, err := p.repo.PushReview(ctx, rt.branch, rt.tree, msg)
		if err != nil {
			return cs, err
		}
		e.Reason += " at " + h
	}
	cs.Add(e)
	p.request(ctx, rt, dryRun, calls, &cs)
	return cs, nil
}

// request makes sure the review branch has one open pull or merge request
// when review.forge is configured. A forge that fails does not fail the run:
// the branch is pushed, and the entry says what went wrong.
func (p *GitPublisher) request(ctx context.Context, rt *routing, dryRun bool, calls map[string]int, cs *changeset.Set) {
	f := p.Config.Review.Forge
	if f == nil {
		return
	}
	e := changeset.Entry{Stage: "git", Kind: ReviewRequestKind, Subject: rt.branch}
	if dryRun {
		e.Action, e.Reason = changeset.Create, "would be opened on "+f.Type+" unless one is open"
		cs.Add(e)
		return
	}
	token, err := f.Token()
	if err == nil {
		calls["forge"]++
		var u string
		var created bool
		u, created, err = forge.New(*f, token, nil).Ensure(ctx, forge.Request{
			Branch: rt.branch, Base: p.Config.Git.Branch,
			Title: "waldur-gitops: review " + rt.changes.Summary(),
			Body:  gitsync.Message(rt.changes),
		})
		e.Action, e.Reason = changeset.Unchanged, "open: "+u
		if created {
			e.Action, e.Reason = changeset.Create, "opened: "+u
		}
	}
	if err != nil {
		e.Action, e.Reason, e.Cause = changeset.Skip, "no pull or merge request: "+err.Error(), changeset.CauseForgeFailure
		logOrDiscard(p.Log).Warn("cannot open the review request", "branch", rt.branch, "error", err.Error())
	}
	cs.Add(e)
}

// reviewing reports whether review branches may exist: config review: or
// an offering with quota_shrink: review. Without either, the publisher does
// not touch branches it did not make.
func reviewing(cfg *config.Config) bool {
	if cfg.Review.Enabled() {
		return true
	}
	for i := range cfg.Offerings {
		if cfg.Offerings[i].QuotaShrink == config.QuotaShrinkReview {
			return true
		}
	}
	return false
}

// age says how long ago t was, "" when unknown.
func age(t time.Time) string {
	if t.IsZero() {
		return "(age unknown)"
	}
	return "since " + t.UTC().Format(time.RFC3339) + " (" + time.Since(t).Round(time.Minute).String() + ")"
}
