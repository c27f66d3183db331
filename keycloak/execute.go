package keycloak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/waldur/waldur-gitops/changeset"
)

// execution is the state of one Execute call.
type execution struct {
	c   *Client
	out changeset.Set

	mu      sync.Mutex
	created map[string]string // path → id of the groups created in this run
	failed  map[string]string // offering username → error, of membership writes
	refused map[string]string // the failed removals Keycloak refused (not unavailable)
	errs    []error
	stop    error // the first sign of Keycloak being unavailable
	skipped int   // operations not attempted after stop
}

// Execute carries a plan out with c: marker updates, creations (parents before
// subgroups), additions, removals, deletions (subgroups before parents), each
// step on the client's concurrency. It returns the plan's changes with every
// operation that failed, or was not attempted, turned into a skip that says
// why. After the first sign that Keycloak is unavailable nothing more is
// attempted; the next run starts over from what Keycloak then has.
func Execute(ctx context.Context, c *Client, p *Plan) (changeset.Set, error) {
	x, err := execute(ctx, c, p)
	return x.out, err
}

// execute is Execute that also returns its state: the ids of the groups it
// created, for the memory.
func execute(ctx context.Context, c *Client, p *Plan) (*execution, error) {
	x := &execution{c: c, out: changeset.Set{Entries: slices.Clone(p.Changes.Entries)}, created: map[string]string{}}
	var steps [][]Op
	var step []Op
	stepOf := func(o Op) string {
		// Groups at one depth are created or deleted together; anything else by kind.
		if o.Kind == OpCreateGroup || o.Kind == OpDeleteGroup {
			return fmt.Sprintf("%s/%d", o.Kind, strings.Count(o.Path, "/"))
		}
		return string(o.Kind)
	}
	ops := slices.Clone(p.Ops)
	// By kind in execution order; creations shallow first, deletions deep first.
	slices.SortStableFunc(ops, func(a, b Op) int {
		if k := kindOrder[a.Kind] - kindOrder[b.Kind]; k != 0 {
			return k
		}
		da, db := strings.Count(a.Path, "/"), strings.Count(b.Path, "/")
		switch a.Kind {
		case OpCreateGroup:
			return da - db
		case OpDeleteGroup:
			return db - da
		}
		return 0
	})
	for i, o := range ops {
		if i > 0 && stepOf(o) != stepOf(ops[i-1]) {
			steps = append(steps, step)
			step = nil
		}
		step = append(step, o)
	}
	if len(step) > 0 {
		steps = append(steps, step)
	}
	for _, s := range steps {
		x.run(ctx, s)
	}
	return x, x.result(p)
}

// run carries out one step's operations in parallel.
func (x *execution) run(ctx context.Context, ops []Op) {
	next := make(chan Op)
	var wg sync.WaitGroup
	for range min(x.c.window.ceiling(), len(ops)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range next {
				x.mu.Lock()
				stop := x.stop
				x.mu.Unlock()
				switch {
				case stop != nil && IsForbidden(stop):
					x.notAttempted(o, "Keycloak refused an earlier call for want of a role")
				case stop != nil:
					x.notAttempted(o, "Keycloak is unavailable")
				case ctx.Err() != nil:
					x.notAttempted(o, ctx.Err().Error())
				default:
					x.apply(ctx, o)
				}
			}
		}()
	}
	for _, o := range ops {
		next <- o
	}
	close(next)
	wg.Wait()
}

// apply carries out one operation and records the outcome.
func (x *execution) apply(ctx context.Context, o Op) {
	var err error
	note := ""
	switch o.Kind {
	case OpUpdateGroup:
		err = x.c.updateGroup(ctx, o.GroupID, o.Name, o.Attributes)
	case OpCreateGroup:
		note, err = x.create(ctx, o)
	case OpAddMember:
		if gid := x.groupID(o); gid == "" {
			err = fmt.Errorf("the group was not created")
		} else {
			err = x.c.addMember(ctx, o.UserID, gid)
		}
	case OpRemoveMember:
		err = x.c.removeMember(ctx, o.UserID, o.GroupID)
	case OpDeleteGroup:
		err = x.c.deleteGroup(ctx, o.GroupID)
	default:
		err = fmt.Errorf("unknown operation %q", o.Kind)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e := &x.out.Entries[o.Entry]
	if err != nil {
		err = fmt.Errorf("%s %s: %w", o.Kind, e.Subject, err)
		e.Action, e.Reason, e.Cause = changeset.Skip, "failed: "+err.Error(), changeset.CauseKeycloakFailed
		if o.Kind == OpAddMember || o.Kind == OpRemoveMember {
			if x.failed == nil {
				x.failed = map[string]string{}
			}
			x.failed[o.Username] = err.Error()
			if o.Kind == OpRemoveMember && !IsUnavailable(err) {
				if x.refused == nil {
					x.refused = map[string]string{}
				}
				x.refused[o.Username] = err.Error()
			}
		}
		x.errs = append(x.errs, err)
		if (IsUnavailable(err) || IsForbidden(err)) && x.stop == nil {
			x.stop = err
		}
		return
	}
	if note != "" {
		e.Reason = note
	}
}

// groupID is the id of the operation's group: known before the run or created in it.
func (x *execution) groupID(o Op) string {
	if o.GroupID != "" {
		return o.GroupID
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.created[o.Path]
}

// create makes a group. A 409 means it exists after all (an earlier attempt
// whose answer was lost, or another run): it is used if it carries the marker,
// and is a conflict otherwise.
func (x *execution) create(ctx context.Context, o Op) (string, error) {
	parentID := o.ParentID
	if o.Parent != "" && parentID == "" {
		x.mu.Lock()
		parentID = x.created[o.Parent]
		x.mu.Unlock()
		if parentID == "" {
			return "", fmt.Errorf("the parent group %s was not created", o.Parent)
		}
	}
	id, retried, err := x.c.createGroup(ctx, parentID, o.Name, o.Attributes)
	note := ""
	if statusOf(err) == 409 {
		kind := CallCreateGroup
		if parentID != "" {
			kind = CallCreateChild
		}
		g, ferr := x.c.findGroup(ctx, parentID, o.Name)
		switch {
		case ferr != nil:
			x.c.count(CallErrorPrefix + kind)
			return "", ferr
		case g == nil:
			x.c.count(CallErrorPrefix + kind)
			return "", err
		case !slices.Contains(g.Attributes[AttrManagedBy], ManagedBy):
			x.c.count(CallErrorPrefix + kind)
			return "", fmt.Errorf("conflict: a group of that name appeared meanwhile without the %s marker; it is left alone", ManagedBy)
		case retried:
			// The earlier attempt made it; its answer was lost on the way.
			x.c.count(CallWritePrefix + kind)
			note = "created by an earlier attempt whose answer was lost"
		default:
			note = "it existed already (made by another run)"
		}
		id, err = g.ID, nil
	}
	if err != nil {
		return "", err
	}
	x.mu.Lock()
	x.created[o.Path] = id
	x.mu.Unlock()
	return note, nil
}

func (x *execution) notAttempted(o Op, why string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := &x.out.Entries[o.Entry]
	e.Action, e.Reason, e.Cause = changeset.Skip, "not attempted: "+why, changeset.CauseNotAttempted
	x.skipped++
}

// result sums the failures up in one error.
func (x *execution) result(p *Plan) error {
	if len(x.errs) == 0 && x.skipped == 0 {
		return nil
	}
	if x.stop != nil && IsForbidden(x.stop) {
		return fmt.Errorf("stopped at the first refusal: %w; %d of %d operations failed or were not attempted",
			x.stop, len(x.errs)+x.skipped, len(p.Ops))
	}
	if x.stop != nil {
		//lint:ignore ST1005 Keycloak is a name; docs/troubleshooting.md quotes this message
		return fmt.Errorf("Keycloak is unavailable: %w; %d of %d operations failed or were not attempted; the next run picks them up",
			x.stop, len(x.errs)+x.skipped, len(p.Ops))
	}
	if len(x.errs) == 0 {
		return fmt.Errorf("%d of %d operations were not attempted", x.skipped, len(p.Ops))
	}
	return fmt.Errorf("%d of %d operations failed: %w", len(x.errs), len(p.Ops), errors.Join(x.errs[:min(len(x.errs), 5)]...))
}
