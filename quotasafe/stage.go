package quotasafe

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// EntryKind is the kind of the quota stage's entries in the run report.
const EntryKind = "QuotaCut"

// Reader reads the ResourceQuotas of a namespace (kube.Reader).
type Reader interface {
	Quotas(ctx context.Context, namespace string) ([]kube.Quota, error)
}

// checkTimeout bounds the reads of one cluster in one run, so that an
// unreachable cluster does not stall the run.
const checkTimeout = 30 * time.Second

// Stage is the quota stage of the cycle (the engine's Quotas seam): for every tenant
// whose executing Update order the render fulfils, it reads the ResourceQuotas
// of the tenant's namespace from the offering's cluster and finds the keys
// the order lowers below their usage. Under quota_shrink: hold they are held
// (render.QuotaHolds: the value in place stays, the order stays executing);
// under allow they are made and reported.
//
// Without access to the cluster (no kubeconfig, unreachable, forbidden) the
// usage is unknown: the cut is made as under allow, and the report says for
// each Update order that lowers a limit that it was not checked.
type Stage struct {
	Offerings []config.Offering
	// Kubeconfig, when set, replaces every offering's kubeconfig keys
	// (apply --kubeconfig).
	Kubeconfig string
	// Open opens a cluster; nil: kube.Open.
	Open func(kube.Source) (Reader, error)
	// CanReview is set when the publisher commits to Git, where a cut
	// under quota_shrink: review waits on a review branch; elsewhere such
	// a cut is held.
	CanReview bool
	Log       *slog.Logger

	readers map[kube.Source]Reader // kept across the runs of serve
}

// candidate is a tenant whose Update order lowers its quota maybe.
type candidate struct {
	tenant *render.Tenant
	res    *waldur.Resource
}

// Check finds the cuts below usage of the render's Update orders.
func (s *Stage) Check(ctx context.Context, st *waldur.State, res *render.Result) (*Result, error) {
	out := &Result{Calls: map[string]int{}}
	for i := range s.Offerings {
		o := &s.Offerings[i]
		ost, ok := st.Offering(o.Name)
		if !ok {
			continue
		}
		cands := candidates(o, ost, res)
		if len(cands) == 0 {
			continue
		}
		if err := s.checkOffering(ctx, o, cands, out); err != nil {
			return out, err
		}
	}
	out.Changes.Sort()
	return out, nil
}

// candidates are the offering's tenants, one per resource, that fulfil an
// executing Update order and have a quota; a paused or downscaled resource's
// cut is meant to stop its workload and is never held.
func candidates(o *config.Offering, ost *waldur.OfferingState, res *render.Result) []candidate {
	updates := map[waldur.UUID]bool{}
	for i := range ost.Orders {
		if ord := &ost.Orders[i]; ord.Type == waldur.OrderUpdate && ord.State == waldur.OrderExecuting {
			updates[ord.UUID] = true
		}
	}
	resources := map[waldur.UUID]*waldur.Resource{}
	for i := range ost.Resources {
		resources[ost.Resources[i].UUID] = &ost.Resources[i]
	}
	seen := map[waldur.UUID]bool{}
	var out []candidate
	for _, t := range res.Tenants {
		r := resources[t.Resource]
		if t.Offering != o.Name || len(t.Quota) == 0 || seen[t.Resource] || r == nil || bool(r.Paused) || bool(r.Downscaled) {
			continue
		}
		for _, id := range t.Orders {
			if updates[id] {
				seen[t.Resource] = true
				out = append(out, candidate{tenant: t, res: r})
				break
			}
		}
	}
	return out
}

func (s *Stage) checkOffering(run context.Context, o *config.Offering, cands []candidate, out *Result) error {
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src := kube.Source{Path: o.Settings.Common().KubeconfigPath, Context: o.Settings.Common().KubeconfigContext}
	if s.Kubeconfig != "" {
		src = kube.Source{Path: s.Kubeconfig}
	}
	ctx, cancel := context.WithTimeout(run, checkTimeout)
	defer cancel()
	r, err := s.reader(src)
	for _, c := range cands {
		subject := path.Join(o.DirName(), c.tenant.Name)
		entry := changeset.Entry{Stage: "quota", Kind: EntryKind, Subject: subject, Offering: o.Name, Resource: string(c.tenant.Resource), Orders: updateOrders(c.tenant)}
		var live []kube.Quota
		if err == nil {
			out.Calls["list"]++
			live, err = r.Quotas(ctx, c.tenant.Name)
		}
		if run.Err() != nil {
			return run.Err() // the run was cancelled
		}
		if err != nil {
			if Lowers(c.res.Limits, c.tenant.Limits) {
				entry.Action, entry.Cause = changeset.Skip, changeset.CauseQuotaUnchecked
				entry.Reason = fmt.Sprintf("the quota cut is not checked against usage and is made: cannot read the cluster %s: %v", src, err)
				out.Changes.Add(entry)
				log.Warn("quota cut not checked against usage", "offering", o.Name, "tenant", subject, "error", err.Error())
			}
			continue
		}
		cuts, cerr := Find(c.tenant.Quota, c.tenant.QuotaName, live, LiveKey(o.BackendType))
		if cerr != nil {
			entry.Action, entry.Reason, entry.Cause = changeset.Skip, "the quota cut is not checked against usage and is made: "+cerr.Error(), changeset.CauseQuotaUnchecked
			out.Changes.Add(entry)
			continue
		}
		if len(cuts) == 0 {
			continue
		}
		switch {
		case o.QuotaShrink == config.QuotaShrinkReview && s.CanReview:
			if out.Review == nil {
				out.Review = map[waldur.UUID]string{}
			}
			why := "quota cut below usage (quota_shrink: review): " + Describe(cuts)
			out.Review[c.tenant.Resource] = why
			entry.Action, entry.Reason, entry.Cause = changeset.Skip, "sent for review: "+why, changeset.CauseAwaitingReview
			log.Info("quota cut sent for review", "offering", o.Name, "tenant", subject, "reason", why)
		case o.QuotaShrink == config.QuotaShrinkAllow:
			entry.Action = changeset.Update
			entry.Reason = "cut below usage, made (quota_shrink: allow): " + Describe(cuts)
			log.Warn("quota cut below usage", "offering", o.Name, "tenant", subject, "cuts", entry.Reason)
		default:
			why := Reason(cuts)
			if out.Holds == nil {
				out.Holds = render.QuotaHolds{}
			}
			out.Holds[c.tenant.Resource] = render.QuotaHold{Keep: Keep(cuts), Reason: why}
			entry.Action, entry.Reason, entry.Cause = changeset.Skip, "held: "+why, changeset.CauseQuotaHeld
			log.Info("quota cut held", "offering", o.Name, "tenant", subject, "reason", why)
		}
		out.Changes.Add(entry)
	}
	return nil
}

// reader opens a cluster once for every run.
func (s *Stage) reader(src kube.Source) (Reader, error) {
	if r, ok := s.readers[src]; ok {
		return r, nil
	}
	open := s.Open
	if open == nil {
		open = func(src kube.Source) (Reader, error) { return kube.Open(src) }
	}
	r, err := open(src)
	if err != nil {
		return nil, err
	}
	if s.readers == nil {
		s.readers = map[kube.Source]Reader{}
	}
	s.readers[src] = r
	return r, nil
}

// updateOrders are the tenant's orders, as strings for an entry.
func updateOrders(t *render.Tenant) []string {
	out := make([]string, len(t.Orders))
	for i, id := range t.Orders {
		out[i] = string(id)
	}
	return out
}

// Result is what the quota stage found.
type Result struct {
	// Holds are the quota values to keep while usage is above a cut.
	Holds render.QuotaHolds
	// Review are the resources whose cut below usage goes to a review
	// branch (quota_shrink: review), with why (render.Result.Review).
	Review  map[waldur.UUID]string
	Changes changeset.Set
	Calls   map[string]int
}
