package keycloak

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// KindRealm is the kind of the entry that reports a realm the run could not
// reconcile.
const KindRealm = "KeycloakRealm"

// Options of Reconcile and PlanChanges.
type Options struct {
	// DryRun reads and plans but writes nothing.
	DryRun bool
	// NoDelete keeps the groups nobody needs (reported as unchanged, with the
	// reason).
	NoDelete bool
	// InGit reports whether the manifests of a resource the renderer no longer
	// produces are still in Git; such a resource's groups are kept until a later
	// run finds them gone. sync passes "the resource has a tenant in the tree
	// just pushed" (or, in a dry run, in the tree as it will be). nil: the Git
	// side is taken to be up to date with the render, as when keycloak runs
	// alone after sync.
	InGit func(waldur.UUID) bool
	// Guard refuses to delete the groups of too many resources that have no
	// Terminate order in Waldur; nil: no limit.
	Guard *guard.Options
	// Connect opens the client of a target; nil: NewClient with ClientOptions.
	// Tests and the dry-run printer can hand in their own.
	Connect func(Target) (*Client, error)
	// ClientOptions are passed to NewClient when Connect is nil.
	ClientOptions ClientOptions
	// Log gets a line per realm; nil: no logging.
	Log *slog.Logger
}

// Result is the outcome of a run over every realm.
type Result struct {
	// Changes holds the entries of every realm (stage "keycloak"), in plan
	// order per realm; a realm that failed before planning has one entry of
	// kind KeycloakRealm with the error.
	Changes changeset.Set
	// Calls sums the API calls of every realm by kind, for the run report.
	Calls map[string]int
	// Plans are the plans made, one per realm that was read.
	Plans []*Plan
}

// Reconcile makes the Keycloak groups and memberships of every realm the
// config names match res: for each realm it reads once, plans, and unless
// DryRun carries the plan out. A realm that fails does not stop the others;
// the error names every realm that failed. With no offering that has
// keycloak_enabled it does nothing and calls nobody.
func Reconcile(ctx context.Context, cfg *config.Config, res *render.Result, o Options) (*Result, error) {
	out := &Result{Calls: map[string]int{}}
	targets := Targets(cfg)
	if len(targets) == 0 {
		return out, nil
	}
	rendered := map[waldur.UUID]bool{}
	for _, t := range res.Tenants {
		rendered[t.Resource] = true
	}
	var errs []error
	for _, t := range targets {
		start := time.Now()
		plan, calls, err := reconcileTarget(ctx, t, res, rendered, o)
		for k, v := range calls {
			out.Calls[k] += v
		}
		if plan != nil {
			out.Plans = append(out.Plans, plan)
			out.Changes.Merge(plan.Changes)
		}
		if err != nil {
			err = fmt.Errorf("keycloak %s: %w", t, err)
			errs = append(errs, err)
			if plan == nil {
				out.Changes.Add(changeset.Entry{Stage: Stage, Kind: KindRealm, Subject: t.String(), Action: changeset.Skip, Reason: "failed: " + err.Error()})
			}
		}
		if o.Log != nil {
			args := []any{"realm", t.String(), "dry_run", o.DryRun, "duration", time.Since(start).Round(time.Millisecond).String(), "calls", Total(calls), "write_attempts", WriteAttempts(calls), "writes", Writes(calls)}
			if plan != nil {
				args = append(args, "changes", plan.Changes.Summary())
			}
			if err != nil {
				o.Log.Error("keycloak reconciliation failed", append(args, "error", err.Error())...)
			} else {
				o.Log.Info("keycloak reconciled", args...)
			}
		}
	}
	return out, errors.Join(errs...)
}

// PlanChanges is Reconcile without writes: the change set of what a run would
// do, for render --dry-run and sync --dry-run to show next to the manifest
// diff, and the calls it took to find out.
func PlanChanges(ctx context.Context, cfg *config.Config, res *render.Result, o Options) (changeset.Set, map[string]int, error) {
	o.DryRun = true
	r, err := Reconcile(ctx, cfg, res, o)
	return r.Changes, r.Calls, err
}

// Total sums the requests of a Calls map (see Requests): retries, 401
// renewals, failures and successful writes are counted under their kind
// already.
func Total(calls map[string]int) int {
	n := 0
	for _, v := range Requests(calls) {
		n += v
	}
	return n
}

func reconcileTarget(ctx context.Context, t Target, res *render.Result, rendered map[waldur.UUID]bool, o Options) (*Plan, map[string]int, error) {
	connect := o.Connect
	if connect == nil {
		connect = func(t Target) (*Client, error) { return NewClient(t, o.ClientOptions) }
	}
	c, err := connect(t)
	if err != nil {
		return nil, nil, err
	}
	desired := Desire(t, res.Groups)
	actual, err := Observe(ctx, c, desired)
	if err != nil {
		return nil, c.Calls(), err
	}
	plan, err := MakePlan(PlanInput{
		Target: t, Desired: desired, Actual: actual, Rendered: rendered, Skipped: res.Skipped,
		Terminations: res.Terminations, InGit: o.InGit, NoDelete: o.NoDelete, Guard: o.Guard,
	})
	if err != nil || o.DryRun {
		return plan, c.Calls(), err
	}
	changes, err := Execute(ctx, c, plan)
	plan.Changes = changes
	return plan, c.Calls(), err
}
