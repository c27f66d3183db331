package engine

import (
	"context"

	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Confirmer and Gone are confirm-before-delete's (guard/confirm); the
// Source implements Confirmer when it can read single resources.
type (
	Confirmer = confirm.Confirmer
	Gone      = confirm.Gone
)

// settle and explainGone are confirm.Settle and confirm.ExplainGone for the
// publishers.
func settle(ctx context.Context, c Confirmer, offering string, ids []waldur.UUID, res *render.Result) (map[waldur.UUID]string, map[string]string) {
	return confirm.Settle(ctx, c, offering, ids, res)
}

func explainGone(explained map[string]string, res *render.Result) map[string]string {
	return confirm.ExplainGone(explained, res)
}
