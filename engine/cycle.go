package engine

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/stop"
	"github.com/waldur/waldur-gitops/waldur/source"
)

// Engine runs the cycle with one set of seams. It lives as long as its
// config: a verb runs it once, serve for every run until the config file
// changes, and it keeps what the seams hold between runs (the Git publisher's
// opened repository and tip) and the last run's state and render.
// Run is not safe for concurrent use; serve runs one cycle at a time.
type Engine struct {
	seams Seams
	guard guard.Options
	log   *slog.Logger
	last  *Outcome
	// Progress, when set, is told of every stage as it ends, with its
	// duration and, when it failed, its Error (the CLI prints it on a
	// terminal, so a long run shows where it is).
	Progress func(st report.Stage, changes changeset.Set)
}

// stages lists the cycle in order, leaving out the stages whose seam is unset:
//
//	waldur → agent → approve → offboard → render → quota → validate → publish → keycloak → proof → orders → feedback
//
// A new stage goes here, with a seam in seams.go.
func (e *Engine) stages(req Request) []stage {
	s := e.seams
	if s.Usage != nil {
		return e.usageStages(req)
	}
	g := e.guard
	g.Allow = req.AllowMassPrune
	var list []stage
	list = append(list, stage{name: "waldur", class: failure.ClassWaldur, run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
		var err error
		o.State, err = e.read(ctx, req)
		return changeset.Result{Changes: source.Unread(o.State)}, err
	}})
	if s.Announcer != nil {
		// After the read: only offerings found in Waldur get an identity.
		list = append(list, stage{name: "agent", class: failure.ClassWaldur, goOn: true, run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
			return s.Announcer.Announce(ctx, o.State, req.Command, req.DryRun)
		}})
	}
	if s.Orders != nil {
		list = append(list, stage{name: "approve", class: failure.ClassWaldur, run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
			return s.Orders.Approve(ctx, o.State, e.renderer(o), req.DryRun)
		}})
	}
	list = append(list, e.claimStage(req, &g)...)
	list = append(list, stage{name: "render", class: failure.ClassRender, run: func(_ context.Context, o *Outcome) (changeset.Result, error) {
		start := time.Now()
		res, err := e.renderer(o)(o.State)
		if err != nil {
			return changeset.Result{}, err
		}
		e.log.Info("rendered", "tenants", len(res.Tenants), "groups", len(res.Groups), "skipped", len(res.Skipped), "duration", time.Since(start).Round(time.Millisecond).String())
		for _, w := range res.Warnings {
			e.log.Warn("rendered with a warning", "offering", w.Offering, "subject", w.Subject, "warning", w.Message)
		}
		o.Result = res
		return changeset.Result{Changes: res.Changes}, nil
	}})
	if s.Capacity != nil {
		list = append(list, stage{name: "capacity", class: failure.ClassCluster, run: func(ctx context.Context, o *Outcome) (r changeset.Result, err error) {
			r, o.Report.Capacity, err = s.Capacity.Report(ctx, o.Result)
			return r, err
		}})
	}
	if s.Quotas != nil {
		list = append(list, stage{name: "quota", class: failure.ClassCluster, run: e.checkQuotas})
	}
	if s.Validator != nil {
		list = append(list, stage{name: "validate", class: failure.ClassApply, run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
			return s.Validator.Validate(ctx, o.Result)
		}})
	}
	if s.Publisher != nil {
		list = append(list, stage{name: s.Publisher.Stage(), class: s.Publisher.Class(), run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
			confirmer, _ := s.Source.(confirm.Confirmer)
			pub, r, err := s.Publisher.Publish(ctx, o.Result, publish.Options{DryRun: req.DryRun, Guard: g, Confirm: confirmer})
			o.Published = pub
			return r, err
		}})
	}
	if s.Identities != nil {
		// A Keycloak failure must not hold back the orders of a published
		// change; those of the tenants it leaves unusable wait.
		list = append(list, stage{name: "keycloak", class: failure.ClassKeycloak, goOn: true, run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
			// Without a publisher the render is taken to be what is in place.
			r, err := s.Identities.Reconcile(ctx, o.Result, o.Published.Has, IdentityOptions{DryRun: req.DryRun, NoDelete: req.NoDelete, Guard: g, Resources: req.Resources, Held: o.Published.Reviewing()})
			if r == nil {
				return changeset.Result{}, err
			}
			o.Waiting = r.Waiting
			return changeset.Result{Changes: r.Changes, Calls: r.Calls}, err
		}})
	}
	list = append(list, e.proofStage(req)...)
	if s.Orders != nil {
		list = append(list, stage{name: "orders", class: failure.ClassWaldur, run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
			return s.Orders.Finish(ctx, o.State, o.Result, o.Published, o.Waiting, req.DryRun)
		}})
	}
	if s.Feedback != nil {
		list = append(list, stage{name: "feedback", class: failure.ClassWaldur, run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
			st := o.State
			if len(req.Resources) > 0 {
				// A targeted run speaks of the resources it read; the others'
				// fields in the kept state (last_sync among them) are as old
				// as the last full read.
				st = st.Only(req.Resources)
			}
			return s.Feedback.Report(ctx, st, o.Result, o.Published, o.Waiting, FeedbackOptions{DryRun: req.DryRun, Guard: g})
		}})
	}
	return list
}

// Run runs one cycle: every stage in order, each recorded in the report; the
// first failure ends the run unless its stage says to go on. In a dry run a
// guard refusal does not end it either, so the plan is shown in full.
func (e *Engine) Run(ctx context.Context, req Request) *Outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &Outcome{Report: report.New(req.Command, version.String(), req.DryRun, time.Now())}
	if p, ok := e.seams.Publisher.(Preparer); ok {
		if wait := p.Prepare(ctx); wait != nil {
			defer wait()
			defer cancel() // runs before wait: stop a fetch nobody needs any more
		}
	}
	out.inPlace = e.watchInPlace(ctx)
	var failed, refused error
	var cut stop.Cut
	for _, st := range e.stages(req) {
		if !cut.Before(ctx, st.name) {
			continue
		}
		before := out.Published // what earlier stages published
		err := out.Report.Record(st.name, func() (changeset.Result, error) {
			began := time.Now()
			r, err := st.run(ctx, out)
			if e.Progress != nil {
				e.Progress(progressStage(st.name, r.Calls, err, time.Since(began)), r.Changes)
			}
			return r, err
		})
		if cut.After(ctx, st.name) {
			continue // whatever the stage says, it did not finish
		}
		if err == nil {
			continue
		}
		err = classify(st, err, before)
		if req.DryRun && failure.ClassOf(err) == failure.ClassGuard {
			refused = cmp.Or(refused, err)
			continue
		}
		failed = cmp.Or(failed, err)
		if !st.goOn && !failure.IsContained(err) {
			break
		}
	}
	if err := cut.Err(out.Report, out.Published.Done()); err != nil {
		out.Err = err // the stop says more than what it cut short
	} else {
		out.Err = verdict(req, out, cmp.Or(refused, failed))
	}
	if out.Published != nil && !req.DryRun {
		out.Report.Commit = out.Published.Ref
		out.Report.ReviewBranches = out.Published.ReviewBranches
	}
	out.Report.Finish(failure.ExitCode(out.Err), time.Now())
	e.last = out
	return out
}
