package engine

import (
	"context"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/quotasafe"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// Source reads the Waldur state: the API of every offering, or a snapshot.
type Source interface {
	Read(ctx context.Context) (*waldur.State, error)
}

// Refresher is a Source that can bring a previous state up to date for a
// few resources only, instead of reading every offering again, and read a
// few offering users again into it (an offering_user event).
type Refresher interface {
	Refresh(ctx context.Context, last *waldur.State, resources []waldur.UUID) (*waldur.State, error)
	RefreshUsers(ctx context.Context, st *waldur.State, users []waldur.UUID) error
}

// Renderer renders a state; render.Renderer.Render is the one the engine uses.
type Renderer func(*waldur.State) (*render.Result, error)

// Rendering is the Renderer seam: it renders the run's state, settling the
// names two offerings claim on what is at the destination already (in, nil
// when unknown), and gives the renderer with the quota stage's holds
// (Holding; nil when it renders none).
type Rendering interface {
	Render(st *waldur.State, in render.InPlace) (*render.Result, error)
	Holding(h render.QuotaHolds) Rendering
}

// Orders is the order stage around the render and the publish: Approve
// decides the pending-provider orders before the render (and updates the state
// in place so the render includes what it approved), Finish moves the
// executing orders whose effect is now published. Both report what they would
// do when dryRun is set and change nothing then.
type Orders interface {
	Approve(ctx context.Context, st *waldur.State, probe Renderer, dryRun bool) (changeset.Result, error)
	// waiting maps resources whose tenant is published but not usable yet
	// (their identity groups are not in place) to why: their Create, Update
	// and Restore orders stay executing.
	Finish(ctx context.Context, st *waldur.State, res *render.Result, pub *publish.Published, waiting map[waldur.UUID]string, dryRun bool) (changeset.Result, error)
}

// Quotas checks the quota cuts of a render against what the tenants'
// namespaces use (quota_shrink), before anything is validated or published:
// the holds it returns are rendered again (render.Renderer.Holding).
type Quotas interface {
	Check(ctx context.Context, st *waldur.State, res *render.Result) (*QuotaResult, error)
}

// QuotaResult is what the quota stage found.
type QuotaResult = quotasafe.Result

// Validator checks the render before it is published (sync --validate-server:
// a server-side dry run of every object). Any error blocks the publish.
type Validator interface {
	Validate(ctx context.Context, res *render.Result) (changeset.Result, error)
}

// Publisher makes the render durable somewhere: a commit in the GitOps
// repository, the objects in the clusters, or a directory. With DryRun it
// plans against what is there and writes nothing; the Published it returns
// then describes what would be there.
type Publisher interface {
	// Stage is the name the publisher's stage has in the run report.
	Stage() string
	// Class is the failure class of an error the publisher returns unclassified.
	Class() failure.Class
	Publish(ctx context.Context, res *render.Result, o publish.Options) (*publish.Published, changeset.Result, error)
}

// Preparer is a Publisher that can start work as the run starts, such as
// fetching the repository while Waldur is read. Prepare returns the function
// that waits for that work to end (nil when nothing was started).
type Preparer interface {
	Prepare(ctx context.Context) (wait func())
}

// InPlacer is a Publisher that can tell, before the render, which resources
// have a tenant at its destination already: they keep the names they hold
// when two offerings claim the same one.
type InPlacer interface {
	InPlace(ctx context.Context) func(waldur.UUID) bool
}

// Identities reconciles the identity provider (Keycloak groups and
// memberships) with the render. present reports whether a resource that is no
// longer rendered still has a tenant at the destination: its groups stay.
type Identities interface {
	Reconcile(ctx context.Context, res *render.Result, present func(waldur.UUID) bool, o IdentityOptions) (*IdentityResult, error)
}

// IdentityResult is what the identities stage did.
type IdentityResult struct {
	Changes changeset.Set
	Calls   map[string]int
	// Waiting maps the rendered resources whose groups or memberships are not
	// in place (the realm failed, a group in conflict, a write refused) to
	// why; a member missing in the identity provider does not make a tenant
	// wait.
	Waiting map[waldur.UUID]string
}

// IdentityOptions are the switches of the identities stage.
type IdentityOptions struct {
	DryRun, NoDelete bool
	Guard            guard.Options
	// Resources, when set, are the resources the run was asked about
	// (Request.Resources): the stage may limit itself to their groups.
	Resources []waldur.UUID
	// Held maps the resources whose Git change waits on a review branch
	// (Published.Review) to why: nothing may be taken from them in the
	// identity provider before the change is merged.
	Held map[waldur.UUID]string
}

// Announcer tells Waldur who is doing the work (the site agent identity of
// every offering, the mode it runs in). It runs right after the Waldur read,
// for the offerings st holds (read and found), so that nothing is registered
// for an offering Waldur does not know; it never fails a run: what it could
// not do is a skip entry.
type Announcer interface {
	Announce(ctx context.Context, st *waldur.State, mode string, dryRun bool) (changeset.Result, error)
}

// Feedback reports back to Waldur what the run found out about its resources
// (their state, where they live, members' sync statuses), after the orders.
// waiting and pub are as for Orders.Finish.
type Feedback interface {
	Report(ctx context.Context, st *waldur.State, res *render.Result, pub *publish.Published, waiting map[waldur.UUID]string, o FeedbackOptions) (changeset.Result, error)
}

// FeedbackOptions are the switches of the feedback stage.
type FeedbackOptions struct {
	DryRun bool
	// Guard is the run's removal policy (with --allow-mass-prune when given):
	// it bounds how many resources may be set erred at once.
	Guard guard.Options
}

// Usage makes the usage report (report): it reads the state once with read
// (the Source) and renders it with render (the engine's renderer, the names
// two offerings claim settled with the given InPlace), then plans and posts
// the month-to-date usage; with dryRun it posts nothing.
type Usage interface {
	Report(ctx context.Context, read func(context.Context) (*waldur.State, error), render UsageRenderer, dryRun bool) (changeset.Result, error)
}

// UsageRenderer renders a state for the usage stage, settling claimed names
// with inPlace.
type UsageRenderer func(st *waldur.State, inPlace render.InPlace) (*render.Result, error)

// Offboarding is the offering-user deletion workflow (package offboard):
// Claim claims the deletion requests before the render and marks the claimed
// users in st (with the names their grants carry, for the guard); Prove,
// after the identities, tells Waldur of the removals it can prove.
type Offboarding interface {
	Claim(ctx context.Context, st *waldur.State, dryRun bool) (changeset.Result, map[string]string, error)
	Prove(ctx context.Context, res *render.Result, pub *publish.Published, dryRun bool) (changeset.Result, []report.Offboard, error)
}

// Seams are the stages of one engine. A nil seam's stage does not run: no
// Orders for a snapshot (a recording says nothing about Waldur's orders now),
// no Publisher for `keycloak` or a plain render, no Identities without Keycloak.
type Seams struct {
	Announcer  Announcer
	Source     Source
	Orders     Orders
	Capacity   Capacity
	Quotas     Quotas
	Validator  Validator
	Publisher  Publisher
	Identities Identities
	Feedback   Feedback
	// Offboarding runs the offboard and proof stages when set.
	Offboarding Offboarding
	// Usage, when set, makes the engine the usage report's: the agent
	// registration and the usage stage are its only stages.
	Usage Usage
	// Renderer renders every state of the run; New makes one of its
	// Renderer when unset.
	Renderer Rendering
}

// Capacity reports every capacity pool's account after the render
// (capacity.Site, wired as is; it decides orders within Orders.Approve).
type Capacity interface {
	Report(ctx context.Context, res *render.Result) (changeset.Result, []report.PoolLine, error)
}

// stage is one step of the cycle: its report name, the class of its failures,
// and whether the stages after it still run when it fails.
type stage struct {
	name  string
	class failure.Class
	run   func(ctx context.Context, o *Outcome) (changeset.Result, error)
	goOn  bool
}
