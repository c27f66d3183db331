// Package orders closes the loop with Waldur's order workflow from the desired
// state in Git, in two steps around the commit:
//
//   - Approve runs before the render that is committed. It decides the
//     pending-provider orders: with auto-approve (the default) every order whose
//     resource renders is approved and every order whose resource cannot be
//     rendered is rejected with a comment naming the problem; Terminate orders
//     are always approved. Validity is learnt from a probe render of the state
//     in which every pending Create, Restore and Update order counts as
//     executing, so the probe sees exactly what the committed render will see.
//     Approved orders are then read back into the state, so that the render that
//     follows (and the commit) already contains their tenants. Without
//     auto-approve orders are left for a person and only reported.
//   - Finish runs after the push. An executing order is set done only when the
//     pushed tree carries its effect: for Create, Restore and Update every file
//     rendered for the resource, byte for byte (Create and Restore first get the
//     tenant's backend id), for Terminate no tenant directory of the resource
//     any more. An executing order whose resource failed validation is set
//     erred with a message and a traceback naming the problem. Every order is
//     read again first and only moved while it is still executing. With
//     order_done_on: applied the step also waits, for a bounded time, until the
//     cluster shows the tenant's namespace with the rendered quota.
//
// Nothing is ever marked done before its effect is durable in Git, so a run
// that dies anywhere leaves Waldur consistent and the next run, which renders
// the same tenants and finds them already pushed, finishes the job. Marking an
// order done twice is harmless: the second run finds it done and leaves it.
//
// Every decision is a changeset entry (stage "approve" or "orders", kind "Order") so that
// the run report lists every transition and every order left waiting.
//
// A Site builds each step's Stage from the config (site.go): the offerings
// with the run's Waldur clients and, for order_done_on: applied, their
// clusters, and the Flux or Argo CD consumers Finish waits for.
package orders

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waldur/waldur-gitops/capacity"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// Stages and Kind of the entries this package produces: Approve's are in
// stage "approve", Finish's in stage "orders", as the run report names them.
const (
	ApproveStage = "approve"
	FinishStage  = "orders"
	EntryKind    = "Order"
)

// Waldur is the part of the Waldur client the order steps use; *waldur.Client
// implements it. Transient errors (transport, 429, 5xx) are expected to be
// retried inside it.
type Waldur interface {
	GetOrder(ctx context.Context, order waldur.UUID) (*waldur.Order, error)
	GetResource(ctx context.Context, resource waldur.UUID) (*waldur.Resource, error)
	ApproveOrder(ctx context.Context, order waldur.UUID) error
	RejectOrder(ctx context.Context, order waldur.UUID, comment string) error
	SetOrderDone(ctx context.Context, order waldur.UUID) error
	SetOrderErred(ctx context.Context, order waldur.UUID, message, traceback string) error
	SetResourceBackendID(ctx context.Context, resource waldur.UUID, backendID string) error
	SetResourceLimits(ctx context.Context, resource waldur.UUID, limits waldur.Limits) error
}

var _ Waldur = (*waldur.Client)(nil)

// Offering is one configured offering as the order steps see it.
type Offering struct {
	// Name is the offering's config name (the key of its Waldur state).
	Name string
	// Dir is the offering's directory name, used in entry subjects.
	Dir string
	// Waldur is the offering's Waldur client.
	Waldur Waldur
	// AutoApprove decides pending-provider orders; off, they are left alone.
	AutoApprove bool
	// DoneOn is config.DoneOnCommit or config.DoneOnApplied.
	DoneOn string
	// DoneTimeout bounds one run's wait for DoneOnApplied.
	DoneTimeout time.Duration
	// ApplyTimeout errs, with DoneOnApplied, an order the cluster still does
	// not show this long after it was created (0: never).
	ApplyTimeout time.Duration
	// Cluster is read for DoneOnApplied; required then.
	Cluster Cluster
}

// OfferingFromConfig fills an Offering from its config; the client and the
// cluster are the caller's.
func OfferingFromConfig(o *config.Offering, w Waldur, cluster Cluster) *Offering {
	return &Offering{
		Name: o.Name, Dir: o.DirName(), Waldur: w, AutoApprove: o.AutoApproves(),
		DoneOn: o.OrderDoneOn, DoneTimeout: time.Duration(o.DoneTimeoutSeconds()) * time.Second, Cluster: cluster,
	}
}

// Stage runs the order steps for the configured offerings.
type Stage struct {
	// Offerings in config order.
	Offerings []*Offering
	// DryRun changes nothing in Waldur: Approve still marks the orders it would
	// approve as executing in the state (so a dry-run render shows their
	// tenants), Finish only reports.
	DryRun bool
	// Refused maps the resources whose objects the destination refused (a
	// direct apply the API server rejected) to the reason: Finish errs their
	// executing orders with it.
	Refused map[waldur.UUID]string
	// Waiting maps the resources whose tenant is published but not usable
	// yet (its Keycloak groups are not in place) to why: Finish leaves their
	// Create, Update and Restore orders executing, and a later run finishes them.
	Waiting map[waldur.UUID]string
	// Reviewing maps the resources whose change waits on a review branch
	// to why (the branch): Finish leaves their orders executing with that
	// reason until the change reaches the branch it pushes to.
	Reviewing map[waldur.UUID]string
	// Held maps the resources whose published change is not usable yet
	// (a shard not shipped) to why: their orders wait as reviewed ones do,
	// and a resource in both waits on its review.
	Held map[waldur.UUID]string
	// Flux, when set, makes order_done_on: applied also wait for the Flux
	// shard Kustomization of the tenant to report the pushed revision applied.
	Flux *Flux
	// Argo, when set, makes order_done_on: applied also wait for the
	// tenant's Argo CD Applications to be Synced at ArgoCommit and Healthy
	// (in the per-shard form, its shards' Applications at their branches'
	// tips; Site.Consumers sets that up).
	Argo       *ArgoCD
	ArgoCommit string
	// Capacity, when set, keeps orders that would oversell their pool from
	// approval (package capacity).
	Capacity *capacity.Site
	// Log receives progress (nil: discarded).
	Log *slog.Logger
	// PollInterval is the pause between cluster checks (default 5s).
	PollInterval time.Duration
	// Now and Sleep are the clock, replaceable in tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

func (s *Stage) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func (s *Stage) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Stage) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Stage) pollInterval() time.Duration {
	if s.PollInterval <= 0 {
		return 5 * time.Second
	}
	return s.PollInterval
}

// counting wraps a Waldur client and counts calls by kind for the run report.
type counting struct {
	w     Waldur
	mu    *sync.Mutex
	calls map[string]int
}

func (c counting) add(kind string) {
	c.mu.Lock()
	c.calls[kind]++
	c.mu.Unlock()
}

func (c counting) GetOrder(ctx context.Context, o waldur.UUID) (*waldur.Order, error) {
	c.add(waldur.KindOrderGet)
	return c.w.GetOrder(ctx, o)
}

func (c counting) GetResource(ctx context.Context, r waldur.UUID) (*waldur.Resource, error) {
	c.add(waldur.KindResourceGet)
	return c.w.GetResource(ctx, r)
}

func (c counting) ApproveOrder(ctx context.Context, o waldur.UUID) error {
	c.add(waldur.KindOrderApprove)
	return c.w.ApproveOrder(ctx, o)
}

func (c counting) RejectOrder(ctx context.Context, o waldur.UUID, comment string) error {
	c.add(waldur.KindOrderReject)
	return c.w.RejectOrder(ctx, o, comment)
}

func (c counting) SetOrderDone(ctx context.Context, o waldur.UUID) error {
	c.add(waldur.KindOrderDone)
	return c.w.SetOrderDone(ctx, o)
}

func (c counting) SetOrderErred(ctx context.Context, o waldur.UUID, msg, tb string) error {
	c.add(waldur.KindOrderErred)
	return c.w.SetOrderErred(ctx, o, msg, tb)
}

func (c counting) SetResourceBackendID(ctx context.Context, r waldur.UUID, id string) error {
	c.add(waldur.KindResourceBackendID)
	return c.w.SetResourceBackendID(ctx, r, id)
}

func (c counting) SetResourceLimits(ctx context.Context, r waldur.UUID, l waldur.Limits) error {
	c.add(waldur.KindResourceLimits)
	return c.w.SetResourceLimits(ctx, r, l)
}

// run is the bookkeeping of one step: entries, call counts, failures.
type run struct {
	s        *Stage
	stage    string
	cs       changeset.Set
	mu       sync.Mutex
	calls    map[string]int
	failures []string
}

func (s *Stage) newRun(stage string) *run { return &run{s: s, stage: stage, calls: map[string]int{}} }

func (r *run) client(o *Offering) Waldur { return counting{w: o.Waldur, mu: &r.mu, calls: r.calls} }

func (r *run) add(o *Offering, ord *waldur.Order, resource waldur.UUID, tenant string, a changeset.Action, reason string) {
	r.cs.Add(changeset.Entry{
		Stage: r.stage, Kind: EntryKind, Subject: subject(ord, tenant), Action: a,
		Offering: o.Name, Resource: string(resource), Orders: []string{string(ord.UUID)}, Reason: reason,
	})
}

// skip adds a skipped entry with its cause.
func (r *run) skip(o *Offering, ord *waldur.Order, resource waldur.UUID, tenant, reason string, cause changeset.Cause) {
	r.add(o, ord, resource, tenant, changeset.Skip, reason)
	e := &r.cs.Entries[len(r.cs.Entries)-1]
	e.Cause, e.Since = cause, ord.Created
}

func (r *run) fail(o *Offering, ord *waldur.Order, resource waldur.UUID, tenant, what string, err error) {
	reason := fmt.Sprintf("failed to %s: %v", what, err)
	r.skip(o, ord, resource, tenant, reason, changeset.CauseAPIFailure)
	r.failures = append(r.failures, fmt.Sprintf("order %s: %s", ord.UUID, reason))
	r.s.log().Error("order transition failed", "offering", o.Name, "order", string(ord.UUID), "type", ord.Type, "action", what, "error", err)
}

// subject names an order in entries: "<uuid> <type> <tenant>".
func subject(o *waldur.Order, tenant string) string {
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", o.UUID, o.Type, tenant))
}

// sortedOrders returns the indexes of the offering's orders in state, in
// (created, uuid) order.
func sortedOrders(st *waldur.OfferingState, state string) []int {
	var idx []int
	for i := range st.Orders {
		if st.Orders[i].State == state {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := &st.Orders[a], &st.Orders[b]
		return cmp.Or(x.Created.Compare(y.Created), cmp.Compare(x.UUID, y.UUID))
	})
	return idx
}

func findResource(st *waldur.OfferingState, id waldur.UUID) *waldur.Resource {
	for i := range st.Resources {
		if st.Resources[i].UUID == id {
			return &st.Resources[i]
		}
	}
	return nil
}

// resourceLabel names a resource that has no tenant: its slug, else its UUID.
func resourceLabel(o *Offering, r *waldur.Resource, id waldur.UUID) string {
	if r != nil && r.Slug != "" {
		return o.Dir + "/" + r.Slug
	}
	return o.Dir + "/" + string(id)
}

// refresh reads an order (and its resource) back into the state after a
// transition; on a failed read it applies the expected state instead, so that
// the render that follows sees the transition either way.
func (r *run) refresh(ctx context.Context, w Waldur, st *waldur.OfferingState, i int, expected string) {
	ord := &st.Orders[i]
	if got, err := w.GetOrder(ctx, ord.UUID); err == nil {
		*ord = *got
	} else {
		r.s.log().Warn("could not read the order back; assuming its new state", "order", string(ord.UUID), "state", expected, "error", err)
		ord.State = expected
	}
	res := findResource(st, ord.MarketplaceResourceUUID)
	if res == nil {
		return
	}
	if got, err := w.GetResource(ctx, res.UUID); err == nil {
		*res = *got
	} else {
		r.s.log().Warn("could not read the resource back", "resource", string(res.UUID), "error", err)
	}
}

// finishErr summarises failures as the step's error.
func (r *run) finishErr(step string) error {
	if len(r.failures) == 0 {
		return nil
	}
	const shown = 3
	msg := strings.Join(r.failures[:min(shown, len(r.failures))], "; ")
	if len(r.failures) > shown {
		msg += fmt.Sprintf("; and %d more", len(r.failures)-shown)
	}
	return fmt.Errorf("%s: %d order(s) could not be moved: %s", step, len(r.failures), msg)
}
