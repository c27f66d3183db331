package keycloak

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/causes"
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
	// Held maps the resources whose Git change waits for a person (on a
	// review branch) to why: until it is merged their groups lose no member
	// and are not deleted, so that Keycloak takes nothing away that Git
	// still grants. Members are still added.
	Held map[waldur.UUID]string
	// Connect opens the client of a target; nil: NewClient with ClientOptions.
	// Tests and the dry-run printer can hand in their own.
	Connect func(Target) (*Client, error)
	// ClientOptions are passed to NewClient when Connect is nil.
	ClientOptions ClientOptions
	// Log gets a line per realm; nil: no logging.
	Log *slog.Logger
	// Memory, when set, is what earlier passes found: a pass trusts it where
	// it may and leaves what it found in it (see Memory). nil: every pass
	// reads every group.
	Memory *Memory
	// Resources, when set, limits the pass to the groups of these resources
	// (a run triggered for some tenants): only their groups are read and
	// changed. Without a memory of the realm the pass is a full one.
	Resources []waldur.UUID
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
	// RunInterval is how often the runs come (orders.run_interval, serve's
	// --interval): a pass from a memory read from its store re-reads at
	// least the share of verify_every that one interval is, whatever the
	// memory says of its last pass. 0: the config's orders.run_interval.
	RunInterval time.Duration
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
	// MissingUsers and FailedUsers gather those of every plan (Plan):
	// offering username → why it is not a member.
	MissingUsers, FailedUsers map[string]string
	// RefusedUsers gathers those of every plan: offering username → the
	// refusal of a membership removal.
	RefusedUsers map[string]string
}

// Reconcile makes the Keycloak groups and memberships of every realm the
// config names match res: for each realm it reads once, plans, and unless
// DryRun carries the plan out. A realm that fails does not stop the others;
// the error names every realm that failed. With no offering that has
// keycloak_enabled it does nothing and calls nobody.
func Reconcile(ctx context.Context, cfg *config.Config, res *render.Result, o Options) (*Result, error) {
	out := &Result{Calls: map[string]int{}, MissingUsers: map[string]string{}, FailedUsers: map[string]string{}, RefusedUsers: map[string]string{}}
	targets := Targets(cfg)
	if len(targets) == 0 {
		return out, nil
	}
	if o.RunInterval == 0 {
		o.RunInterval = cfg.Orders.Every()
	}
	rendered := map[waldur.UUID]bool{}
	for _, t := range res.Tenants {
		rendered[t.Resource] = true
	}
	var errs []error
	for _, t := range targets {
		start := time.Now()
		plan, calls, how, err := reconcileTarget(ctx, t, res, rendered, o)
		for k, v := range calls {
			out.Calls[k] += v
		}
		if plan != nil {
			out.Plans = append(out.Plans, plan)
			out.Changes.Merge(plan.Changes)
			maps.Copy(out.MissingUsers, plan.MissingUsers)
			maps.Copy(out.FailedUsers, plan.FailedUsers)
			maps.Copy(out.RefusedUsers, plan.RefusedUsers)
		}
		if err != nil {
			err = fmt.Errorf("keycloak %s: %w", t, err)
			errs = append(errs, err)
			if plan == nil {
				out.Changes.Add(changeset.Entry{Stage: Stage, Kind: KindRealm, Subject: t.String(), Action: changeset.Skip, Reason: "failed: " + err.Error(), Cause: changeset.CauseRealmFailure})
			}
		}
		if o.Log != nil {
			args := []any{"realm", t.String(), "dry_run", o.DryRun, "pass", how, "duration", time.Since(start).Round(time.Millisecond).String(), "calls", Total(calls), "write_attempts", WriteAttempts(calls), "writes", Writes(calls)}
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
	return out, causes.Join(errs...)
}

// PlanChanges is Reconcile without writes: the change set of what a run would
// do, for render --dry-run and sync --dry-run to show next to the manifest
// diff, and the calls it took to find out.
func PlanChanges(ctx context.Context, cfg *config.Config, res *render.Result, o Options) (changeset.Result, error) {
	o.DryRun = true
	r, err := Reconcile(ctx, cfg, res, o)
	return changeset.Result{Changes: r.Changes, Calls: r.Calls}, err
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

// reconcileTarget reads, plans and carries out one target; how says how the
// realm was read, for the log.
func reconcileTarget(ctx context.Context, t Target, res *render.Result, rendered map[waldur.UUID]bool, o Options) (*Plan, map[string]int, string, error) {
	connect := o.Connect
	if connect == nil {
		connect = func(t Target) (*Client, error) { return NewClient(t, o.ClientOptions) }
	}
	c, err := connect(t)
	if err != nil {
		return nil, nil, "none", err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	p := &targetPass{t: t, o: o, c: c, start: now(), every: t.Settings.VerifyInterval()}
	desired := Desire(t, res.Groups)
	p.recallMemory(ctx)
	var scopedWants []DesiredGroup
	if len(o.Resources) > 0 {
		p.scope = map[waldur.UUID]bool{}
		for _, r := range o.Resources {
			p.scope[r] = true
		}
		scopedWants = scoped(desired, p.scope)
	}
	if err := p.readEvents(ctx); err != nil {
		return nil, c.Calls(), "remembered", err
	}
	in := PlanInput{
		Target: t, Desired: desired, Rendered: rendered, Skipped: res.Skipped,
		Terminations: res.Terminations, InGit: o.InGit, Held: o.Held, NoDelete: o.NoDelete, Guard: o.Guard, Known: res.Known,
	}
	p.how = "full (" + p.why + ")"
	var plan *Plan
	if p.mem != nil {
		if plan, err = p.planRemembered(ctx, &in, desired, scopedWants); err != nil {
			return nil, c.Calls(), p.how, err
		}
	}
	if p.mem == nil {
		p.how += p.evNote
		p.actual, err = Observe(ctx, c, desired)
		if err != nil {
			return nil, c.Calls(), p.how, err
		}
		in.Actual = p.actual
		plan, err = MakePlan(in)
	}
	if err != nil || o.DryRun {
		if err == nil {
			p.remember(ctx, nil, plan)
		}
		return plan, c.Calls(), p.how, err
	}
	x, err := execute(ctx, c, plan)
	plan.Changes, plan.FailedUsers, plan.RefusedUsers = x.out, x.failed, x.refused
	p.remember(ctx, x, plan)
	return plan, c.Calls(), p.how, err
}

// targetPass is what the steps of one target's pass share: the realm's
// memory and why there is none, the scope of a run for some resources, what
// the admin events say changed since the last pass, and how the realm was
// read.
type targetPass struct {
	t     Target
	o     Options
	c     *Client
	start time.Time
	every time.Duration

	mem   *realmMemory
	why   string
	scope map[waldur.UUID]bool

	eventsFrom int64
	eventsRead time.Time
	changed    []string
	evNote     string

	actual *Actual
	rc     *recall
	how    string
}

// recallMemory takes the realm's memory, or says why there is none.
func (p *targetPass) recallMemory(ctx context.Context) {
	switch {
	case p.o.Memory != nil && p.every > 0:
		var warn string
		p.mem, p.why, warn = p.o.Memory.take(ctx, p.t, p.start)
		if warn != "" && p.o.Log != nil {
			p.o.Log.Warn(warn, "realm", p.t.String())
		}
	case p.o.Memory != nil:
		p.why = "keycloak.verify_every is 0"
	default:
		p.why = "no memory"
	}
}

// readEvents finds what changed since the last pass from the realm's admin
// events (not in a run for some resources: the next full one reads them),
// dropping the memory when the events cannot tell.
func (p *targetPass) readEvents(ctx context.Context) error {
	if p.o.Memory == nil || p.every <= 0 || p.scope != nil {
		return nil
	}
	ev := adminEventsOf(ctx, p.c)
	if err := p.checkStoredEvents(ctx, ev); err != nil {
		return err
	}
	if p.mem != nil && ev.usable && p.mem.EventsFrom > 0 {
		switch {
		case ev.retention > 0 && p.start.Sub(p.mem.EventsRead) > ev.retention/2:
			p.mem, p.why = nil, "the admin events since the last pass may have expired"
		default:
			changed, newest, n, err := changedSince(ctx, p.c, p.mem, p.mem.EventsFrom)
			p.changed = changed
			switch {
			case errors.Is(err, errTooManyEvents):
				p.mem, p.why = nil, err.Error()
			case IsForbidden(err):
				ev = realmEvents{why: err.Error()}
			case err != nil:
				return err
			default:
				p.eventsFrom = newest + 1
				p.evNote = fmt.Sprintf("; %d admin event(s) by others, touching %d remembered group(s)", n, len(changed))
			}
		}
	}
	if ev.usable && p.eventsFrom == 0 {
		// From now on: the events of this pass and later are read by the next.
		newest, err := newestEvent(ctx, p.c)
		switch {
		case IsForbidden(err):
			ev = realmEvents{why: err.Error()}
		case err != nil:
			return err
		default:
			p.eventsFrom = newest + 1
		}
	}
	if !ev.usable {
		p.evNote = "; admin events not used: " + ev.why
		if ev.failed && p.mem != nil {
			p.eventsFrom, p.eventsRead = p.mem.EventsFrom, p.mem.EventsRead
		}
	}
	return nil
}

// checkStoredEvents drops a memory read from a store whose admin-event
// position lies after the realm's newest event: no pass of waldur-gitops
// leaves that, and trusting it would skip the changes made since.
func (p *targetPass) checkStoredEvents(ctx context.Context, ev realmEvents) error {
	if p.mem == nil || !p.mem.stored || !ev.usable || p.mem.EventsFrom <= 0 {
		return nil
	}
	newest, err := newestEvent(ctx, p.c)
	switch {
	case IsForbidden(err):
		return nil // the events are not read below either
	case err != nil:
		return err
	case p.mem.EventsFrom > newest+1:
		p.mem, p.why = nil, "the remembered admin-event position is after the realm's newest event"
	}
	return nil
}

// lastPass is when the last pass began, for the rotation's share: a memory
// read from a store cannot make it later than one run interval ago, so that
// every pass from it re-reads at least the share of its schedule.
func (p *targetPass) lastPass() time.Time {
	last := p.mem.LastPass
	if p.mem.stored && p.o.RunInterval > 0 && p.start.Sub(last) < p.o.RunInterval {
		last = p.start.Add(-p.o.RunInterval)
	}
	return last
}

// planRemembered plans from the realm's memory. Nothing is written on the
// strength of the memory: the groups the plan would change are read again,
// and the plan made again. When the plan cannot be made that way it drops
// the memory and returns no plan and no error, for a full read.
func (p *targetPass) planRemembered(ctx context.Context, in *PlanInput, desired, scopedWants []DesiredGroup) (*Plan, error) {
	if p.scope != nil {
		in.Desired = scopedWants
	}
	rc, err := observeRemembered(ctx, p.c, in.Desired, p.mem, p.scope, p.lastPass(), p.start, p.every, p.changed)
	if err != nil {
		p.how = "remembered"
		return nil, err
	}
	p.rc = rc
	p.how = fmt.Sprintf("remembered (%d of %d groups re-read for the %s bound%s)", rc.verified, len(p.mem.Groups), p.every, p.evNote)
	if p.scope != nil {
		p.how = fmt.Sprintf("remembered, for %d resource(s): %d group(s)", len(p.scope), len(rc.covered))
	}
	p.actual = rc.a
	var plan *Plan
	for round := 0; ; round++ {
		in.Actual = p.actual
		plan, err = MakePlan(*in)
		if err != nil {
			// A refusal (the deletion guard) is decided on a full read.
			break
		}
		stale := rc.stale(plan)
		if len(stale) == 0 {
			break
		}
		if round == 3 {
			err = errors.New("the plan kept changing while re-reading")
			break
		}
		if err := rc.reread(ctx, stale); err != nil {
			return nil, err
		}
	}
	if err != nil {
		p.how = "full (" + err.Error() + ")"
		p.mem, p.rc = nil, nil
		in.Desired = desired
		return nil, nil
	}
	return plan, nil
}

// stateSaveTimeout bounds the save of the memory after a pass, which goes
// on when the run's deadline cut the pass.
const stateSaveTimeout = 15 * time.Second

// remember saves what this pass read and did for the next one, when the
// realm has a memory; a dry run keeps it in this process only, never in the
// memory's store.
func (p *targetPass) remember(ctx context.Context, x *execution, plan *Plan) {
	if p.o.Memory == nil || p.every <= 0 {
		return
	}
	m := remembered{t: p.t, prev: p.mem, a: p.actual, plan: plan, x: x, start: p.start, eventsFrom: p.eventsFrom, eventsRead: p.eventsRead}
	if p.rc != nil {
		m.covered, m.scoped = p.rc.covered, p.scope != nil
	}
	// A pass cut by the run's deadline is worth keeping too: the save gets
	// a little time of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateSaveTimeout)
	defer cancel()
	if err := p.o.Memory.put(ctx, m.build(), !p.o.DryRun); err != nil && p.o.Log != nil {
		p.o.Log.Warn("keycloak state not saved; the next run reads every group", "realm", p.t.String(), "error", err.Error())
	}
}

// scoped returns the desired groups of a run for some resources: those of
// the resources, with their parents.
func scoped(desired []DesiredGroup, scope map[waldur.UUID]bool) []DesiredGroup {
	keep := map[string]bool{}
	byPath := map[string]*DesiredGroup{}
	for i := range desired {
		byPath[desired[i].Path] = &desired[i]
	}
	for _, d := range desired {
		if !slices.ContainsFunc(d.Resources, func(r waldur.UUID) bool { return scope[r] }) {
			continue
		}
		for p := d.Path; p != "" && byPath[p] != nil && !keep[p]; p = byPath[p].Parent {
			keep[p] = true
		}
	}
	var out []DesiredGroup
	for _, d := range desired {
		if keep[d.Path] {
			out = append(out, d)
		}
	}
	return out
}
