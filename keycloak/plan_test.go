package keycloak

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

const (
	offA = "0f0f0f0f0f0f4f0f8f0f0f0f0f0f000a"
	offB = "0f0f0f0f0f0f4f0f8f0f0f0f0f0f000b" // not in the config
	r1   = waldur.UUID("a0000000000040008000000000000001")
	r2   = waldur.UUID("a0000000000040008000000000000002")
	ord1 = waldur.UUID("0d000000000040008000000000000001")
)

func planTarget() Target {
	return Target{URL: "https://kc.example.org/", Realm: "waldur", Offerings: []*config.Offering{{Name: "A", WaldurOfferingUUID: offA}}}
}

// mine is the marker of a group of offering A needed by the given resources.
func mine(resources ...waldur.UUID) map[string][]string {
	a := map[string][]string{AttrManagedBy: {ManagedBy}, AttrOffering: {offA}}
	for _, r := range resources {
		a[AttrResource] = append(a[AttrResource], string(r))
	}
	return a
}

func want(path string, resources []waldur.UUID, members ...string) DesiredGroup {
	d := DesiredGroup{Path: path, Name: path[strings.LastIndex(path, "/")+1:], Offerings: []string{"A"}, OfferingUUIDs: []string{offA}, Resources: resources, Leaf: true}
	if i := strings.LastIndex(path, "/"); i > 0 {
		d.Parent = path[:i]
	}
	for _, m := range members {
		d.Members = append(d.Members, Member{Username: m, ByID: true})
	}
	return d
}

func have(path string, attrs map[string][]string, members ...string) *Group {
	g := &Group{ID: "id" + path, Name: path[strings.LastIndex(path, "/")+1:], Path: path, Attributes: attrs, MembersRead: true}
	if i := strings.LastIndex(path, "/"); i > 0 {
		g.Parent = path[:i]
	}
	for _, m := range members {
		g.Members = append(g.Members, User{ID: "u-" + m, Username: m})
	}
	return g
}

// world builds an Actual from groups and the users Keycloak knows.
func world(groups []*Group, users ...string) *Actual {
	a := &Actual{Groups: map[string]*Group{}, Users: map[Member]*User{}}
	for _, g := range groups {
		a.Groups[g.Path] = g
		if p := a.Groups[g.Parent]; p != nil {
			p.Children = append(p.Children, g.Path)
			p.SubGroupCount++
			p.ChildrenRead = true
		}
	}
	for _, u := range users {
		a.Users[Member{Username: u, ByID: true}] = &User{ID: "u-" + u, Username: u}
	}
	for _, m := range []string{"ghost"} {
		a.Users[Member{Username: m, ByID: true}] = nil
	}
	return a
}

// opList renders a plan's operations compactly.
func opList(p *Plan) []string {
	var out []string
	for _, o := range p.Ops {
		s := string(o.Kind) + " " + o.Path
		if o.Username != "" {
			s += " " + o.Username
		}
		out = append(out, s)
	}
	return out
}

func entryList(p *Plan) []string {
	var out []string
	for _, e := range p.Changes.Entries {
		out = append(out, e.String())
	}
	return out
}

func TestMakePlan(t *testing.T) {
	res := []waldur.UUID{r1}
	tests := []struct {
		name    string
		in      PlanInput
		ops     []string
		entries []string // substrings, in order
		err     string
	}{
		{
			name: "absent group is created with its members; a missing user is reported",
			in:   PlanInput{Desired: []DesiredGroup{want("/g", res, "alice", "ghost")}, Actual: world(nil, "alice")},
			ops:  []string{"create-group /g", "add-member /g alice"},
			entries: []string{"+ KeycloakGroup /g", "! KeycloakMembership /g ghost: user ghost not found in Keycloak realm waldur (looked up by id or user name)",
				"+ KeycloakMembership /g alice"},
		},
		{
			name:    "owned group that is right is unchanged",
			in:      PlanInput{Desired: []DesiredGroup{want("/g", res, "alice")}, Actual: world([]*Group{have("/g", mine(r1), "alice")}, "alice")},
			entries: []string{"= KeycloakGroup /g"},
		},
		{
			name: "owned group: members follow the team, marker attributes follow the resources",
			in: PlanInput{Desired: []DesiredGroup{want("/g", []waldur.UUID{r1, r2}, "alice", "bob")},
				Actual: world([]*Group{have("/g", mine(r1), "alice", "carol")}, "alice", "bob")},
			ops:     []string{"update-group /g", "add-member /g bob", "remove-member /g carol"},
			entries: []string{"~ KeycloakGroup /g: attributes waldur_resource_uuid", "+ KeycloakMembership /g bob", "- KeycloakMembership /g carol"},
		},
		{
			name: "two offering usernames of one Keycloak user make one membership",
			in: PlanInput{Desired: []DesiredGroup{{Path: "/g", Name: "g", OfferingUUIDs: []string{offA}, Leaf: true,
				Members: []Member{{Username: "alice", ByID: true}, {Username: "alice", ByID: false}}}},
				Actual: &Actual{Groups: map[string]*Group{}, Users: map[Member]*User{{"alice", true}: {ID: "u1"}, {"alice", false}: {ID: "u1"}}}},
			ops: []string{"create-group /g", "add-member /g alice"},
		},
		{
			name: "unmarked group is a conflict: nothing is done to it or under it",
			in: PlanInput{Desired: []DesiredGroup{want("/c", nil), want("/c/p", res, "alice")},
				Actual: world([]*Group{have("/c", map[string][]string{AttrManagedBy: {"waldur-site-agent"}}, "zed")}, "alice")},
			entries: []string{"! KeycloakGroup /c: conflict: the group exists but is not managed by waldur-gitops (managed_by=waldur-site-agent)",
				"! KeycloakGroup /c/p: parent group /c is not reconciled: conflict"},
		},
		{
			name: "unmarked group with adopt_existing is taken over",
			in: PlanInput{Desired: []DesiredGroup{func() DesiredGroup { d := want("/g", res, "alice"); d.Adopt = true; return d }()},
				Actual: world([]*Group{have("/g", map[string][]string{"x": {"1"}}, "zed")}, "alice")},
			ops:     []string{"update-group /g", "add-member /g alice", "remove-member /g zed"},
			entries: []string{"~ KeycloakGroup /g: adopt: mark as managed by waldur-gitops"},
		},
		{
			name: "a group marked for an offering of another config is a conflict, never deleted",
			in: PlanInput{Desired: []DesiredGroup{want("/g", res)},
				Actual: world([]*Group{have("/g", map[string][]string{AttrManagedBy: {ManagedBy}, AttrOffering: {offB}}), have("/h", map[string][]string{AttrManagedBy: {ManagedBy}, AttrOffering: {offB}})})},
			entries: []string{"! KeycloakGroup /g: conflict: the group is managed by waldur-gitops for offering(s) " + offB},
		},
		{
			name: "an owned group nobody needs is deleted, citing the Terminate order",
			in: PlanInput{Actual: world([]*Group{have("/g", mine(r1), "alice")}),
				Terminations: map[waldur.UUID][]waldur.UUID{r1: {ord1}}},
			ops:     []string{"delete-group /g"},
			entries: []string{"- KeycloakGroup /g: no resource needs it any more"},
		},
		{
			name:    "kept: the resource was skipped for bad input",
			in:      PlanInput{Actual: world([]*Group{have("/g", mine(r1))}), Skipped: map[waldur.UUID]string{r1: "bad limits"}},
			entries: []string{"= KeycloakGroup /g: kept: resource " + string(r1) + ", which needs it, was skipped for bad input (bad limits)"},
		},
		{
			name:    "kept: the resource's manifests are still in Git",
			in:      PlanInput{Actual: world([]*Group{have("/g", mine(r1))}), InGit: func(u waldur.UUID) bool { return u == r1 }},
			entries: []string{"still in Git"},
		},
		{
			name: "renamed: a rendered resource no longer needs its old group, whatever Git has",
			in: PlanInput{Desired: []DesiredGroup{want("/new", res)}, Actual: world([]*Group{have("/old", mine(r1))}),
				Rendered: map[waldur.UUID]bool{r1: true}, InGit: func(waldur.UUID) bool { return true }},
			ops: []string{"create-group /new", "delete-group /old"},
		},
		{
			name: "held for review: members are added but none removed",
			in: PlanInput{Desired: []DesiredGroup{want("/g", res, "alice", "bob")},
				Actual: world([]*Group{have("/g", mine(r1), "alice", "carol")}, "alice", "bob"),
				Held:   map[waldur.UUID]string{r1: "waits on review branch waldur-gitops/review/ab12"}},
			ops:     []string{"add-member /g bob"},
			entries: []string{"+ KeycloakMembership /g bob", "= KeycloakMembership /g carol: kept until its review is merged: waits on review branch waldur-gitops/review/ab12"},
		},
		{
			name: "held for review: the group of a removed resource stays",
			in: PlanInput{Actual: world([]*Group{have("/g", mine(r1), "alice")}),
				Held: map[waldur.UUID]string{r1: "waits on review branch waldur-gitops/review/ab12"}},
			entries: []string{"= KeycloakGroup /g: kept: the change of resource " + string(r1) + " waits for its review to be merged"},
		},
		{
			name:    "kept: deletions turned off",
			in:      PlanInput{Actual: world([]*Group{have("/g", mine(r1))}), NoDelete: true},
			entries: []string{"= KeycloakGroup /g: kept: deletions are turned off"},
		},
		{
			name:    "kept: another offering's config still counts on it",
			in:      PlanInput{Actual: world([]*Group{have("/g", map[string][]string{AttrManagedBy: {ManagedBy}, AttrOffering: {offA, offB}})})},
			entries: []string{"needs it too"},
		},
		{
			name:    "a parent goes after its subgroups, and stays for a subgroup that stays",
			in:      PlanInput{Actual: world([]*Group{have("/c", mine()), have("/c/p", mine(r1)), have("/d", mine()), have("/d/x", nil)})},
			ops:     []string{"delete-group /c/p", "delete-group /c"},
			entries: []string{"= KeycloakGroup /d: kept: its subgroup /d/x stays"},
		},
		{
			name:    "subgroups that were not read keep a group",
			in:      PlanInput{Actual: world([]*Group{func() *Group { g := have("/c", mine()); g.SubGroupCount = 2; return g }()})},
			entries: []string{"kept: it has subgroups"},
		},
		{
			name: "the deletion guard refuses the groups of too many unexplained resources",
			in: PlanInput{Actual: world([]*Group{have("/g1", mine(r1)), have("/g2", mine(r2))}),
				Guard: &guard.Options{MaxFraction: 0.1, MinCount: 5}},
			err: "refusing to delete their Keycloak groups: refusing to remove 2 of 2 tenants",
		},
		{
			name: "the guard lets terminated resources go",
			in: PlanInput{Actual: world([]*Group{have("/g1", mine(r1)), have("/g2", mine(r2))}),
				Terminations: map[waldur.UUID][]waldur.UUID{r1: {ord1}, r2: {ord1}}, Guard: &guard.Options{MaxFraction: 0.1, MinCount: 5}},
			ops: []string{"delete-group /g1", "delete-group /g2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Target = planTarget()
			p, err := MakePlan(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := opList(p); !slices.Equal(got, tc.ops) {
				t.Errorf("ops:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.ops, "\n  "))
			}
			got := entryList(p)
			i := 0
			for _, e := range got {
				if i < len(tc.entries) && strings.Contains(e, tc.entries[i]) {
					i++
				}
			}
			if i < len(tc.entries) {
				t.Errorf("entries lack %q (in order); got:\n  %s", tc.entries[i], strings.Join(got, "\n  "))
			}
			for _, o := range p.Ops {
				if e := p.Changes.Entries[o.Entry]; !strings.HasPrefix(e.Subject, o.Path) || e.Stage != Stage {
					t.Errorf("op %s %s points at entry %v", o.Kind, o.Path, e)
				}
			}
		})
	}
}

func TestDesire(t *testing.T) {
	tr := Target{Offerings: []*config.Offering{{Name: "A", WaldurOfferingUUID: offA}, {Name: "B", WaldurOfferingUUID: offB}}}
	for _, o := range tr.Offerings {
		o.Settings.Rancher = &config.RancherSettings{}
	}
	off := false
	tr.Offerings[1].Settings.Rancher.KeycloakUseUserID = &off
	tr.Offerings[1].Settings.Rancher.KeycloakGroups.AdoptExisting = true
	groups := Desire(tr, renderGroups(
		rg("A", "c", "", r1), rg("A", "p", "c", r1, "bob", "alice"),
		rg("B", "c", "", r2), rg("B", "p", "c", r2, "alice"),
		rg("Other", "x", "", r1),
	))
	if len(groups) != 2 {
		t.Fatalf("groups %v", groups)
	}
	c, p := groups[0], groups[1]
	if c.Path != "/c" || c.Leaf || !slices.Equal(c.OfferingUUIDs, []string{offA, offB}) || !c.Adopt {
		t.Errorf("parent: %+v", c)
	}
	wantMembers := []Member{{"alice", false}, {"alice", true}, {"bob", true}}
	if p.Path != "/c/p" || p.Parent != "/c" || !p.Leaf || !slices.Equal(p.Resources, []waldur.UUID{r1, r2}) || !slices.Equal(p.Members, wantMembers) {
		t.Errorf("child: %+v", p)
	}
	if a := c.attributes(); a[AttrResource] != nil {
		t.Errorf("a parent records resources: %v", a)
	}
	if a := p.attributes(); !slices.Equal(a[AttrResource], []string{string(r1), string(r2)}) {
		t.Errorf("child attributes: %v", a)
	}
}

// rg builds a render group of offering o needed by resource r.
func rg(o, name, parent string, r waldur.UUID, members ...string) render.Group {
	return render.Group{Name: name, Parent: parent, Offering: o, Resources: []waldur.UUID{r}, Members: members}
}

func renderGroups(gs ...render.Group) []render.Group { return gs }

// TestMembershipGuard: removing most memberships at once (every team
// answering empty) is refused like a mass deletion; a few go through, and
// AllowMassPrune lets the rest through too.
func TestMembershipGuard(t *testing.T) {
	users := []string{"u1", "u2", "u3", "u4", "u5", "u6"}
	groups := []*Group{have("/g1", mine(r1), users[:3]...), have("/g2", mine(r2), users[3:]...)}
	for _, tc := range []struct {
		name   string
		wantG1 []string
		allow  bool
		refuse bool
	}{
		{"one member leaves", users[:2], false, false},
		{"every team empty", nil, false, true},
		{"every team empty, allowed", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := guard.DefaultOptions()
			g.Allow = tc.allow
			desired := []DesiredGroup{want("/g1", []waldur.UUID{r1}, tc.wantG1...), want("/g2", []waldur.UUID{r2}, users[3:]...)}
			if tc.wantG1 == nil {
				desired[1] = want("/g2", []waldur.UUID{r2})
			}
			_, err := MakePlan(PlanInput{Target: planTarget(), Desired: desired, Actual: world(groups, users...),
				Rendered: map[waldur.UUID]bool{r1: true, r2: true}, Guard: &g})
			var ae *guard.AccessError
			if refused := errors.As(err, &ae); refused != tc.refuse {
				t.Fatalf("err %v, want refused %v", err, tc.refuse)
			}
			if tc.refuse && (ae.Removed != 6 || ae.Existing != 6 || !strings.Contains(err.Error(), "Keycloak memberships")) {
				t.Errorf("refusal %+v: %v", ae, err)
			}
		})
	}
}

// TestParentGroupKeepsOthersMembers: on a group with subgroups (Rancher's
// c_<cluster>) waldur-gitops removes only the members it put there, listed
// in its attribute; a user someone else added (Mastermind, before adoption)
// stays, and the members it adds are recorded.
func TestParentGroupKeepsOthersMembers(t *testing.T) {
	parentAttrs := mine()
	parentAttrs[AttrMembers] = []string{"u-gone"}
	parent := have("/c_x", parentAttrs, "mastermind", "gone")
	child := have("/c_x/p_a", mine(r1), "alice")
	parentWant := want("/c_x", nil, "alice")
	parentWant.Leaf = false
	p, err := MakePlan(PlanInput{Target: planTarget(), Desired: []DesiredGroup{parentWant, want("/c_x/p_a", []waldur.UUID{r1}, "alice")},
		Actual: world([]*Group{parent, child}, "alice", "mastermind", "gone"), Rendered: map[waldur.UUID]bool{r1: true}})
	if err != nil {
		t.Fatal(err)
	}
	ops := strings.Join(opList(p), "\n")
	if !strings.Contains(ops, "remove-member /c_x gone") || strings.Contains(ops, "remove-member /c_x mastermind") || !strings.Contains(ops, "add-member /c_x alice") {
		t.Errorf("ops:\n%s", ops)
	}
	var recorded []string
	for _, o := range p.Ops {
		if o.Kind == OpUpdateGroup && o.Path == "/c_x" {
			recorded = o.Attributes[AttrMembers]
		}
	}
	if !slices.Equal(recorded, []string{"u-alice"}) {
		t.Errorf("the members waldur-gitops put in /c_x are recorded as %v", recorded)
	}
}
