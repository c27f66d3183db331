package keycloak

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// The ownership marker: attributes of every group waldur-gitops creates.
const (
	// AttrManagedBy holds ManagedBy on the groups waldur-gitops manages. The
	// site agent writes waldur-site-agent into the same attribute.
	AttrManagedBy = "managed_by"
	ManagedBy     = "waldur-gitops"
	// AttrOffering lists the UUIDs of the offerings that need the group.
	AttrOffering = "waldur_offering_uuid"
	// AttrResource lists the UUIDs of the resources that need a group without
	// subgroups (a parent's needs follow from its subgroups).
	AttrResource = "waldur_resource_uuid"
	// AttrDescription is the group's description, as the site agent writes it.
	AttrDescription = "description"
	// AttrMembers lists, on a group with subgroups (Rancher's c_<cluster>),
	// the ids of the members waldur-gitops put there: it removes only those,
	// never the members others added (an adopted group keeps its users).
	AttrMembers = "waldur_gitops_members"
)

// ownKeys are the attributes waldur-gitops writes; others are left as they are.
var ownKeys = []string{AttrManagedBy, AttrOffering, AttrResource, AttrDescription, AttrMembers}

// Target is one Keycloak realm and the offerings whose groups live in it.
type Target struct {
	// URL is the keycloak_url; Realm the keycloak_realm.
	URL, Realm string
	// Settings are the connection settings of the first offering of the target.
	Settings config.KeycloakSettings
	// Offerings are the target's offerings, in config order.
	Offerings []*config.Offering
}

func (t Target) String() string { return strings.TrimRight(t.URL, "/") + " realm " + t.Realm }

// Targets groups the offerings that have keycloak_enabled by Keycloak URL and
// realm, in config order. No offering with Keycloak enabled: no target.
func Targets(cfg *config.Config) []Target {
	var out []Target
	index := map[string]int{}
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		c := o.Settings.Common()
		if !c.KeycloakEnabled {
			continue
		}
		key := c.KeycloakTarget()
		j, ok := index[key]
		if !ok {
			j = len(out)
			index[key] = j
			out = append(out, Target{URL: c.Keycloak.URL, Realm: c.Keycloak.Realm, Settings: c.Keycloak})
		}
		out[j].Offerings = append(out[j].Offerings, o)
	}
	return out
}

// ownsOffering reports whether an offering UUID belongs to the target.
func (t Target) ownsOffering(uuid string) bool {
	return slices.ContainsFunc(t.Offerings, func(o *config.Offering) bool { return o.WaldurOfferingUUID == uuid })
}

// offeringNames returns the config names of the target's offerings among
// uuids, joined for a change-set entry.
func (t Target) offeringNames(uuids []string) string {
	var names []string
	for _, o := range t.Offerings {
		if slices.Contains(uuids, o.WaldurOfferingUUID) {
			names = append(names, o.Name)
		}
	}
	return strings.Join(names, ", ")
}

// Member is one desired member of a group: an offering username and how it is
// looked up in Keycloak.
type Member struct {
	// Username is the team member's offering username.
	Username string
	// ByID looks the user up by Keycloak id first, then by user name
	// (keycloak_use_user_id); otherwise by user name only.
	ByID bool
}

// DesiredGroup is a group a target's offerings need, merged over offerings
// and resources.
type DesiredGroup struct {
	// Path is /name or /parent/name; Name its last part; Parent the parent's
	// path, "" for a top-level group.
	Path, Name, Parent string
	Description        string
	// Offerings are the config names and OfferingUUIDs the UUIDs of the
	// offerings that need the group, sorted.
	Offerings     []string
	OfferingUUIDs []string
	// Resources are the resources that need the group, sorted.
	Resources []waldur.UUID
	// Members are the desired direct members, sorted.
	Members []Member
	// Leaf is true for a group no other desired group is under.
	Leaf bool
	// Adopt takes the group over when it exists without the marker
	// (keycloak_groups.adopt_existing of one of its offerings).
	Adopt bool
}

// Desire returns the groups of res that belong to t, merged by path and sorted
// by path, so that a parent comes before its subgroups.
func Desire(t Target, groups []render.Group) []DesiredGroup {
	byName := map[string]*config.Offering{}
	for _, o := range t.Offerings {
		byName[o.Name] = o
	}
	merged := map[string]*DesiredGroup{}
	for _, g := range groups {
		o := byName[g.Offering]
		if o == nil {
			continue
		}
		d := merged[g.Path()]
		if d == nil {
			d = &DesiredGroup{Path: g.Path(), Name: g.Name, Description: g.Description, Leaf: true}
			if g.Parent != "" {
				d.Parent = "/" + g.Parent
			}
			merged[d.Path] = d
		}
		c := o.Settings.Common()
		d.Offerings = append(d.Offerings, o.Name)
		d.OfferingUUIDs = append(d.OfferingUUIDs, o.WaldurOfferingUUID)
		d.Resources = append(d.Resources, g.Resources...)
		d.Adopt = d.Adopt || c.KeycloakGroups.AdoptExisting
		for _, m := range g.Members {
			d.Members = append(d.Members, Member{Username: m, ByID: c.UseUserID()})
		}
	}
	out := make([]DesiredGroup, 0, len(merged))
	for _, d := range merged {
		if p := merged[d.Parent]; d.Parent != "" && p != nil {
			p.Leaf = false
		}
	}
	for _, d := range merged {
		d.Offerings = sortedUnique(d.Offerings)
		d.OfferingUUIDs = sortedUnique(d.OfferingUUIDs)
		d.Resources = sortedUnique(d.Resources)
		slices.SortFunc(d.Members, func(a, b Member) int {
			return cmp.Or(cmp.Compare(a.Username, b.Username), cmp.Compare(boolInt(a.ByID), boolInt(b.ByID)))
		})
		d.Members = slices.Compact(d.Members)
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b DesiredGroup) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sortedUnique[T cmp.Ordered](s []T) []T {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// attributes returns the marker attributes the group should carry.
func (d *DesiredGroup) attributes() map[string][]string {
	a := map[string][]string{
		AttrManagedBy: {ManagedBy},
		AttrOffering:  slices.Clone(d.OfferingUUIDs),
	}
	if d.Leaf {
		for _, r := range d.Resources {
			a[AttrResource] = append(a[AttrResource], string(r))
		}
	}
	if d.Description != "" {
		a[AttrDescription] = []string{d.Description}
	}
	return a
}

// Actual is what Observe read from a realm.
type Actual struct {
	// Groups are the groups read, by path: every top-level group, and the
	// subgroups of the groups that matter.
	Groups map[string]*Group
	// Users holds the Keycloak user of every desired member the plan needs;
	// nil when Keycloak has no such user.
	Users map[Member]*User

	mu sync.Mutex
	// fresh holds the paths read in this pass when it started from a Memory;
	// nil when every group was read (a full pass). verified holds when the
	// others were last read.
	fresh    map[string]bool
	verified map[string]time.Time
}

// Group is a group as read from Keycloak.
type Group struct {
	ID, Name, Path string
	// Parent is the parent's path, "" for a top-level group.
	Parent     string
	Attributes map[string][]string
	// SubGroupCount is the number of subgroups Keycloak reports.
	SubGroupCount int
	// Children are the paths of the subgroups, when ChildrenRead.
	Children     []string
	ChildrenRead bool
	// Members are the direct members, when MembersRead.
	Members     []User
	MembersRead bool
}

// User is a Keycloak user.
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
}

// ownership says whose a group is.
type ownership int

const (
	// unmarked: no waldur-gitops marker (maybe another tool's).
	unmarked ownership = iota
	// foreign: marked by waldur-gitops for offerings this config does not have
	// in this realm (another deployment's).
	foreign
	// owned: marked by waldur-gitops for at least one of the target's offerings.
	owned
)

func (t Target) owner(g *Group) ownership {
	if !slices.Contains(g.Attributes[AttrManagedBy], ManagedBy) {
		return unmarked
	}
	if slices.ContainsFunc(g.Attributes[AttrOffering], t.ownsOffering) {
		return owned
	}
	return foreign
}
