package engine

import (
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

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
	// Resources, when set, asks to look at these resources only: a Source
	// that is a Refresher reads them (and the open orders) into the last
	// run's state instead of reading every offering again.
	Resources []waldur.UUID
	// OfferingUsers, with Resources, are offering users to read again too
	// (by a Source that is a Refresher).
	OfferingUsers []waldur.UUID
	// Full, on an event-triggered run that reads everything, is why.
	Full events.FullCause
}

// Outcome is what one run leaves: its report (exit code included) and what
// each stage produced, for the verb to print and serve to keep.
type Outcome struct {
	Report    *report.Run
	State     *waldur.State
	Result    *render.Result
	Published *publish.Published
	// Waiting maps the resources whose tenant is not usable yet to why (see
	// IdentityResult.Waiting); nil when no identities stage ran.
	Waiting map[waldur.UUID]string
	// Err is the run's failure with its class; nil on success.
	Err error

	diffStage string         // when set, the only stage whose entries are a dry run's differences
	inPlace   render.InPlace // what is at the destination already, read when first asked
}
