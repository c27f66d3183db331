package review

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/forge"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// BranchKind and ChangeKind are the kinds of the entries naming review
// branches and the changes that wait on them.
const (
	BranchKind = "ReviewBranch"
	ChangeKind = "ReviewChange"
	// RequestKind entries name the pull or merge request of a branch.
	RequestKind = "ReviewRequest"
)

// Routing is how one publish splits between git.branch and a review branch.
type Routing struct {
	// main is the tree git.branch gets: the routed directories as they were.
	Main render.Tree
	// tree is the review branch's tree (the whole render); branch its name.
	Tree render.Tree
	Name string
	// changes are the routed tenant entries, for the review commit's message.
	Changes changeset.Set
	// entries say, in the report, which change waits on which branch.
	Entries changeset.Set
	Waiting map[waldur.UUID]string
}

// Route classifies the tenant entries of a publish from cur to next and
// splits off those whose class config review: sends to a branch; nil when
// none is. layout is the one that made next.
func Route(cfg *config.Config, res *render.Result, layout gitsync.FluxLayout, cur, next render.Tree, tenants changeset.Set) *Routing {
	policy := map[Class]string{Additive: cfg.Review.Additive, Risky: cfg.Review.Risky}
	var dirs []string
	whys := map[string]string{}
	rt := &Routing{Waiting: map[waldur.UUID]string{}}
	classifier := NewClassifier(cur, next)
	for _, e := range tenants.Entries {
		if e.Kind != "Tenant" || (e.Action != changeset.Create && e.Action != changeset.Update && e.Action != changeset.Delete) {
			continue
		}
		class, why := classifier.Classify(e)
		if asked, ok := res.Review[waldur.UUID(e.Resource)]; ok && e.Action == changeset.Update {
			class, why = Risky, asked
		} else if policy[class] != config.ReviewBranch {
			continue
		}
		dirs = append(dirs, e.Subject)
		whys[e.Subject] = string(class) + ": " + why
		if why == "" {
			whys[e.Subject] = string(class)
		}
		rt.Changes.Add(e)
	}
	if len(dirs) == 0 {
		return nil
	}
	rt.Name = Branch(gitsync.ReviewPrefix, cur, next, dirs)
	// The same layout as next (Previous included), so that main keeps every
	// tenant in the shard it is in; Apply writes into the tree it gets, so
	// the routed tree is rendered afresh rather than taken from next.
	rt.Main = layout.Apply(Carry(res.Tree(cur), cur, dirs))
	rt.Tree = next
	for _, e := range rt.Changes.Entries {
		reason := fmt.Sprintf("waits on review branch %s until a person merges it (%s)", rt.Name, whys[e.Subject])
		rt.Entries.Add(changeset.Entry{Stage: "git", Kind: ChangeKind, Subject: e.Subject, Action: changeset.Skip,
			Offering: e.Offering, Resource: e.Resource, Orders: e.Orders, Reason: reason, Cause: changeset.CauseAwaitingReview})
		if e.Resource != "" {
			rt.Waiting[waldur.UUID(e.Resource)] = reason
		}
	}
	return rt
}

// Repo holds the review branches (gitsync.Repo).
type Repo interface {
	ReviewBranches() []gitsync.Branch
	PushReview(ctx context.Context, name string, tree render.Tree, message string) (string, error)
	DeleteReview(ctx context.Context, name string) error
}

// Sync opens the review branch of rt unless it is open already, and deletes
// every other review branch: Waldur no longer wants their change, or it was
// merged. In a dry run it only says what it would do. rt nil: no change
// waits on review.
func Sync(ctx context.Context, repo Repo, cfg *config.Config, log *slog.Logger, rt *Routing, dryRun bool, calls map[string]int) (changeset.Set, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := publisher{repo: repo, Config: cfg, Log: log}
	var cs changeset.Set
	would := ""
	if dryRun {
		would = "would be "
	}
	for _, b := range repo.ReviewBranches() {
		if rt != nil && b.Name == rt.Name {
			cs.Add(changeset.Entry{Stage: "git", Kind: BranchKind, Subject: b.Name, Action: changeset.Unchanged, Reason: "open " + age(b.Time) + ", waiting for a person to merge it", Cause: changeset.CauseAwaitingReview})
			continue
		}
		e := changeset.Entry{Stage: "git", Kind: BranchKind, Subject: b.Name, Action: changeset.Delete, Reason: would + "deleted: Waldur no longer asks for its change, or it was merged"}
		if !dryRun {
			calls["push"]++
			if err := repo.DeleteReview(ctx, b.Name); err != nil {
				cs.Add(e)
				return cs, err
			}
		}
		cs.Add(e)
	}
	if rt == nil {
		return cs, nil
	}
	for _, b := range repo.ReviewBranches() {
		if b.Name == rt.Name {
			p.request(ctx, rt, dryRun, calls, &cs)
			return cs, nil
		}
	}
	e := changeset.Entry{Stage: "git", Kind: BranchKind, Subject: rt.Name, Action: changeset.Create, Reason: would + "opened for " + rt.Changes.Summary()}
	if !dryRun {
		calls["push"]++
		msg := gitsync.Message(rt.Changes)
		h, err := repo.PushReview(ctx, rt.Name, rt.Tree, msg)
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
func (p publisher) request(ctx context.Context, rt *Routing, dryRun bool, calls map[string]int, cs *changeset.Set) {
	f := p.Config.Review.Forge
	if f == nil {
		return
	}
	e := changeset.Entry{Stage: "git", Kind: RequestKind, Subject: rt.Name}
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
			Branch: rt.Name, Base: p.Config.Git.Branch,
			Title: "waldur-gitops: review " + rt.Changes.Summary(),
			Body:  gitsync.Message(rt.Changes),
		})
		e.Action, e.Reason = changeset.Unchanged, "open: "+u
		if created {
			e.Action, e.Reason = changeset.Create, "opened: "+u
		}
	}
	if err != nil {
		e.Action, e.Reason, e.Cause = changeset.Skip, "no pull or merge request: "+err.Error(), changeset.CauseForgeFailure
		p.Log.Warn("cannot open the review request", "branch", rt.Name, "error", err.Error())
	}
	cs.Add(e)
}

// Enabled reports whether review branches may exist: config review: or
// an offering with quota_shrink: review. Without either, the publisher does
// not touch branches it did not make.
func Enabled(cfg *config.Config) bool {
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

// publisher is what Sync works with.
type publisher struct {
	repo   Repo
	Config *config.Config
	Log    *slog.Logger
}

// age says how long ago t was, "" when unknown.
func age(t time.Time) string {
	if t.IsZero() {
		return "(age unknown)"
	}
	return "since " + t.UTC().Format(time.RFC3339) + " (" + time.Since(t).Round(time.Minute).String() + ")"
}
