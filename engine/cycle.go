package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// Engine runs the cycle with one set of seams. It lives as long as its
// config: a verb runs it once, serve for every run until the config file
// changes, and it keeps what the seams hold between runs (the Git publisher's
// opened repository and tip) and the last run's state and render.
// Run is not safe for concurrent use; serve runs one cycle at a time.
type Engine struct {
	seams  Seams
	render Renderer
	guard  guard.Options
	log    *slog.Logger
	last   *Outcome
}

// New builds an engine from its seams, the renderer (templates loaded once,
// render.New(cfg, tpls).Render) and the deletion policy.
func New(s Seams, r Renderer, g guard.Options, log *slog.Logger) *Engine {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{seams: s, render: r, guard: g, log: log}
}

// Request is what one run is asked to do.
type Request struct {
	// Command names the run in the report: sync, render, apply, keycloak, serve.
	Command string
	// DryRun changes nothing anywhere and reports what would change.
	DryRun bool
	// AllowMassPrune lets this run past the deletion guard (--allow-mass-prune).
	AllowMassPrune bool
	// NoDelete keeps identity groups nobody needs (keycloak --no-delete).
	NoDelete bool
}

// Outcome is what one run leaves: its report (exit code included) and what
// each stage produced, for the verb to print and serve to keep.
type Outcome struct {
	Report    *report.Run
	State     *waldur.State
	Result    *render.Result
	Published *Published
	// Err is the run's failure with its class; nil on success.
	Err error
}

// Last is the outcome of the latest run, nil before the first.
func (e *Engine) Last() *Outcome { return e.last }

// stage is one step of the cycle: its report name, the class of its failures,
// and whether the stages after it still run when it fails.
type stage struct {
	name  string
	class Class
	run   func(ctx context.Context, o *Outcome) (changeset.Set, map[string]int, error)
	goOn  bool
}

// stages lists the cycle in order, leaving out the stages whose seam is unset:
//
//	waldur → approve → render → validate → publish → keycloak → orders
//
// A new stage goes here, with a seam in seams.go.
func (e *Engine) stages(req Request) []stage {
	s := e.seams
	g := e.guard
	g.Allow = req.AllowMassPrune
	list := []stage{{name: "waldur", class: ClassWaldur, run: func(ctx context.Context, o *Outcome) (changeset.Set, map[string]int, error) {
		st, err := s.Source.Read(ctx)
		o.State = st
		return changeset.Set{}, nil, err
	}}}
	if s.Orders != nil {
		list = append(list, stage{name: "approve", class: ClassWaldur, run: func(ctx context.Context, o *Outcome) (changeset.Set, map[string]int, error) {
			return s.Orders.Approve(ctx, o.State, e.renderClassified, req.DryRun)
		}})
	}
	list = append(list, stage{name: "render", class: ClassRender, run: func(_ context.Context, o *Outcome) (changeset.Set, map[string]int, error) {
		start := time.Now()
		res, err := e.renderClassified(o.State)
		if err != nil {
			return changeset.Set{}, nil, err
		}
		e.log.Info("rendered", "tenants", len(res.Tenants), "groups", len(res.Groups), "skipped", len(res.Skipped), "duration", time.Since(start).Round(time.Millisecond).String())
		o.Result = res
		return res.Changes, nil, nil
	}})
	if s.Validator != nil {
		list = append(list, stage{name: "validate", class: ClassApply, run: func(ctx context.Context, o *Outcome) (changeset.Set, map[string]int, error) {
			return s.Validator.Validate(ctx, o.Result)
		}})
	}
	if s.Publisher != nil {
		list = append(list, stage{name: s.Publisher.Stage(), class: s.Publisher.Class(), run: func(ctx context.Context, o *Outcome) (changeset.Set, map[string]int, error) {
			pub, cs, calls, err := s.Publisher.Publish(ctx, o.Result, PublishOptions{DryRun: req.DryRun, Guard: g})
			o.Published = pub
			return cs, calls, err
		}})
	}
	if s.Identities != nil {
		// A Keycloak failure must not hold back the orders of a published change.
		list = append(list, stage{name: "keycloak", class: ClassKeycloak, goOn: true, run: func(ctx context.Context, o *Outcome) (changeset.Set, map[string]int, error) {
			// Without a publisher the render is taken to be what is in place.
			return s.Identities.Reconcile(ctx, o.Result, o.Published.Has, IdentityOptions{DryRun: req.DryRun, NoDelete: req.NoDelete, Guard: g})
		}})
	}
	if s.Orders != nil {
		list = append(list, stage{name: "orders", class: ClassWaldur, run: func(ctx context.Context, o *Outcome) (changeset.Set, map[string]int, error) {
			return s.Orders.Finish(ctx, o.State, o.Result, o.Published, req.DryRun)
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
	var failed, refused error
	for _, st := range e.stages(req) {
		before := out.Published // what earlier stages published
		err := out.Report.Record(st.name, func() (changeset.Set, map[string]int, error) { return st.run(ctx, out) })
		if err == nil {
			continue
		}
		err = classify(st, err, before)
		if req.DryRun && ClassOf(err) == ClassGuard {
			refused = cmpOr(refused, err)
			continue
		}
		failed = cmpOr(failed, err)
		if !st.goOn && !isContained(err) {
			break
		}
	}
	out.Err = verdict(req, out, cmpOr(refused, failed))
	if out.Published != nil && !req.DryRun {
		out.Report.Commit = out.Published.Ref
	}
	out.Report.Finish(ExitCode(out.Err), time.Now())
	e.last = out
	return out
}

// classify gives a stage's failure its class. After something was published
// a failure is never "bad config" (exit 2 reads as "nothing happened"): it
// takes the stage's own class and says what was published.
func classify(st stage, err error, pub *Published) error {
	err = Classify(st.class, err)
	c, contained := ClassOf(err), isContained(err)
	if pub != nil && pub.Wrote {
		if c == ClassConfig {
			c = st.class
		}
		what := "the apply went through"
		if pub.Ref != "" {
			what = "commit " + pub.Ref + " was pushed"
		}
		err = fmt.Errorf("%w (%s)", err, what)
	}
	return &Error{Stage: st.name, Class: c, Err: err, Contained: contained}
}

// verdict is the run's one exit decision: a failure first; then, in a dry
// run, differences (exit 1, whether or not something was skipped); then
// skipped resources or identities (exit 3).
func verdict(req Request, out *Outcome, err error) error {
	if err != nil {
		return err
	}
	changes := changeset.Set{Entries: out.Report.Changes}
	if req.DryRun && changes.Changed() {
		return Errorf(ClassDiff, "differences found")
	}
	var resources, identities int
	for _, e := range changes.ByAction(changeset.Skip) {
		switch e.Stage {
		case "render":
			resources++
		case "keycloak":
			identities++
		}
	}
	var parts []string
	if resources > 0 {
		parts = append(parts, fmt.Sprintf("%d resource(s)", resources))
	}
	if identities > 0 {
		parts = append(parts, fmt.Sprintf("%d Keycloak group(s) or membership(s)", identities))
	}
	if len(parts) > 0 {
		return Errorf(ClassPartial, "%s skipped (listed in the output), the rest done", strings.Join(parts, " and "))
	}
	return nil
}

// renderClassified renders st; a failure is a config error wherever it happens.
func (e *Engine) renderClassified(st *waldur.State) (*render.Result, error) {
	res, err := e.render(st)
	return res, Classify(ClassRender, err)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
