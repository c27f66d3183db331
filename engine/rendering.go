package engine

import (
	"context"
	"sync"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// ConfigRendering is the Renderer seam over package render: r renders, and
// every render settles the names two offerings of cfg claim
// (render.Result.ResolveClaims).
func ConfigRendering(cfg *config.Config, r *render.Renderer) Rendering {
	return configRendering{cfg: cfg, r: r}
}

type configRendering struct {
	cfg *config.Config
	r   *render.Renderer
}

func (c configRendering) Render(st *waldur.State, in render.InPlace) (*render.Result, error) {
	res, err := c.r.Render(st)
	if err == nil {
		res.ResolveClaims(c.cfg, st, in)
	}
	return res, err
}

func (c configRendering) Holding(h render.QuotaHolds) Rendering {
	return configRendering{cfg: c.cfg, r: c.r.Holding(h)}
}

// funcRendering is a bare render function as the seam: no claims to
// settle, no holds.
type funcRendering Renderer

func (f funcRendering) Render(st *waldur.State, _ render.InPlace) (*render.Result, error) {
	return f(st)
}

func (f funcRendering) Holding(render.QuotaHolds) Rendering { return nil }

// renderer renders a state of run o with the Renderer seam; a failure is a
// render error wherever it happens.
func (e *Engine) renderer(o *Outcome) Renderer {
	return func(st *waldur.State) (*render.Result, error) { return e.renderWith(o, e.seams.Renderer, st) }
}

func (e *Engine) renderWith(o *Outcome, r Rendering, st *waldur.State) (*render.Result, error) {
	res, err := r.Render(st, o.inPlace)
	return res, failure.Classify(failure.ClassRender, err)
}

// checkQuotas is the quota stage of the cycle: the Quotas seam checks the
// render, and the holds it finds are rendered in (the Renderer seam's
// Holding), the tenants it routes to review marked on the result.
func (e *Engine) checkQuotas(ctx context.Context, o *Outcome) (changeset.Result, error) {
	r, err := e.seams.Quotas.Check(ctx, o.State, o.Result)
	if r == nil {
		return changeset.Result{}, err
	}
	done := changeset.Result{Changes: r.Changes, Calls: r.Calls}
	if err == nil && len(r.Holds) > 0 {
		if held := e.seams.Renderer.Holding(r.Holds); held != nil {
			res, rerr := e.renderWith(o, held, o.State)
			if rerr != nil {
				return done, rerr
			}
			o.Result = res
		}
	}
	if len(r.Review) > 0 {
		o.Result.Review = r.Review
	}
	return done, err
}

// watchInPlace is this run's view of what is at the destination, read from
// the publisher the first time a render settles claimed names; nil when the
// publisher cannot tell.
func (e *Engine) watchInPlace(ctx context.Context) render.InPlace {
	p, ok := e.seams.Publisher.(InPlacer)
	if !ok {
		return nil
	}
	in := sync.OnceValue(func() render.InPlace { return p.InPlace(ctx) })
	return func(id waldur.UUID) bool {
		f := in()
		return f != nil && f(id)
	}
}
