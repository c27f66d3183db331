package publish

import (
	"context"
	"errors"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Cluster server-side applies the render into the clusters and
// prunes what is no longer rendered (direct mode).
type Cluster struct {
	Config  *config.Config
	Options apply.Options // Guard and DryRun are set per publish
}

// Stage is "apply".
func (p *Cluster) Stage() string { return apply.StageApply }

// Class is failure.ClassApply.
func (p *Cluster) Class() failure.Class { return failure.ClassApply }

// Publish applies and prunes. Objects the API server refused are reported in
// Published.Failed and make the error contained: the orders and identities of
// the other tenants still go on. A failure that is not about one object (a
// cluster unreachable) leaves Published.Incomplete.
func (p *Cluster) Publish(ctx context.Context, res *render.Result, o Options) (*Published, changeset.Result, error) {
	if err := res.Fill(); err != nil { // only the Git publisher takes a hollow render as it is
		return nil, changeset.Result{}, err
	}
	opts := p.Options
	opts.DryRun, opts.Guard = o.DryRun, o.Guard
	if o.Confirm != nil {
		opts.Confirm = func(ctx context.Context, offering string, ids []waldur.UUID) (map[waldur.UUID]string, map[string]string) {
			return confirm.Settle(ctx, o.Confirm, offering, ids, res)
		}
	}
	opts.Explained = confirm.ExplainGone(opts.Explained, res)
	r, err := apply.Apply(ctx, p.Config, res, opts)
	if r == nil {
		return nil, changeset.Result{}, err
	}
	pub := &Published{Where: "the clusters", Failed: map[waldur.UUID]string{}}
	for _, e := range r.Changes.ByAction(changeset.Skip) {
		if e.Cause == changeset.CauseRemovalKept {
			continue // left alone on purpose, not refused
		}
		if _, seen := pub.Failed[waldur.UUID(e.Resource)]; !seen && e.Resource != "" {
			pub.Failed[waldur.UUID(e.Resource)] = e.Subject + ": " + e.Reason
		}
	}
	pub.After = render.Tree{}
	for _, t := range res.Tenants {
		if _, failed := pub.Failed[t.Resource]; failed {
			continue
		}
		for _, f := range t.Files {
			pub.After[t.Dir+"/"+f.Name] = f.Data
		}
	}
	pub.Wrote = !o.DryRun && r.Changes.Changed()
	if err != nil {
		if objectsOnly(err) {
			err = failure.Contained(failure.Classify(failure.ClassApply, err))
		} else {
			pub.Incomplete = true
		}
	}
	return pub, changeset.Result{Changes: r.Changes, Calls: r.Calls}, err
}

// objectsOnly reports whether every failure joined in err concerns one
// object or one tenant's missing kind.
func objectsOnly(err error) bool {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if !errors.As(e, new(*apply.ObjectError)) && !errors.As(e, new(*apply.MissingKindError)) {
			return false
		}
	}
	return len(errs) > 0
}

// ServerValidator dry-runs every rendered object on the API server before a
// commit (sync --validate-server).
type ServerValidator struct {
	Config  *config.Config
	Options apply.Options
}

// Validate dry-runs the render; a rejected object is an error.
func (v *ServerValidator) Validate(ctx context.Context, res *render.Result) (changeset.Result, error) {
	r, err := apply.ValidateServer(ctx, v.Config, res, v.Options)
	if r == nil {
		return changeset.Result{}, err
	}
	return changeset.Result{Changes: r.Changes, Calls: r.Calls}, err
}
