// Package enginetest holds in-memory fakes of the engine's seams, so the
// cycle can be tested as table tests without any server: each fake records
// its calls in a shared Log, counts the writes it made, and fails on demand.
package enginetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// Log records the seams' calls in order, as "orders.approve dry-run" and the like.
type Log struct {
	mu    sync.Mutex
	calls []string
	// OnCall, when set, is told of every call as it is made (without the
	// dry-run mark): a test stops a run in the middle of a stage with it.
	OnCall func(call string)
}

func (l *Log) add(call string, dryRun bool) {
	if l.OnCall != nil {
		l.OnCall(call)
	}
	if dryRun {
		call += " dry-run"
	}
	l.mu.Lock()
	l.calls = append(l.calls, call)
	l.mu.Unlock()
}

// Calls returns the calls so far.
func (l *Log) Calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// String joins the calls with " → ".
func (l *Log) String() string { return strings.Join(l.Calls(), " → ") }

// Source answers State, or Err.
type Source struct {
	Log   *Log
	State *waldur.State
	Err   error
}

// Read returns a copy of State, so a run cannot change the fixture.
func (s *Source) Read(context.Context) (*waldur.State, error) {
	s.Log.add("source.read", false)
	if s.Err != nil {
		return nil, s.Err
	}
	st := &waldur.State{Offerings: append([]waldur.OfferingState(nil), s.State.Offerings...)}
	return st, nil
}

// Orders counts approvals and finishes; a dry run counts nothing.
type Orders struct {
	Log                   *Log
	ApproveErr, FinishErr error
	// Writes counts the orders moved.
	Writes int
	// Finished holds the resources whose order Finish moved, each once.
	Finished []waldur.UUID
}

// Approve probes the render, as the real stage does, and counts one move.
func (o *Orders) Approve(_ context.Context, st *waldur.State, probe engine.Renderer, dryRun bool) (changeset.Result, error) {
	o.Log.add("orders.approve", dryRun)
	if o.ApproveErr != nil {
		return changeset.Result{}, o.ApproveErr
	}
	if _, err := probe(st); err != nil {
		return changeset.Result{}, err
	}
	if !dryRun {
		o.Writes++
	}
	return changeset.Result{Calls: map[string]int{"approve": 1}}, nil
}

// Finish records every rendered resource that pub holds and that is not waiting.
func (o *Orders) Finish(_ context.Context, _ *waldur.State, res *render.Result, pub *publish.Published, waiting map[waldur.UUID]string, dryRun bool) (changeset.Result, error) {
	o.Log.add("orders.finish", dryRun)
	if o.FinishErr != nil {
		return changeset.Result{}, o.FinishErr
	}
	var cs changeset.Set
	for _, t := range res.Tenants {
		if _, wait := waiting[t.Resource]; wait || !pub.Has(t.Resource) || slices.Contains(o.Finished, t.Resource) {
			continue
		}
		cs.Add(changeset.Entry{Stage: "orders", Kind: "Order", Subject: t.Dir, Action: changeset.Update, Resource: string(t.Resource)})
		if !dryRun {
			o.Finished = append(o.Finished, t.Resource)
			o.Writes++
		}
	}
	return changeset.Result{Changes: cs}, nil
}

// Publisher keeps the destination's tree in memory.
type Publisher struct {
	Log *Log
	// Tree is what the destination holds.
	Tree render.Tree
	// Err fails the publish; with PartialWrite the first half of the new
	// files is written first.
	Err          error
	PartialWrite bool
	// Writes counts the publishes that changed Tree.
	Writes int
	// StageName defaults to "fake".
	StageName string
	// Options are those of the last publish.
	Options publish.Options
}

// Stage is StageName, or "fake".
func (p *Publisher) Stage() string { return cmp.Or(p.StageName, "fake") }

// Class is ClassGit.
func (p *Publisher) Class() failure.Class { return failure.ClassGit }

// Publish replaces Tree with the render (not for a dry run).
func (p *Publisher) Publish(_ context.Context, res *render.Result, o publish.Options) (*publish.Published, changeset.Result, error) {
	p.Log.add("publish", o.DryRun)
	p.Options = o
	before := p.Tree
	after := res.Tree(before)
	cs := res.Compare(before, after)
	pub := &publish.Published{Before: before, After: after, Where: "memory"}
	if p.Err != nil {
		if p.PartialWrite && !o.DryRun {
			half := render.Tree{}
			n := 0
			for k, v := range after {
				if n%2 == 0 {
					half[k] = v
				}
				n++
			}
			p.Tree, p.Writes, pub.After, pub.Wrote = half, p.Writes+1, half, true
			return pub, changeset.Result{Changes: cs}, p.Err
		}
		return nil, changeset.Result{Changes: cs}, p.Err
	}
	if !o.DryRun && !after.Equal(before) {
		p.Tree, pub.Wrote, pub.Ref = after, true, fmt.Sprintf("commit-%d", p.Writes+1)
		p.Writes++
	}
	return pub, changeset.Result{Changes: cs}, nil
}

// Identities counts the reconciliations that would write.
type Identities struct {
	Log *Log
	Err error
	// Skips is the number of skip entries (users missing) each run reports.
	Skips int
	// Waiting is what each run reports as not in place; with Err set, every
	// rendered resource waits.
	Waiting map[waldur.UUID]string
	// Writes counts the reconciliations made (not dry runs).
	Writes int
}

// Reconcile reports one group per rendered tenant.
func (i *Identities) Reconcile(_ context.Context, res *render.Result, _ func(waldur.UUID) bool, o engine.IdentityOptions) (*engine.IdentityResult, error) {
	i.Log.add("identities.reconcile", o.DryRun)
	if i.Err != nil {
		waiting := map[waldur.UUID]string{}
		for _, t := range res.Tenants {
			waiting[t.Resource] = "the realm failed"
		}
		return &engine.IdentityResult{Waiting: waiting}, i.Err
	}
	r := &engine.IdentityResult{Waiting: i.Waiting}
	for _, t := range res.Tenants {
		r.Changes.Add(changeset.Entry{Stage: "keycloak", Kind: "KeycloakGroup", Subject: "/" + t.Name, Action: changeset.Unchanged})
	}
	for n := range i.Skips {
		r.Changes.Add(changeset.Entry{Stage: "keycloak", Kind: "KeycloakMembership", Subject: fmt.Sprintf("/missing-%d", n), Action: changeset.Skip, Reason: "user not found", Cause: changeset.CauseUserNotFound})
	}
	if !o.DryRun {
		i.Writes++
	}
	return r, nil
}

// Validator fails with Err.
type Validator struct {
	Log *Log
	Err error
}

// Validate records the call.
func (v *Validator) Validate(context.Context, *render.Result) (changeset.Result, error) {
	v.Log.add("validate", false)
	return changeset.Result{}, v.Err
}

// Quotas returns Holds, and fails with Err.
type Quotas struct {
	Log   *Log
	Holds render.QuotaHolds
	Err   error
}

// Check records the call.
func (q *Quotas) Check(context.Context, *waldur.State, *render.Result) (*engine.QuotaResult, error) {
	q.Log.add("quotas.check", false)
	return &engine.QuotaResult{Holds: q.Holds}, q.Err
}

// Offboarding is the deletion workflow's fake: Claim gives Leaving to the
// guard, Prove reports Records.
type Offboarding struct {
	Log     *Log
	Leaving map[string]string
	Records []report.Offboard
	// Proved is what the last Prove was given.
	Proved *publish.Published
}

// Claim records the call and returns Leaving.
func (f *Offboarding) Claim(_ context.Context, _ *waldur.State, dryRun bool) (changeset.Result, map[string]string, error) {
	f.Log.add("offboarding.claim", dryRun)
	return changeset.Result{}, f.Leaving, nil
}

// Prove records the call and returns Records.
func (f *Offboarding) Prove(_ context.Context, _ *render.Result, pub *publish.Published, dryRun bool) (changeset.Result, []report.Offboard, error) {
	f.Log.add("offboarding.prove", dryRun)
	f.Proved = pub
	return changeset.Result{}, f.Records, nil
}

// Capacity is the capacity seam: Report records the call and returns Lines
// and Err.
type Capacity struct {
	Log   *Log
	Lines []report.PoolLine
	Err   error
}

// Report records the call.
func (c *Capacity) Report(context.Context, *render.Result) (changeset.Result, []report.PoolLine, error) {
	c.Log.add("capacity.report", false)
	return changeset.Result{}, c.Lines, c.Err
}
