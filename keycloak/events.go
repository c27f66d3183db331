package keycloak

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// eventPage is how many admin events a call asks for; maxEvents is how many a
// pass reads at most before it reads every group instead.
const (
	eventPage = 1000
	maxEvents = 100 * eventPage
)

// errTooManyEvents: more admin events than a pass reads; it reads everything.
var errTooManyEvents = errors.New("more admin events since the last pass than are worth reading")

// realmEvents is whether a pass can learn from the realm's admin events what
// changed since the last one.
type realmEvents struct {
	usable bool
	// why they cannot be used.
	why string
	// retention is how long the realm keeps them (adminEventsExpiration);
	// 0: for ever.
	retention time.Duration
	// failed: the settings could not be read this time (not a refusal): the
	// next pass reads the events from where this one should have.
	failed bool
}

// adminEventsOf reads the realm's event settings. The account needs
// view-realm to see them and view-events to read the events; without either
// the memory relies on its rotation alone.
func adminEventsOf(ctx context.Context, c *Client) realmEvents {
	ri, err := c.realm(ctx)
	switch {
	case err != nil:
		return realmEvents{why: err.Error(), failed: !IsForbidden(err)}
	case ri.AdminEventsEnabled == nil:
		return realmEvents{why: "the account waldur-gitops logs in as cannot see the realm's event settings (it needs the realm-management roles view-realm and view-events)"}
	case !*ri.AdminEventsEnabled:
		return realmEvents{why: "the realm does not record admin events (Realm settings → Events → Admin events settings → Save events)"}
	}
	ev := realmEvents{usable: true}
	if s, err := strconv.Atoi(ri.Attributes["adminEventsExpiration"]); err == nil && s > 0 {
		ev.retention = time.Duration(s) * time.Second
	}
	return ev
}

// newestEvent returns the time of the realm's newest admin event on groups,
// memberships or users, 0 when there is none.
func newestEvent(ctx context.Context, c *Client) (int64, error) {
	page, err := c.adminEvents(ctx, 0, 0, 1)
	if err != nil || len(page) == 0 {
		return 0, err
	}
	return page[0].Time, nil
}

// changedSince reads the admin events at or after from and returns the
// remembered groups they touch — a group changed, deleted or given a
// subgroup, a membership of it made or ended, a member changed or deleted —
// and the time of the newest event. The events of the account waldur-gitops
// logs in as are its own writes, which the memory has already.
func changedSince(ctx context.Context, c *Client, mem *realmMemory, from int64) ([]string, int64, int, error) {
	byID := map[string]string{}
	byMember := map[string][]string{}
	for p, g := range mem.Groups {
		byID[g.ID] = p
		for _, u := range g.Members {
			byMember[u.ID] = append(byMember[u.ID], p)
		}
	}
	self := ""
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	newest, n := from-1, 0
	for first := 0; ; first += eventPage {
		if first >= maxEvents {
			return nil, 0, 0, errTooManyEvents
		}
		page, err := c.adminEvents(ctx, from, first, eventPage)
		if err != nil {
			return nil, 0, 0, err
		}
		if first == 0 && len(page) > 0 {
			self = c.self(ctx)
		}
		for _, e := range page {
			newest = max(newest, e.Time)
			if self != "" && e.AuthDetails.UserID == self {
				continue
			}
			n++
			parts := strings.Split(e.ResourcePath, "/")
			switch {
			case e.ResourceType == "GROUP" && len(parts) >= 2 && parts[0] == "groups":
				add(byID[parts[1]])
			case e.ResourceType == "GROUP_MEMBERSHIP" && len(parts) == 4 && parts[0] == "users" && parts[2] == "groups":
				add(byID[parts[3]])
			case e.ResourceType == "USER" && e.OperationType != "CREATE" && len(parts) >= 2 && parts[0] == "users":
				for _, p := range byMember[parts[1]] {
					add(p)
				}
			}
		}
		if len(page) < eventPage {
			return out, newest, n, nil
		}
	}
}
