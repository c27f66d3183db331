package keycloak

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

// recall is one pass that starts from a Memory.
type recall struct {
	c       *Client
	t       Target
	mem     *realmMemory
	desired []DesiredGroup
	want    map[string]*DesiredGroup
	a       *Actual
	// covered are the remembered paths the pass started from.
	covered []string
	// verified counts the remembered groups re-read for the rotation.
	verified int
}

// observeRemembered is Observe from a memory: the remembered groups (for a
// scoped run, those of its resources) are taken as they were, except the
// rotation's slice, which is re-read with every group of a scoped run; the
// desired groups the memory lacks are looked up by path; then members and
// users are read as Observe does. last is when the last pass began, as far
// as the rotation is concerned (see targetPass.lastPass).
func observeRemembered(ctx context.Context, c *Client, desired []DesiredGroup, mem *realmMemory, scope map[waldur.UUID]bool, last, now time.Time, every time.Duration, changed []string) (*recall, error) {
	r := &recall{c: c, t: c.Target(), mem: mem, desired: desired, want: map[string]*DesiredGroup{}}
	for i := range desired {
		r.want[desired[i].Path] = &desired[i]
	}
	keep := func(string) bool { return true }
	if scope != nil {
		keep = func(p string) bool {
			if d := r.want[p]; d != nil {
				return true
			}
			g := mem.Groups[p]
			return inScope(g.Attributes[AttrResource], scope)
		}
	}
	r.a = mem.actual(keep)
	for p := range r.a.Groups {
		r.covered = append(r.covered, p)
	}
	slices.Sort(r.covered)
	var check []string
	if scope != nil {
		check = r.covered
	} else {
		check = rotation(r.a, last, now, every)
		r.verified = len(check)
		for _, p := range changed {
			if r.a.Groups[p] != nil && !slices.Contains(check, p) {
				check = append(check, p)
			}
		}
	}
	if err := r.reread(ctx, check); err != nil {
		return nil, err
	}
	return r, nil
}

// stale lists the groups a plan would change that this pass has not read:
// the groups of its operations and the parents of its creations.
func (r *recall) stale(p *Plan) []string {
	var out []string
	for _, o := range p.Ops {
		for _, path := range []string{o.Path, o.Parent} {
			if g := r.a.Groups[path]; path != "" && g != nil && !r.a.fresh[path] {
				out = append(out, path)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// reread reads the groups at paths again by id, then looks up the desired
// groups that are missing, reads the members of the desired groups whose
// members are not known, and resolves the desired users afresh.
func (r *recall) reread(ctx context.Context, paths []string) error {
	c, a := r.c, r.a
	err := each(ctx, c, len(paths), func(i int) error {
		var g *Group
		a.lock(func() { g = a.Groups[paths[i]] })
		if g == nil {
			return nil
		}
		ag, err := c.groupByID(ctx, g.ID)
		if err != nil {
			return err
		}
		if ag == nil || ag.Path != g.Path {
			// Deleted, or moved or renamed, out of band: looked up by path below.
			a.lock(func() { a.drop(g.Path); a.fresh[g.Path] = true })
			return nil
		}
		return r.refresh(ctx, g, ag)
	})
	if err != nil {
		return err
	}
	if err := r.lookups(ctx); err != nil {
		return err
	}
	var need []*Group
	for _, d := range r.desired {
		if g := a.Groups[d.Path]; g != nil && !g.MembersRead && mayWork(r.t, g, &d) {
			need = append(need, g)
		}
	}
	err = each(ctx, c, len(need), func(i int) error {
		ms, err := c.members(ctx, need[i].ID)
		if err != nil {
			return err
		}
		a.lock(func() { need[i].Members, need[i].MembersRead = ms, true })
		return nil
	})
	if err != nil {
		return err
	}
	a.Users = map[Member]*User{}
	return resolveUsers(ctx, c, a, r.desired)
}

// refresh takes what Keycloak answered for g, and reads its subgroups when
// it has some that matter. Its members are read again by reread.
func (r *recall) refresh(ctx context.Context, g *Group, ag *apiGroup) error {
	var (
		kids     []apiGroup
		listKids bool
		count    int
	)
	r.a.lock(func() {
		g.Name, g.Attributes = ag.Name, ag.Attributes
		if g.Attributes == nil {
			g.Attributes = map[string][]string{}
		}
		g.SubGroupCount = 0
		if ag.SubGroupCount != nil {
			g.SubGroupCount = *ag.SubGroupCount
		}
		g.Members, g.MembersRead = nil, false
		count = g.SubGroupCount
		listKids = count > 0 && (r.t.owner(g) == owned || r.want[g.Path] != nil && mayWork(r.t, g, r.want[g.Path]))
	})
	if listKids {
		var err error
		if kids, err = r.c.children(ctx, ag.ID); err != nil {
			return err
		}
	}
	r.a.lock(func() {
		if listKids || count == 0 {
			seen := map[string]bool{}
			for _, k := range kids {
				p := g.Path + "/" + k.Name
				seen[p] = true
				if old := r.a.Groups[p]; old != nil && old.ID == k.ID {
					old.Attributes = k.Attributes
					if old.Attributes == nil {
						old.Attributes = map[string][]string{}
					}
					old.Members, old.MembersRead = nil, false
					r.a.fresh[p] = true
					continue
				}
				r.a.drop(p)
				r.a.add(k, g.Path)
				r.a.fresh[p] = true
			}
			for _, p := range slices.Clone(g.Children) {
				if !seen[p] {
					r.a.drop(p)
					r.a.fresh[p] = true
				}
			}
			g.ChildrenRead = true
		} else {
			g.ChildrenRead = false
		}
		r.a.fresh[g.Path] = true
	})
	return nil
}

// lookups finds the desired groups the pass does not know by path, parents
// before subgroups; a subgroup of a group that does not exist is not looked
// up.
func (r *recall) lookups(ctx context.Context) error {
	a := r.a
	byDepth := map[int][]*DesiredGroup{}
	depth := 0
	for i := range r.desired {
		d := &r.desired[i]
		if a.Groups[d.Path] == nil {
			n := strings.Count(d.Path, "/")
			byDepth[n] = append(byDepth[n], d)
			depth = max(depth, n)
		}
	}
	for n := 1; n <= depth; n++ {
		var todo []*DesiredGroup
		for _, d := range byDepth[n] {
			if d.Parent == "" || a.Groups[d.Parent] != nil {
				todo = append(todo, d)
			}
		}
		err := each(ctx, r.c, len(todo), func(i int) error {
			d := todo[i]
			ag, err := r.c.groupByPath(ctx, d.Path)
			if err != nil {
				return err
			}
			if ag == nil || ag.Path != d.Path {
				a.lock(func() { a.fresh[d.Path] = true })
				return nil
			}
			var g *Group
			a.lock(func() { g = a.add(*ag, d.Parent) })
			return r.refresh(ctx, g, ag)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// drop forgets the group at p and its subgroups (a.mu held).
func (a *Actual) drop(p string) {
	g := a.Groups[p]
	if g == nil {
		return
	}
	for q := range a.Groups {
		if strings.HasPrefix(q, p+"/") {
			delete(a.Groups, q)
		}
	}
	delete(a.Groups, p)
	if pg := a.Groups[g.Parent]; pg != nil {
		pg.Children = slices.DeleteFunc(pg.Children, func(c string) bool { return c == p })
	}
}
