package engine

import (
	"context"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/usage"
	"github.com/waldur/waldur-gitops/waldur"
)

// UsageStageName is the name of the usage report's stage in the run report.
const UsageStageName = usage.EntryStage

// UsageStage is the Usage seam over usage.Reporter: the reporter plans and
// posts on the state the engine reads and renders, and its failures get the
// engine's classes (usage.Classify).
type UsageStage struct {
	Reporter *usage.Reporter
}

// Report runs the usage report; the reporter's DryRun is set from dryRun.
func (u *UsageStage) Report(ctx context.Context, read func(context.Context) (*waldur.State, error), rend UsageRenderer, dryRun bool) (changeset.Result, error) {
	u.Reporter.DryRun = dryRun
	r, err := u.Reporter.RunWith(ctx, read, usage.RenderFunc(rend))
	return r, usage.Classify(err)
}

// usageStages is the cycle of the usage report: the site agent's
// registration of every configured offering (before the read, as the report
// has always announced itself), then the usage stage, which reads and renders
// once with the engine's Source and renderer. Only the usage stage's entries
// are differences of a dry run.
func (e *Engine) usageStages(req Request) []stage {
	s := e.seams
	var list []stage
	if s.Announcer != nil {
		list = append(list, stage{name: "agent", class: failure.ClassWaldur, goOn: true, run: func(ctx context.Context, _ *Outcome) (changeset.Result, error) {
			return s.Announcer.Announce(ctx, nil, req.Command, req.DryRun)
		}})
	}
	return append(list, stage{name: UsageStageName, class: failure.ClassPartial, run: func(ctx context.Context, o *Outcome) (changeset.Result, error) {
		o.diffStage = UsageStageName
		read := func(ctx context.Context) (*waldur.State, error) {
			var err error
			o.State, err = s.Source.Read(ctx)
			return o.State, err
		}
		rend := func(st *waldur.State, in render.InPlace) (*render.Result, error) {
			res, err := e.seams.Renderer.Render(st, in)
			o.Result = res
			return res, err
		}
		return s.Usage.Report(ctx, read, rend, req.DryRun)
	}})
}
