package engine

import (
	"context"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/writeback"
)

// feedbackStage is the Feedback seam over writeback.ResourceFeedback: it
// hands over what the publish did and gives its failures the Waldur class.
type feedbackStage struct{ fb *writeback.ResourceFeedback }

func (f feedbackStage) Report(ctx context.Context, st *waldur.State, res *render.Result, pub *publish.Published, waiting map[waldur.UUID]string, o FeedbackOptions) (changeset.Result, error) {
	var wp *writeback.Published
	if pub != nil {
		// Without In, feedback finds a tenant in After as rendered, parsing nothing (same answer as pub.Has).
		wp = &writeback.Published{Before: pub.Before, After: pub.After, Ref: pub.Ref, Failed: pub.Failed, In: pub.Present()}
	}
	r, err := f.fb.Report(ctx, st, res, wp, waiting, writeback.Options{DryRun: o.DryRun, Guard: o.Guard})
	return r, failure.Classify(failure.ClassWaldur, err)
}
