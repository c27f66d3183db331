package keycloak

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
)

// DefaultTokenLifespan is Keycloak's default access-token lifespan (five
// minutes), taken when the realm's representation does not show it (the
// account lacks view-realm).
const DefaultTokenLifespan = 5 * time.Minute

// CallUserGroups is the call kind of reading a user's groups back.
const CallUserGroups = "users.groups"

// Leftover is what reading a realm back says about the users leaving it.
type Leftover struct {
	// Realm names the realm (Target.String).
	Realm string
	// Groups maps each user still a direct member of a managed group of the
	// realm to those groups' paths, sorted; a user in none is absent.
	Groups map[string][]string
	// TokenLifespan is the realm's access-token lifespan: a token issued
	// before the removal stays valid that long. LifespanRead says whether
	// it was read from the realm (else it is DefaultTokenLifespan).
	TokenLifespan time.Duration
	LifespanRead  bool
}

// ReadBack reads back, in the realm of every offering named in users
// (offering config name → offering usernames), the managed groups each user
// is still a direct member of, and the realm's access-token lifespan. A
// managed group is one res asks for in the realm, or one that carries the
// waldur-gitops marker of one of the realm's offerings. Users are looked up
// by exact user name; one Keycloak does not know is in no group. The result
// is keyed by offering name; offerings sharing a realm share its Leftover.
func ReadBack(ctx context.Context, cfg *config.Config, res *render.Result, users map[string][]string, o Options) (map[string]*Leftover, map[string]int, error) {
	out := map[string]*Leftover{}
	calls := map[string]int{}
	connect := o.Connect
	if connect == nil {
		connect = func(t Target) (*Client, error) { return NewClient(t, o.ClientOptions) }
	}
	for _, t := range Targets(cfg) {
		var names []string
		for _, off := range t.Offerings {
			names = append(names, users[off.Name]...)
		}
		if len(names) == 0 {
			continue
		}
		c, err := connect(t)
		if err != nil {
			return out, calls, fmt.Errorf("keycloak %s: %w", t, err)
		}
		l, err := readBackTarget(ctx, c, t, res, sortedUnique(names))
		for k, v := range c.Calls() {
			calls[k] += v
		}
		if err != nil {
			return out, calls, fmt.Errorf("keycloak %s: read back: %w", t, err)
		}
		for _, off := range t.Offerings {
			out[off.Name] = l
		}
	}
	return out, calls, nil
}

// readBackTarget reads one realm back for names.
func readBackTarget(ctx context.Context, c *Client, t Target, res *render.Result, names []string) (*Leftover, error) {
	l := &Leftover{Realm: t.String(), Groups: map[string][]string{}, TokenLifespan: DefaultTokenLifespan}
	r, err := c.realm(ctx)
	if err != nil {
		return nil, err
	}
	if r.AccessTokenLifespan != nil && *r.AccessTokenLifespan > 0 {
		l.TokenLifespan, l.LifespanRead = time.Duration(*r.AccessTokenLifespan)*time.Second, true
	}
	managed := map[string]bool{}
	for _, d := range Desire(t, res.Groups) {
		managed[d.Path] = true
	}
	for _, name := range names {
		u, err := c.userByName(ctx, name)
		if err != nil {
			return nil, err
		}
		if u == nil {
			continue
		}
		groups, err := c.userGroups(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			if managed[g.Path] || t.owner(&Group{Attributes: g.Attributes}) == owned {
				l.Groups[name] = append(l.Groups[name], g.Path)
			}
		}
		slices.Sort(l.Groups[name])
	}
	return l, nil
}

// userGroups lists the groups a user is a direct member of, with their
// attributes.
func (c *Client) userGroups(ctx context.Context, id string) ([]apiGroup, error) {
	if !pathSafe(id) {
		return nil, fmt.Errorf("list groups of user %q: not a usable id", id)
	}
	gs, err := pages(c, func(first, max int) ([]apiGroup, error) {
		var page []apiGroup
		return page, c.getJSON(ctx, CallUserGroups, "/users/"+id+"/groups", pageQuery(first, max), &page)
	})
	if err != nil {
		return nil, fmt.Errorf("list groups of user %s: %w", id, err)
	}
	return gs, nil
}
