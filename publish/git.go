package publish

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/review"
	"github.com/waldur/waldur-gitops/waldur"
)

// Git commits the render to git.path of the GitOps repository and
// pushes it. It opens the repository once and keeps it, so that in serve every
// later fetch only brings what is new.
type Git struct {
	Config   *config.Config
	Log      *slog.Logger
	repo     *gitsync.Repo
	openErr  error
	writer   gitsync.Writer // repo prefetching for the current run
	prepared bool
	fetched  func()     // waits for the prefetch of the current run
	check    *noopCheck // a fresh run's look at the branch tip and the no-op record
	alsoRead []string   // the other state refs that look reads (readAlso)
	flux     dynamic.Interface
	last     *lastPublish // the last publish, for the next to take unchanged tenants from
}

// Stage is "git".
func (p *Git) Stage() string { return "git" }

// Class is failure.ClassGit.
func (p *Git) Class() failure.Class { return failure.ClassGit }

func (p *Git) open() error {
	if p.repo != nil || p.openErr != nil {
		return p.openErr
	}
	opts, err := gitsync.OptionsFromConfig(p.Config.Git)
	if err == nil {
		opts.Log = p.Log
		p.repo, err = gitsync.Open(opts)
	}

	p.openErr = failure.Classify(failure.ClassConfig, err)
	return p.openErr
}

// Prepare starts fetching the branch in the background.
func (p *Git) Prepare(ctx context.Context) func() {
	if p.open() != nil {
		return nil
	}
	if p.noopEligible() && p.repo.Tip() == "" {
		q := p.startNoopCheck(ctx)
		p.check = q
		return func() { <-q.done; p.check = nil }
	}
	var wait func()
	p.writer, wait = gitsync.Prefetch(ctx, p.repo)
	p.prepared, p.fetched = true, wait
	return func() { wait(); p.prepared, p.fetched = false, nil }
}

// Previous waits for the prefetch of the current run and returns the files
// it read from git.path: nil when nothing was prefetched or the fetch
// failed (the publish reports that failure). The render shares the bytes of
// every unchanged file with it (render.Renderer.SharingWith), so that a
// re-sync holds one copy of the site's files, not two. The render then
// starts only once the fetch is done; a fetch runs while Waldur is read, so
// that costs a run reading the API nothing.
func (p *Git) Previous() render.Tree {
	if q := p.check; q != nil {
		if <-q.done; q.writer == nil {
			return nil // the branch may hold the render: the render decides
		}
	} else if !p.prepared || p.fetched == nil {
		return nil
	} else {
		p.fetched()
	}
	if p.repo.Tip() == "" {
		return nil
	}
	cur, err := p.repo.Current(context.Background())
	if err != nil {
		return nil
	}
	return cur
}

// Publish plans the tree on the branch tip and, unless DryRun, commits and
// pushes it, starting over on the new tip after a lost race.
func (p *Git) Publish(ctx context.Context, res *render.Result, o Options) (*Published, changeset.Result, error) {
	if err := p.open(); err != nil {
		return nil, changeset.Result{}, err
	}
	if pub, r, ok := p.quiet(ctx, res, o); ok {
		return pub, r, nil
	}
	if err := res.Fill(); err != nil {
		return nil, changeset.Result{}, err
	}
	w := p.runWriter()
	// Per run: a config switched to or from the shard-branch layout takes
	// effect in serve at its next run.
	p.repo.SetShards(nil)
	if p.Config.Git.FluxShardBranches {
		p.repo.SetShards(shardSource(p.Config))
	}
	branch := p.Config.Git.Branch
	pub := &Published{Where: p.repo.URL() + " " + branch + ":" + p.Config.Git.Path}
	useReview := review.Enabled(p.Config) || len(res.Review) > 0
	u := &publishRun{p: p, ctx: ctx, res: res, o: o, useReview: useReview, pub: pub, cause: p.scopeCause(res, o, useReview)}
	plan := u.plan
	if o.DryRun {
		pub, r, err := p.dryRun(ctx, w, plan, pub, &u.tenants)
		if err == nil && useReview {
			rcs, _ := p.syncReview(ctx, u.routed, true, r.Calls, nil)
			r.Changes.Merge(rcs)
		}
		return pub, r, err
	}
	r, err := gitsync.Sync(ctx, w, plan, p.Config.Git.Retries())
	calls := map[string]int{"fetch": r.Attempts, "push": r.Attempts}
	u.done(cmp.Or(r.Commit, r.Parent), err)
	tenants := u.tenants
	if err != nil {
		return nil, changeset.Result{Changes: tenants, Calls: calls}, err
	}
	p.remember(ctx, cmp.Or(r.Commit, r.Parent), pub.After, res)
	if useReview {
		rcs, err := p.syncReview(ctx, u.routed, false, calls, pub)
		tenants.Merge(rcs)
		if err != nil {
			pub.Ref, pub.Wrote = r.Commit, r.Commit != ""
			return pub, changeset.Result{Changes: tenants, Calls: calls}, err
		}
	}
	e := changeset.Entry{Stage: "git", Kind: "Commit", Subject: branch + " " + r.Commit, Action: changeset.Create}
	if r.Commit == "" {
		e.Subject, e.Action = branch+" "+r.Parent, changeset.Unchanged
		calls["push"] = r.Attempts - 1
	}
	tenants.Add(e)
	pub.Ref, pub.Wrote = r.Commit, r.Commit != ""
	if p.Config.Git.FluxOCIRepository != "" {
		// Also when nothing was committed: a shard a failed run left out
		// is pushed now.
		cs, err := p.shipShards(ctx, pub, cmp.Or(r.Commit, r.Parent))
		tenants.Merge(cs)
		for _, e := range cs.Entries {
			if e.Action == changeset.Create {
				calls["oci_push"]++
			}
		}
		return pub, changeset.Result{Changes: tenants, Calls: calls}, err
	}
	if p.Config.Git.FluxShardBranches {
		cs, err := p.shardBranches(ctx, pub, calls)
		tenants.Merge(cs)
		return pub, changeset.Result{Changes: tenants, Calls: calls}, err
	}
	if pub.Wrote && p.Config.Git.FluxReconcile {
		p.requestReconcile(ctx)
		calls["flux_reconcile"] = 1
	}
	return pub, changeset.Result{Changes: tenants, Calls: calls}, nil
}

// requestReconcile asks Flux to fetch the commit just pushed
// (git.flux_reconcile). A failure only costs the wait for Flux's poll, so it
// is a warning, not an error of the run.
func (p *Git) requestReconcile(ctx context.Context) {
	g := p.Config.Git
	if p.flux == nil {
		dyn, err := kube.Source{Path: g.FluxKubeconfigPath, Context: g.FluxKubeconfigContext}.Dynamic()
		if err != nil {
			logOrDiscard(p.Log).Warn("cannot ask Flux to fetch the commit now; it comes at the next poll", "error", err.Error())
			return
		}
		p.flux = dyn
	}
	if err := kube.RequestFluxReconcile(ctx, p.flux, g.FluxSourceNamespace, g.FluxSourceName, time.Now()); err != nil {
		logOrDiscard(p.Log).Warn("cannot ask Flux to fetch the commit now; it comes at the next poll", "error", err.Error())
		return
	}
	logOrDiscard(p.Log).Info("asked Flux to fetch the commit", "gitrepository", g.FluxSourceNamespace+"/"+g.FluxSourceName)
}

// dryRun fetches the branch and plans the tree on it, committing nothing. A
// guard refusal is returned with the plan, which is still shown.
func (p *Git) dryRun(ctx context.Context, w gitsync.Writer, plan gitsync.Plan, pub *Published, tenants *changeset.Set) (*Published, changeset.Result, error) {
	calls := map[string]int{"fetch": 1}
	if err := w.Fetch(ctx); err != nil {
		return nil, changeset.Result{Calls: calls}, err
	}
	cur, err := w.Current(ctx)
	if err != nil {
		return nil, changeset.Result{Calls: calls}, err
	}
	_, _, guardErr := plan(cur)
	branch := p.Config.Git.Branch
	e := changeset.Entry{Stage: "git", Kind: "Commit", Subject: branch + " on " + pub.Base, Action: changeset.Unchanged}
	if pub.Base == "" {
		e.Subject = branch + " (a new branch)"
	}
	if len(gitsync.ChangedFiles(pub.Before, pub.After)) > 0 {
		e.Action = changeset.Create
	}
	cs := *tenants
	cs.Add(e)
	if p.Config.Git.FluxShardBranches && guardErr == nil {
		if err := p.dryRunShards(ctx, pub, &cs); err != nil {
			return nil, changeset.Result{Calls: calls}, err
		}
	}
	return pub, changeset.Result{Changes: cs, Calls: calls}, guardErr
}

// InPlace reports the resources that have a tenant on the branch tip, from
// the fetch the run started; nil when it cannot be read (the publish will
// say why).
func (p *Git) InPlace(ctx context.Context) func(waldur.UUID) bool {
	if p.open() != nil {
		return nil
	}
	cur, err := gitsync.Peek(ctx, p.runWriter())
	if err != nil {
		return nil
	}
	in := cur.ResourceUUIDs()
	return func(id waldur.UUID) bool { return in[id] }
}

// runWriter is the repository as this run's prefetch left it.
func (p *Git) runWriter() gitsync.Writer {
	if q := p.check; q != nil {
		if <-q.done; q.writer != nil {
			return q.writer
		}
		return p.repo
	}
	if p.prepared {
		return p.writer
	}
	return p.repo
}

// syncReview syncs the review branches (review.Sync) and, with pub, records
// those open after it.
func (p *Git) syncReview(ctx context.Context, rt *review.Routing, dryRun bool, calls map[string]int, pub *Published) (changeset.Set, error) {
	cs, err := review.Sync(ctx, p.repo, p.Config, p.Log, rt, dryRun, calls)
	if pub != nil {
		for _, b := range p.repo.ReviewBranches() {
			pub.ReviewBranches = append(pub.ReviewBranches, report.ReviewBranch{Name: b.Name, Commit: b.Commit, Opened: b.Time})
		}
	}
	return cs, err
}

func logOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
