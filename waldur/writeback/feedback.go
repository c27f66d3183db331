package writeback

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Entry kinds of the feedback stage (not "Resource": the verdict counts
// those as skipped resources).
const (
	KindResourceState    = "ResourceState"
	KindMembershipStatus = "MembershipStatus"
)

// ResourceFeedback is the feedback stage (the engine's Feedback seam): it tells Waldur what the run found
// out about every resource of the offerings it read, with the clients of the
// run's source.API. It writes only what changes something in Waldur:
//
//   - set_as_ok for an Erred resource whose tenant is published (and whose
//     Keycloak groups are in place);
//   - set_as_erred, with the reason, for an OK resource that cannot be
//     rendered or whose objects the destination refused; never more at once
//     than the deletion guard allows (Options.Guard);
//   - set_backend_metadata when where the tenant lives differs from what
//     Waldur holds;
//   - refresh_last_sync when Waldur's last_sync is older than LastSyncInterval;
//   - set_membership_sync_statuses (Waldur 8.1.0+, offerings with
//     enable_membership_sync_status) when a resource's statuses differ from
//     those this process sent last.
type ResourceFeedback struct {
	Source    Clients
	Offerings []config.Offering
	// LastSyncInterval is orders.last_sync_interval.
	LastSyncInterval time.Duration
	// RunInterval is how often a run starts (orders.run_interval, or
	// serve's --interval): refresh_last_sync is budgeted by it.
	RunInterval time.Duration
	// Writers bounds the writes of an offering in flight at once
	// (orders.write_concurrency; zero: config.DefaultWriteConcurrency).
	Writers int
	// Missing, when set, returns the members the identity stage did not find
	// in the identity provider in this run: offering username → why.
	Missing func() map[string]string
	// Failed, when set, returns the members whose membership the identity
	// stage could not write, with the error: their state is error.
	Failed func() map[string]string
	Log    *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time

	sent map[waldur.UUID]string // resource → membership statuses last sent
}

// Report sends the write-backs of one run; with opts.DryRun it sends nothing
// and its entries say what would be sent. The writes of an offering go out
// Writers at a time; refresh_last_sync is spread (lastSyncPlan). Entries
// come in the order of the offerings and resources, however the writes
// interleave.
func (f *ResourceFeedback) Report(ctx context.Context, st *waldur.State, res *render.Result, pub *Published, waiting map[waldur.UUID]string, opts Options) (changeset.Result, error) {
	var cs changeset.Set
	calls := map[string]int{}
	if st == nil || res == nil || pub == nil {
		return changeset.Result{Changes: cs, Calls: calls}, nil
	}
	run := &feedbackRun{f: f, st: st, pub: pub, waiting: waiting, dryRun: opts.DryRun, now: f.clock()(),
		tenants: map[waldur.UUID]*render.Tenant{}, changed: changedDirs(pub)}
	for _, t := range res.Tenants {
		run.tenants[t.Resource] = t
	}
	run.missing, run.failed = f.identityTrouble()
	var refused *changeset.Entry
	run.toErr, refused = f.erring(st, res, pub, opts.Guard)
	if refused != nil {
		cs.Add(*refused)
	}
	var firstErr error
	for i := range f.Offerings {
		o := &f.Offerings[i]
		os, ok := st.Offering(o.Name)
		if !ok {
			continue
		}
		c, err := f.Source.Client(o)
		if err != nil {
			return changeset.Result{Changes: cs, Calls: calls}, fmt.Errorf("feedback for offering %q: %w", o.Name, err)
		}
		if !c.Supports(ctx, waldur.FeatureResourceFeedback) {
			continue
		}
		ws := run.offering(ctx, c, o, os)
		if err := f.send(ctx, ws, run.dryRun, &cs, calls); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return changeset.Result{Changes: cs, Calls: calls}, firstErr
}

func (f *ResourceFeedback) clock() func() time.Time {
	if f.Now != nil {
		return f.Now
	}
	return time.Now
}

// feedbackRun is what one Report decides from: the state, the render and
// the publish, read once.
type feedbackRun struct {
	f               *ResourceFeedback
	st              *waldur.State
	pub             *Published
	waiting         map[waldur.UUID]string
	dryRun          bool
	now             time.Time
	tenants         map[waldur.UUID]*render.Tenant
	changed         map[string]bool
	missing, failed map[string]string
	toErr           map[*waldur.Resource]string
}

// offering lists the writes one offering's resources need, in order.
func (run *feedbackRun) offering(ctx context.Context, c *waldur.Client, o *config.Offering, os *waldur.OfferingState) []*write {
	statuses := c.Supports(ctx, waldur.FeatureMembershipSyncStatus)
	var byUser map[waldur.UUID]string // offering usernames, made once per offering
	var ws []*write
	members := func(r *waldur.Resource, state, why string) {
		if byUser == nil {
			byUser = offeringUsernames(os)
		}
		if w := run.f.memberStatuses(ctx, c, o, os, byUser, r, state, why, run.missing, run.failed); w != nil {
			ws = append(ws, w)
		}
	}
	add := func(kind string, r *waldur.Resource, action, reason string, send func() error) {
		ws = append(ws, &write{kind: kind, send: send, what: "feedback for resource " + string(r.UUID),
			entry: changeset.Entry{Stage: "feedback", Kind: KindResourceState, Subject: r.Name + " " + action, Action: changeset.Update,
				Offering: o.Name, Resource: string(r.UUID), Reason: reason}})
	}
	var lastSync []lastSyncDue
	for j := range os.Resources {
		r := &os.Resources[j]
		if why, ok := run.toErr[r]; ok {
			add(waldur.KindResourceErred, r, "set_as_erred", why, func() error { return c.SetResourceErred(ctx, r.UUID, why) })
			continue
		}
		t := run.tenants[r.UUID]
		if t == nil || !run.pub.hasTenant(t) {
			continue
		}
		if _, refused := run.pub.Failed[r.UUID]; refused {
			continue
		}
		if why, wait := run.waiting[r.UUID]; wait {
			if statuses && bool(pluginOn(r)) {
				members(r, waldur.MemberPending, why)
			}
			continue
		}
		if r.State == waldur.ResourceErred {
			add(waldur.KindResourceOK, r, "set_as_ok", "its tenant is published", func() error { return c.SetResourceOK(ctx, r.UUID) })
		}
		meta := metadata(t, render.ClusterKey(o, path.Base(path.Dir(t.Dir))), run.pub, run.changed[t.Dir], r.BackendMetadata)
		if !sameMetadata(meta, r.BackendMetadata) {
			add(waldur.KindResourceMetadata, r, "set_backend_metadata", metadataText(meta), func() error { return c.SetResourceBackendMetadata(ctx, r.UUID, meta) })
		}
		if over, due := run.f.lastSyncDue(r, run.now); due {
			add(waldur.KindResourceLastSync, r, "refresh_last_sync", "", func() error { return c.RefreshResourceLastSync(ctx, r.UUID) })
			lastSync = append(lastSync, lastSyncDue{w: ws[len(ws)-1], over: over})
		}
		if statuses && bool(pluginOn(r)) {
			members(r, waldur.MemberSynced, "")
		}
	}
	return run.f.budgetLastSync(ws, lastSync, len(os.Resources))
}

func pluginOn(r *waldur.Resource) waldur.Flag {
	if r.OfferingPluginOptions == nil {
		return false
	}
	return r.OfferingPluginOptions.EnableMembershipSyncStatus
}

// offeringUsernames maps the users of an offering to their offering
// usernames, for those that have one.
func offeringUsernames(os *waldur.OfferingState) map[waldur.UUID]string {
	byUser := make(map[waldur.UUID]string, len(os.OfferingUsers))
	for _, u := range os.OfferingUsers {
		if u.Username != "" {
			byUser[u.UserUUID] = u.Username
		}
	}
	return byUser
}

// memberStatuses is the write that reports the state of every team member
// of r: state (synced or pending with why) unless the member has no offering
// user yet (pending), was not found in the identity provider
// (missing_in_idp), or its membership could not be written (error, with the
// message); nil when those statuses were sent already. byUser is
// offeringUsernames of os.
func (f *ResourceFeedback) memberStatuses(ctx context.Context, c *waldur.Client, o *config.Offering, os *waldur.OfferingState, byUser map[waldur.UUID]string, r *waldur.Resource,
	state, why string, missing, failed map[string]string) *write {
	var list []waldur.MemberSyncStatus
	for _, m := range os.Teams[r.ProjectUUID] {
		s := waldur.MemberSyncStatus{ScopeType: "resource", RoleName: m.Role, Username: m.Username, UserUUID: m.UUID, State: state, Message: why}
		name := m.OfferingUserUsername
		if name == "" {
			name = byUser[m.UUID]
		}
		switch {
		case name == "":
			s.State, s.Message = waldur.MemberPending, "no offering user yet"
		case missing[name] != "":
			s.State, s.Message = waldur.MemberMissingInIDP, missing[name]
		case failed[name] != "":
			s.State, s.Message = waldur.MemberError, failed[name]
		}
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b waldur.MemberSyncStatus) int {
		return strings.Compare(a.Username+" "+a.RoleName, b.Username+" "+b.RoleName)
	})
	key := fmt.Sprint(list)
	if f.sent[r.UUID] == key {
		return nil
	}
	counts := map[string]int{}
	for _, s := range list {
		counts[s.State]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return &write{kind: waldur.KindMembershipStatus, what: "membership statuses of resource " + string(r.UUID),
		entry: changeset.Entry{Stage: "feedback", Kind: KindMembershipStatus, Subject: r.Name, Action: changeset.Update,
			Offering: o.Name, Resource: string(r.UUID), Reason: strings.Join(parts, ", ")},
		send: func() error { return c.SetMembershipSyncStatuses(ctx, r.UUID, list) },
		sent: func() {
			if f.sent == nil {
				f.sent = map[waldur.UUID]string{}
			}
			f.sent[r.UUID] = key
		}}
}

// identityTrouble returns the members the identity stage did not find, and
// those whose membership it could not write (Missing, Failed), each to why.
func (f *ResourceFeedback) identityTrouble() (missing, failed map[string]string) {
	if f.Missing != nil {
		missing = f.Missing()
	}
	if f.Failed != nil {
		failed = f.Failed()
	}
	return missing, failed
}

// erring finds, across every offering read and before anything is sent,
// the OK resources to set erred (those the render skipped or the
// destination refused), to why, and asks the guard: when it refuses, none
// is, and the entry says why.
func (f *ResourceFeedback) erring(st *waldur.State, res *render.Result, pub *Published, g guard.Options) (map[*waldur.Resource]string, *changeset.Entry) {
	toErr := map[*waldur.Resource]string{}
	var removals []guard.Removal
	total := 0
	for i := range f.Offerings {
		os, ok := st.Offering(f.Offerings[i].Name)
		if !ok {
			continue
		}
		total += len(os.Resources)
		for j := range os.Resources {
			r := &os.Resources[j]
			if r.State != waldur.ResourceOK {
				continue
			}
			why, skipped := res.Skipped[r.UUID]
			if !skipped {
				why, skipped = pub.Failed[r.UUID]
			}
			if skipped {
				toErr[r] = why
				removals = append(removals, guard.Removal{Kind: guard.Erred, Subject: r.Name, Tenant: string(r.UUID)})
			}
		}
	}
	if err := guard.Check(guard.Erred, removals, guard.Site(total), g); err != nil {
		return nil, &changeset.Entry{Stage: "feedback", Kind: KindResourceState, Subject: "set_as_erred", Action: changeset.Skip, Reason: err.Error(), Cause: changeset.CauseGuardRefused}
	}
	return toErr, nil
}

// changedDirs lists the tenant directories whose files the publish changed.
func changedDirs(pub *Published) map[string]bool {
	out := map[string]bool{}
	dir := func(p string) string {
		parts := strings.SplitN(p, "/", 4)
		if len(parts) < 4 {
			return p
		}
		return strings.Join(parts[:3], "/")
	}
	for p, b := range pub.After {
		if old, ok := pub.Before[p]; !ok || string(old) != string(b) {
			out[dir(p)] = true
		}
	}
	for p := range pub.Before {
		if _, ok := pub.After[p]; !ok {
			out[dir(p)] = true
		}
	}
	return out
}

// metadata is where the tenant lives: its cluster (the kubeconfig and
// context the offering names, "(default)" for client-go's rules), namespace
// and path, and the commit that last changed it (this run's when it changed
// it, else the one Waldur holds).
func metadata(t *render.Tenant, cluster string, pub *Published, changed bool, have map[string]any) map[string]any {
	m := map[string]any{"cluster": cluster, "namespace": t.Name, "path": t.Dir}
	if parts := strings.Split(t.Dir, "/"); len(parts) == 3 {
		m["target"] = parts[1]
	}
	if changed && pub.Ref != "" {
		m["commit"] = pub.Ref
	} else if c, ok := have["commit"].(string); ok && c != "" {
		m["commit"] = c
	}
	return m
}

func sameMetadata(want, have map[string]any) bool {
	if len(want) != len(have) {
		return false
	}
	for k, v := range want {
		if fmt.Sprint(have[k]) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

func metadataText(m map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// Options are the switches of the feedback stage.
type Options struct {
	DryRun bool
	// Guard is the run's removal policy (with --allow-mass-prune when given):
	// it bounds how many resources may be set erred at once.
	Guard guard.Options
}

// Published is what the run's publish did, as feedback reads it
// (publish.Published).
type Published struct {
	// Before and After are the owned tree before the publish and as the
	// destination holds it now.
	Before, After render.Tree
	// Ref is the commit made; empty when none was.
	Ref string
	// Failed maps the resources whose objects the destination refused to why.
	Failed map[waldur.UUID]string
	// In, when set, reports whether a resource's tenant is at the
	// destination; nil: its files are in After, or it is in Failed.
	In func(waldur.UUID) bool

	present map[waldur.UUID]bool
}

// Has reports whether the resource's tenant is at the destination, or was
// refused there.
func (p *Published) Has(id waldur.UUID) bool {
	if p.In != nil {
		return p.In(id)
	}
	if _, failed := p.Failed[id]; failed {
		return true
	}
	if p.present == nil {
		p.present = p.After.ResourceUUIDs()
	}
	return p.present[id]
}

// hasTenant is Has for the resource of a rendered tenant. A destination
// that holds the tenant's kustomization as rendered, which names the
// resource, has it: the other tenants of the tree are not read.
func (p *Published) hasTenant(t *render.Tenant) bool {
	if p.In == nil {
		if got, ok := p.After[t.Dir+"/"+render.KustomizationFile]; ok {
			for _, f := range t.Files {
				if f.Name == render.KustomizationFile && bytes.Equal(f.Data, got) {
					return true
				}
			}
		}
	}
	return p.Has(t.Resource)
}
