package keycloak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Observe reads what the plan needs from c's realm, once:
//
//   - every top-level group, page by page, with its attributes;
//   - the subgroups of each top-level group that has some and that
//     waldur-gitops manages or that is a desired parent it may work in;
//   - the direct members of each desired group it may reconcile;
//   - the desired members that are not among those members, looked up one by
//     one (by id first, then by exact user name, as keycloak_use_user_id says).
//
// Any failure to read is an error: a plan made from a partial view could
// delete what exists.
func Observe(ctx context.Context, c *Client, desired []DesiredGroup) (*Actual, error) {
	t := c.Target()
	a := &Actual{Groups: map[string]*Group{}, Users: map[Member]*User{}}
	tops, err := c.topGroups(ctx)
	if err != nil {
		return nil, err
	}
	want := map[string]*DesiredGroup{}
	parents := map[string]*DesiredGroup{}
	for i := range desired {
		d := &desired[i]
		want[d.Path] = d
		if d.Parent != "" {
			if p := want[d.Parent]; p != nil {
				parents[d.Parent] = p
			}
		}
	}
	var needChildren []*Group
	for _, ag := range tops {
		g := a.add(ag, "")
		switch {
		case g.SubGroupCount == 0:
		case ag.SubGroupCount == nil:
			// Keycloak before 23 lists the whole tree at once.
			for _, sub := range ag.SubGroups {
				a.add(sub, g.Path)
			}
			g.ChildrenRead = true
		case t.owner(g) == owned || parents[g.Path] != nil && mayWork(t, g, parents[g.Path]):
			needChildren = append(needChildren, g)
		}
	}
	err = each(ctx, c, len(needChildren), func(i int) error {
		g := needChildren[i]
		kids, err := c.children(ctx, g.ID)
		if err != nil {
			return err
		}
		a.lock(func() {
			for _, k := range kids {
				a.add(k, g.Path)
			}
			g.ChildrenRead = true
		})
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Members of the desired groups that will be reconciled.
	var needMembers []*Group
	for _, d := range desired {
		if g := a.Groups[d.Path]; g != nil && mayWork(t, g, &d) {
			needMembers = append(needMembers, g)
		}
	}
	err = each(ctx, c, len(needMembers), func(i int) error {
		g := needMembers[i]
		ms, err := c.members(ctx, g.ID)
		if err != nil {
			return err
		}
		a.lock(func() { g.Members, g.MembersRead = ms, true })
		return nil
	})
	if err != nil {
		return nil, err
	}

	if err := resolveUsers(ctx, c, a, desired); err != nil {
		return nil, err
	}
	return a, nil
}

// resolveUsers finds the Keycloak user of every desired member the plan
// needs: first among the members read, then from the API.
func resolveUsers(ctx context.Context, c *Client, a *Actual, desired []DesiredGroup) error {
	t := c.Target()
	byID, byName := map[string]*User{}, map[string]*User{}
	for _, d := range desired {
		g := a.Groups[d.Path]
		if g == nil || !g.MembersRead || !mayWork(t, g, &d) {
			continue
		}
		for i := range g.Members {
			u := &g.Members[i]
			byID[u.ID] = u
			byName[strings.ToLower(u.Username)] = u
		}
	}
	var lookups []Member
	blocked := map[string]bool{}
	for _, d := range desired {
		g := a.Groups[d.Path]
		if blocked[d.Parent] || g != nil && !mayWork(t, g, &d) {
			blocked[d.Path] = true // a conflict: its members are not touched
			continue
		}
		for _, m := range d.Members {
			if _, done := a.Users[m]; done {
				continue
			}
			u := byName[strings.ToLower(m.Username)]
			if m.ByID && byID[m.Username] != nil {
				u = byID[m.Username]
			}
			if u != nil {
				a.Users[m] = u
				continue
			}
			a.Users[m] = nil
			lookups = append(lookups, m)
		}
	}
	return each(ctx, c, len(lookups), func(i int) error {
		u, err := lookupUser(ctx, c, lookups[i])
		if err != nil {
			return err
		}
		a.lock(func() { a.Users[lookups[i]] = u })
		return nil
	})
}

// mayWork reports whether waldur-gitops may reconcile the members of g, which
// the desired group d names: g is its own, or an unmarked group d may adopt.
func mayWork(t Target, g *Group, d *DesiredGroup) bool {
	switch t.owner(g) {
	case owned:
		return true
	case unmarked:
		return d.Adopt
	}
	return false
}

// lookupUser finds a desired member in Keycloak: by id and then by exact user
// name (the site agent's keycloak_use_user_id), or by user name only.
func lookupUser(ctx context.Context, c *Client, m Member) (*User, error) {
	if m.ByID && pathSafe(m.Username) {
		u, err := c.userByID(ctx, m.Username)
		if u != nil || err != nil {
			return u, err
		}
	}
	return c.userByName(ctx, m.Username)
}

// lock runs fn under the lock that guards Actual while Observe fills it.
func (a *Actual) lock(fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn()
}

// add records a group read under the parent path parent.
func (a *Actual) add(ag apiGroup, parent string) *Group {
	p := parent + "/" + ag.Name
	g := &Group{ID: ag.ID, Name: ag.Name, Path: p, Parent: parent, Attributes: ag.Attributes}
	if ag.SubGroupCount != nil {
		g.SubGroupCount = *ag.SubGroupCount
	} else {
		g.SubGroupCount = len(ag.SubGroups)
	}
	if g.Attributes == nil {
		g.Attributes = map[string][]string{}
	}
	a.Groups[p] = g
	if pg := a.Groups[parent]; parent != "" && pg != nil && !slices.Contains(pg.Children, p) {
		pg.Children = append(pg.Children, p)
	}
	return g
}

// each runs fn for 0..n-1 on the client's concurrency and returns the first
// error; after an error no further item starts.
func each(ctx context.Context, c *Client, n int, fn func(i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for range min(c.window.ceiling(), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = fmt.Errorf("keycloak: %w", context.Cause(ctx))
	}
	return first
}
