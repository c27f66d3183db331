package keycloak

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/waldur"
)

// Stage and kinds of the change-set entries this package makes.
const (
	Stage          = "keycloak"
	KindGroup      = "KeycloakGroup"
	KindMembership = "KeycloakMembership"
)

// OpKind is an operation on the realm.
type OpKind string

// The operations, in the order Execute carries them out.
const (
	OpUpdateGroup  OpKind = "update-group"
	OpCreateGroup  OpKind = "create-group"
	OpAddMember    OpKind = "add-member"
	OpRemoveMember OpKind = "remove-member"
	OpDeleteGroup  OpKind = "delete-group"
)

// kindOrder is the execution order of the operation kinds.
var kindOrder = map[OpKind]int{OpUpdateGroup: 0, OpCreateGroup: 1, OpAddMember: 2, OpRemoveMember: 3, OpDeleteGroup: 4}

// Op is one write to the realm.
type Op struct {
	Kind OpKind
	// Path and Name are the group's; Parent is the parent's path ("" for a
	// top-level group).
	Path, Name, Parent string
	// GroupID is the group's id when it exists before the run; ParentID the
	// parent's. Empty ids are those of groups an earlier operation creates.
	GroupID, ParentID string
	// Attributes are written by create and update: the full set.
	Attributes map[string][]string
	// UserID and Username name the member of add and remove.
	UserID, Username string
	// Entry is the index of the operation's entry in Plan.Changes.
	Entry int
}

// Plan is what MakePlan decided for one realm.
type Plan struct {
	Target Target
	// Ops are the writes, grouped by kind in execution order.
	Ops []Op
	// Changes has an entry per group (created, updated, unchanged, deleted, or
	// skipped for a conflict), per membership added or removed, and per member
	// that cannot be added (skipped), in plan order. A group that stays although
	// no resource needs it is unchanged, with the reason it stays.
	Changes changeset.Set
	// MissingUsers maps the offering usernames of members not found in the
	// realm to why; FailedUsers, after the plan is carried out, those whose
	// membership write failed to the error.
	MissingUsers, FailedUsers map[string]string
	// RefusedUsers are those of FailedUsers whose removal from a group
	// Keycloak refused (an answer, not an outage): a refusal that the next
	// attempt meets again.
	RefusedUsers map[string]string
}

// PlanInput is everything MakePlan decides from.
type PlanInput struct {
	Target  Target
	Desired []DesiredGroup
	Actual  *Actual
	// Rendered holds every resource the renderer made a tenant of.
	Rendered map[waldur.UUID]bool
	// Skipped holds the resources the renderer skipped for bad input; the
	// groups recorded for them are kept.
	Skipped map[waldur.UUID]string
	// Terminations maps resources being terminated to their Terminate orders,
	// which deletions cite.
	Terminations map[waldur.UUID][]waldur.UUID
	// InGit reports whether the manifests of a resource the renderer no longer
	// produces are still in Git (a prune not yet pushed, a tenant kept by the
	// deletion guard); its groups are then kept. nil: none are.
	InGit func(waldur.UUID) bool
	// NoDelete keeps every group: deletions are reported as unchanged, with
	// the reason.
	NoDelete bool
	// Held maps resources whose Git change waits on a review branch to why:
	// the groups they need lose no member, and theirs are not deleted.
	Held map[waldur.UUID]string
	// Guard refuses a plan that deletes the groups of too many resources
	// without a Terminate order; nil allows any.
	Guard *guard.Options
	// Known maps the offerings with preserve_unmanaged_backend_users to the
	// offering usernames Waldur knows for them (render.Result.Known): a
	// member of their groups who is none of those is kept.
	Known map[string]map[string]bool
}

// planner holds the state of one MakePlan call.
type planner struct {
	in   PlanInput
	plan *Plan
	// blocked maps desired groups that are not reconciled to the reason.
	blocked map[string]string
	// before and after are who has access to which tenant through the
	// desired groups: as read from the realm, and once the plan is made.
	before, after guard.Grants
}

// MakePlan compares the desired groups with what Observe read and returns the
// operations that make the realm right. It makes no call.
func MakePlan(in PlanInput) (*Plan, error) {
	p := &planner{in: in, plan: &Plan{Target: in.Target}, blocked: map[string]string{}, before: guard.Grants{}, after: guard.Grants{}}
	if in.Actual == nil {
		in.Actual = &Actual{}
		p.in.Actual = in.Actual
	}
	for i := range in.Desired {
		p.desired(&in.Desired[i])
	}
	if in.Guard != nil {
		// Every team answering empty would strip every membership at once; a
		// user moving from one role's group to another's loses nothing.
		if err := guard.CheckAccess(guard.Memberships, p.before, p.after, *in.Guard); err != nil {
			return nil, err
		}
	}
	if err := p.deletions(); err != nil {
		return nil, err
	}
	// Execution order: updates, creations (parents first: Desired is sorted by
	// path), additions, removals, deletions (subgroups first: see deletions).
	slices.SortStableFunc(p.plan.Ops, func(a, b Op) int { return cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]) })
	return p.plan, nil
}

func (p *planner) entry(e changeset.Entry) int {
	e.Stage = Stage
	p.plan.Changes.Add(e)
	return len(p.plan.Changes.Entries) - 1
}

func (p *planner) op(o Op, e changeset.Entry) {
	o.Entry = p.entry(e)
	p.plan.Ops = append(p.plan.Ops, o)
}

// groupEntry is the entry of a desired group, before its action.
func groupEntry(d *DesiredGroup) changeset.Entry {
	e := changeset.Entry{Kind: KindGroup, Subject: d.Path, Offering: strings.Join(d.Offerings, ", ")}
	if len(d.Resources) == 1 {
		e.Resource = string(d.Resources[0])
	}
	return e
}

// attributes are the marker attributes a desired group should carry; a
// group with subgroups also lists the members waldur-gitops puts there.
func (p *planner) attributes(d *DesiredGroup) map[string][]string {
	a := d.attributes()
	if !d.Leaf {
		ids, _ := p.wanted(d)
		a[AttrMembers] = slices.Sorted(slices.Values(ids))
	}
	return a
}

// wanted resolves the desired members of d to Keycloak user ids, in order,
// with the user name each stands for.
func (p *planner) wanted(d *DesiredGroup) ([]string, map[string]string) {
	want := map[string]string{}
	var ids []string
	for _, m := range d.Members {
		if u := p.in.Actual.Users[m]; u != nil {
			if _, dup := want[u.ID]; !dup {
				want[u.ID] = m.Username
				ids = append(ids, u.ID)
			}
		}
	}
	return ids, want
}

// desired plans one desired group and its members.
func (p *planner) desired(d *DesiredGroup) {
	e := groupEntry(d)
	if why := p.blocked[d.Parent]; d.Parent != "" && why != "" {
		e.Action, e.Reason, e.Cause = changeset.Skip, "parent group "+d.Parent+" is not reconciled: "+why, changeset.CauseParentBlocked
		p.blocked[d.Path] = "its parent is not reconciled"
		p.entry(e)
		return
	}
	g := p.in.Actual.Groups[d.Path]
	if g == nil {
		parentID := ""
		if d.Parent != "" {
			if pg := p.in.Actual.Groups[d.Parent]; pg != nil {
				parentID = pg.ID
			}
		}
		e.Action = changeset.Create
		p.op(Op{Kind: OpCreateGroup, Path: d.Path, Name: d.Name, Parent: d.Parent, ParentID: parentID, Attributes: p.attributes(d)}, e)
		p.members(d, nil)
		return
	}
	switch own := p.in.Target.owner(g); {
	case own == owned:
		want := mergeAttributes(g.Attributes, p.attributes(d))
		if changed := changedKeys(g.Attributes, want); len(changed) > 0 {
			e.Action, e.Reason = changeset.Update, "attributes "+strings.Join(changed, ", ")
			p.op(Op{Kind: OpUpdateGroup, Path: d.Path, Name: g.Name, GroupID: g.ID, Attributes: want}, e)
		} else {
			e.Action = changeset.Unchanged
			p.entry(e)
		}
	case own == unmarked && d.Adopt:
		e.Action, e.Reason = changeset.Update, "adopt: mark as managed by "+ManagedBy+managedByNote(g)
		p.op(Op{Kind: OpUpdateGroup, Path: d.Path, Name: g.Name, GroupID: g.ID, Attributes: mergeAttributes(g.Attributes, p.attributes(d))}, e)
	default:
		why := "the group exists but is not managed by " + ManagedBy + managedByNote(g) + "; it is left alone (keycloak_groups.adopt_existing takes such groups over)"
		if own == foreign {
			why = "the group is managed by " + ManagedBy + " for offering(s) " + strings.Join(g.Attributes[AttrOffering], ", ") + ", not in this config; it is left alone"
		}
		e.Action, e.Reason, e.Cause = changeset.Skip, "conflict: "+why, changeset.CauseGroupConflict
		p.blocked[d.Path] = "conflict"
		p.entry(e)
		return
	}
	p.members(d, g)
}

func managedByNote(g *Group) string {
	if v := g.Attributes[AttrManagedBy]; len(v) > 0 {
		return " (managed_by=" + strings.Join(v, ",") + ")"
	}
	return ""
}

// members plans the memberships of a desired group; g is the existing group,
// nil when it is to be created.
func (p *planner) members(d *DesiredGroup, g *Group) {
	want, wantIDs := p.resolve(d)
	have := map[string]User{}
	groupID := ""
	if g != nil {
		groupID = g.ID
		for _, u := range g.Members {
			have[u.ID] = u
		}
	}
	base := changeset.Entry{Kind: KindMembership, Offering: strings.Join(d.Offerings, ", ")}
	if len(d.Resources) == 1 {
		base.Resource = string(d.Resources[0])
	}
	for _, id := range wantIDs {
		if _, ok := have[id]; ok {
			continue
		}
		e := base
		e.Subject, e.Action = d.Path+" "+want[id], changeset.Create
		p.op(Op{Kind: OpAddMember, Path: d.Path, GroupID: groupID, UserID: id, Username: want[id]}, e)
	}
	// A group with subgroups loses only the members waldur-gitops put there.
	var ours map[string]bool
	if !d.Leaf && g != nil {
		ours = map[string]bool{}
		for _, id := range g.Attributes[AttrMembers] {
			ours[id] = true
		}
	}
	removed := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[id]; ok || (ours != nil && !ours[id]) {
			continue
		}
		u := have[id]
		e := base
		e.Subject, e.Action, e.Reason = d.Path+" "+u.Username, changeset.Delete, "not in the team (or not in this role) any more"
		if why := p.held(d.Resources); why != "" {
			// Nothing happens to it: unchanged, with the reason it stays.
			e.Action, e.Reason, e.Cause = changeset.Unchanged, "kept until its review is merged: "+why, changeset.CauseKeptInReview
			p.entry(e)
			continue
		}
		if off := p.unmanaged(d, u.Username); off != "" {
			e.Action, e.Reason, e.Cause = changeset.Unchanged, "kept: not an offering user of "+off+" (preserve_unmanaged_backend_users)", changeset.CauseKept
			p.entry(e)
			continue
		}
		removed[id] = true
		p.op(Op{Kind: OpRemoveMember, Path: d.Path, GroupID: groupID, UserID: u.ID, Username: u.Username}, e)
	}
	p.account(d, have, wantIDs, removed, want)
}

// resolve finds the desired members of d in the realm: user id → offering
// username, and the ids in order. A member not found is a skip entry.
func (p *planner) resolve(d *DesiredGroup) (map[string]string, []string) {
	want := map[string]string{}
	var wantIDs []string
	for _, m := range d.Members {
		u, known := p.in.Actual.Users[m]
		if u == nil {
			e := changeset.Entry{Kind: KindMembership, Subject: d.Path + " " + m.Username, Action: changeset.Skip, Offering: strings.Join(d.Offerings, ", "), Reason: missingUser(p.in.Target, m), Cause: changeset.CauseUserNotFound}
			if !known {
				e.Reason, e.Cause = "user "+m.Username+" was not looked up", changeset.CauseNotLookedUp
			} else {
				if p.plan.MissingUsers == nil {
					p.plan.MissingUsers = map[string]string{}
				}
				p.plan.MissingUsers[m.Username] = e.Reason
			}
			p.entry(e)
			continue
		}
		if _, dup := want[u.ID]; !dup {
			want[u.ID] = m.Username
			wantIDs = append(wantIDs, u.ID)
		}
	}
	return want, wantIDs
}

// account records, for the access guard, who has access to the tenants of
// d through it, by user name (so that an offboarded user's loss is
// recognised): the members read (before), and those left once the plan's
// removals and additions are made (after). names maps the added ids to
// their user names.
func (p *planner) account(d *DesiredGroup, have map[string]User, added []string, removed map[string]bool, names map[string]string) {
	name := func(id string) string {
		if u, ok := have[id]; ok && u.Username != "" {
			return u.Username
		}
		return cmp.Or(names[id], id)
	}
	for _, t := range groupTenants(d) {
		p.after.Tenant(t)
		for id := range have {
			p.before.Add(t, name(id))
			if !removed[id] {
				p.after.Add(t, name(id))
			}
		}
		for _, id := range added {
			p.after.Add(t, name(id))
		}
	}
}

// groupTenants are the tenants a group gives access to: the resources that
// need it, or, for one no resource names, the group itself.
func groupTenants(d *DesiredGroup) []string {
	if len(d.Resources) == 0 {
		return []string{"group " + d.Path}
	}
	out := make([]string, len(d.Resources))
	for i, r := range d.Resources {
		out[i] = string(r)
	}
	return out
}

// held says why a group needed by resources must keep its members: the
// first of them whose change waits on a review branch; "" when none does.
// unmanaged returns the offering whose preserve_unmanaged_backend_users
// keeps a member of d that is none of its offering users; "" when the member
// may be removed.
func (p *planner) unmanaged(d *DesiredGroup, username string) string {
	for _, off := range d.Offerings {
		if known, ok := p.in.Known[off]; ok && !known[strings.ToLower(username)] {
			return off
		}
	}
	return ""
}

func (p *planner) held(resources []waldur.UUID) string {
	for _, r := range resources {
		if why, ok := p.in.Held[r]; ok {
			return why
		}
	}
	return ""
}

func missingUser(t Target, m Member) string {
	how := "by user name"
	if m.ByID {
		how = "by id or user name"
	}
	return fmt.Sprintf("user %s not found in Keycloak realm %s (looked up %s); it is added once it exists", m.Username, t.Realm, how)
}

// mergeAttributes returns have with the marker attributes of want: other
// attributes are kept, and a marker attribute want lacks is dropped.
func mergeAttributes(have, want map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range have {
		if !slices.Contains(ownKeys, k) {
			out[k] = slices.Clone(v)
		}
	}
	for k, v := range want {
		out[k] = slices.Clone(v)
	}
	return out
}

// changedKeys lists the marker attributes that differ between have and want.
func changedKeys(have, want map[string][]string) []string {
	var out []string
	for _, k := range ownKeys {
		a, b := sortedUnique(have[k]), sortedUnique(want[k])
		if !slices.Equal(a, b) {
			out = append(out, k)
		}
	}
	return out
}

// deletions plans the deletion of the owned groups no desired group names,
// subgroups first, keeping those something still needs.
func (p *planner) deletions() error {
	t := p.in.Target
	desired := map[string]bool{}
	for _, d := range p.in.Desired {
		desired[d.Path] = true
	}
	var candidates []*Group
	known := map[waldur.UUID]bool{}
	for _, g := range p.in.Actual.Groups {
		if t.owner(g) != owned {
			continue
		}
		for _, r := range g.Attributes[AttrResource] {
			known[waldur.UUID(r)] = true
		}
		if !desired[g.Path] {
			candidates = append(candidates, g)
		}
	}
	// Deepest first, so that a parent sees what becomes of its subgroups.
	slices.SortFunc(candidates, func(a, b *Group) int {
		return cmp.Or(cmp.Compare(strings.Count(b.Path, "/"), strings.Count(a.Path, "/")), cmp.Compare(a.Path, b.Path))
	})
	deleting := map[string]bool{}
	var removed []guard.Removal
	gone := map[waldur.UUID]bool{}
	var ops []struct {
		op Op
		e  changeset.Entry
	}
	for _, g := range candidates {
		e := changeset.Entry{Kind: KindGroup, Subject: g.Path, Action: changeset.Delete, Reason: "no resource needs it any more",
			Offering: t.offeringNames(g.Attributes[AttrOffering])}
		resources := g.Attributes[AttrResource]
		if len(resources) == 1 {
			e.Resource = resources[0]
		}
		for _, r := range resources {
			for _, o := range p.in.Terminations[waldur.UUID(r)] {
				e.Orders = append(e.Orders, string(o))
			}
		}
		if why := p.keep(g, deleting); why != "" {
			// Nothing happens to it: unchanged, with the reason it stays.
			e.Action, e.Reason, e.Orders, e.Cause = changeset.Unchanged, "kept: "+why, nil, changeset.CauseKept
			p.entry(e)
			continue
		}
		deleting[g.Path] = true
		for _, r := range resources {
			if u := waldur.UUID(r); !p.in.Rendered[u] && !gone[u] {
				gone[u] = true
				removed = append(removed, tenantGroups(r, p.in.Terminations[u]))
			}
		}
		ops = append(ops, struct {
			op Op
			e  changeset.Entry
		}{Op{Kind: OpDeleteGroup, Path: g.Path, Name: g.Name, GroupID: g.ID}, e})
	}
	if len(removed) > 0 && p.in.Guard != nil {
		if err := guard.Check(guard.TenantGroups, removed, guard.Site(len(known)), *p.in.Guard); err != nil {
			return err
		}
	}
	for _, o := range ops {
		p.op(o.op, o.e)
	}
	return nil
}

// tenantGroups is the removal of the groups of resource r, explained by
// its Terminate orders when it has any.
func tenantGroups(r string, orders []waldur.UUID) guard.Removal {
	rm := guard.Removal{Kind: guard.TenantGroups, Subject: "resource " + r, Tenant: r}
	if len(orders) > 0 {
		ids := make([]string, len(orders))
		for i, o := range orders {
			ids[i] = string(o)
		}
		rm.Because = &guard.Explanation{Cause: guard.TerminateOrder, Why: "Terminate order " + strings.Join(ids, ", ")}
	}
	return rm
}

// keep says why an owned group nobody desires must stay, "" when it may go.
func (p *planner) keep(g *Group, deleting map[string]bool) string {
	t := p.in.Target
	if p.in.NoDelete {
		return "deletions are turned off (--no-delete)"
	}
	for _, o := range g.Attributes[AttrOffering] {
		if !t.ownsOffering(o) {
			return "offering " + o + ", not in this config for this realm, needs it too"
		}
	}
	for _, r := range g.Attributes[AttrResource] {
		u := waldur.UUID(r)
		if why, ok := p.in.Held[u]; ok {
			return fmt.Sprintf("the change of resource %s waits for its review to be merged: %s", r, why)
		}
		if why, ok := p.in.Skipped[u]; ok {
			return fmt.Sprintf("resource %s, which needs it, was skipped for bad input (%s)", r, why)
		}
		if !p.in.Rendered[u] && p.in.InGit != nil && p.in.InGit(u) {
			return fmt.Sprintf("the manifests of resource %s are still in Git; it goes after they are pruned", r)
		}
	}
	if g.SubGroupCount > 0 {
		if !g.ChildrenRead {
			return "it has subgroups"
		}
		for _, c := range g.Children {
			if !deleting[c] {
				return "its subgroup " + c + " stays"
			}
		}
	}
	return ""
}
