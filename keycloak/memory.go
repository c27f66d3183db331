package keycloak

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/waldur"
)

// Memory keeps what the passes over each realm found, so that the next pass
// need not read every group again: per realm, the managed and desired groups
// by path with their id, marker attributes, subgroups and direct members, and
// when each was last read from Keycloak. serve keeps one Memory per config
// between runs; with a Store it is also kept between processes (a state
// file, a ref of the GitOps repository, ConfigMaps: see the engine's wiring),
// for runs that start afresh each time (a CronJob).
//
// A pass with a memory (see Options.Memory) reads only what it cannot trust:
// the groups of this run's verification slice (every group is re-read within
// keycloak.verify_every), the desired groups it does not know (looked up by
// path), and, before any write, every group the plan would change. Nothing
// is removed or deleted on the strength of the memory alone. Without a
// memory for the realm and config (the first run, a state written for
// another realm, URL or set of offerings, a state that cannot be read) the
// pass reads everything, as without a memory. The state holds no secret:
// group paths, ids and attributes, and member ids and user names.
//
// What a store holds is untrusted: a time in it that lies in the future
// (a group's last read, the last pass, the last read of the admin events)
// counts as never.
//
// A Memory is safe for concurrent use.
type Memory struct {
	store Store

	mu     sync.Mutex
	loaded bool
	realms map[string]*realmMemory
	// warn holds why the stored state was not used, until a pass reports it.
	warn string
	// tooBig: the state was once over MaxState (warned once).
	tooBig bool
}

// NewMemory returns an empty memory; with a path it is read from that state
// file at its first use and written back after every pass.
func NewMemory(path string) *Memory {
	if path == "" {
		return NewStoredMemory(nil)
	}
	return NewStoredMemory(FileStore{Path: path})
}

// NewStoredMemory returns an empty memory read from s at its first use and
// written back to it after every pass that is not a dry run; nil s: a memory
// held only in this process.
func NewStoredMemory(s Store) *Memory {
	return &Memory{store: s, realms: map[string]*realmMemory{}}
}

// Path is the memory's state file, "" for a memory held elsewhere.
func (m *Memory) Path() string {
	if f, ok := m.store.(FileStore); ok {
		return f.Path
	}
	return ""
}

// Store is where the memory is kept between processes; nil: nowhere.
func (m *Memory) Store() Store { return m.store }

// stateVersion is the format of the state written (storedState); a state
// of another version than this or 1 is not used.
const stateVersion = 2

// stateFile is the stored state's content.
type stateFile struct {
	// Comment tells a person what the file is.
	Comment string         `json:"comment"`
	Version int            `json:"version"`
	Realms  []*realmMemory `json:"realms"`
}

// realmMemory is what the memory holds about one target. It is never changed
// once stored: a pass stores a new one.
type realmMemory struct {
	// Key identifies the target and the config it was made for (see memoryKey).
	Key string `json:"key"`
	// URL and Realm say to a reader whose memory it is.
	URL   string `json:"url"`
	Realm string `json:"realm"`
	// LastPass is when the last pass over every group began.
	LastPass time.Time `json:"last_pass"`
	// Groups by path.
	Groups map[string]*memGroup `json:"groups"`
	// EventsFrom is the time (milliseconds, Keycloak's clock) from which the
	// next pass reads the realm's admin events; 0 when the last pass could
	// not use them. EventsRead is when (this host's clock) that was.
	EventsFrom int64     `json:"events_from,omitempty"`
	EventsRead time.Time `json:"events_read,omitzero"`
	// stored: read from a store, not left by a pass of this process; its
	// EventsFrom is checked against the realm's newest event.
	stored bool
}

// memGroup is one remembered group.
type memGroup struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"`
	// Attributes are the marker attributes only (ownKeys).
	Attributes    map[string][]string `json:"attributes,omitempty"`
	SubGroupCount int                 `json:"subgroups,omitempty"`
	Children      []string            `json:"children,omitempty"`
	ChildrenRead  bool                `json:"children_read,omitempty"`
	Members       []User              `json:"members,omitempty"`
	MembersRead   bool                `json:"members_read,omitempty"`
	// Verified is when the group was last read from Keycloak (or written by
	// a pass that then knew what it holds); zero: re-read it at the next pass.
	Verified time.Time `json:"verified"`
}

// memoryKey identifies a target and what decides how its groups are read:
// the Keycloak URL, the realm, and the offerings with their user lookup and
// adoption settings. A memory under another key is not used.
func memoryKey(t Target) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00", strings.TrimRight(t.URL, "/"), t.Realm)
	var offs []string
	for _, o := range t.Offerings {
		c := o.Settings.Common()
		offs = append(offs, fmt.Sprintf("%s/%t/%t", o.WaldurOfferingUUID, c.UseUserID(), c.KeycloakGroups.AdoptExisting))
	}
	slices.Sort(offs)
	b.WriteString(strings.Join(offs, ","))
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}

// load reads the store once; what cannot be used is left out with a
// warning for the next pass to log, and every time after now is taken for
// never (m.mu held).
func (m *Memory) load(ctx context.Context, now time.Time) {
	if m.loaded {
		return
	}
	m.loaded = true
	if m.store == nil {
		return
	}
	data, err := m.store.Load(ctx)
	if err != nil {
		m.warn = fmt.Sprintf("%s cannot be read (%v); every group is read again", m.store, err)
		return
	}
	if data == nil {
		return
	}
	f, err := decodeState(data)
	if err != nil {
		m.warn = fmt.Sprintf("%s is not valid (%v); every group is read again", m.store, err)
		return
	}
	if f.Version != stateVersion && f.Version != 1 {
		m.warn = fmt.Sprintf("%s has version %d, not %d; every group is read again", m.store, f.Version, stateVersion)
		return
	}
	for _, r := range f.Realms {
		if r == nil || r.Key == "" || r.Groups == nil || !r.valid() {
			continue
		}
		r.distrust(now)
		m.realms[r.Key] = r
	}
}

// distrust takes every time after now in a stored memory for never: a group
// last read in the future is re-read, a last pass in the future makes the
// next pass re-read every group, and admin events last read in the future
// are not used.
func (r *realmMemory) distrust(now time.Time) {
	r.stored = true
	if r.LastPass.After(now) {
		r.LastPass = time.Time{}
	}
	if r.EventsRead.After(now) {
		r.EventsRead, r.EventsFrom = time.Time{}, 0
	}
	for _, g := range r.Groups {
		if g.Verified.After(now) {
			g.Verified = time.Time{}
		}
	}
}

// valid reports whether a stored memory is whole: every group has an id and
// a name that ends its path.
func (r *realmMemory) valid() bool {
	for p, g := range r.Groups {
		if g == nil || g.ID == "" || g.Name == "" || p != g.Parent+"/"+g.Name {
			return false
		}
	}
	return true
}

// take returns the memory of t, or nil and why there is none; it also
// returns, once, a warning about the stored state. now is the pass's clock.
func (m *Memory) take(ctx context.Context, t Target, now time.Time) (*realmMemory, string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load(ctx, now)
	warn := m.warn
	m.warn = ""
	r := m.realms[memoryKey(t)]
	if r != nil {
		return r, "", warn
	}
	why := "nothing remembered of this realm"
	for _, o := range m.realms {
		if o.URL == strings.TrimRight(t.URL, "/") && o.Realm == t.Realm {
			why = "what is remembered of this realm was found with another config"
		}
	}
	return nil, why, warn
}

// put stores the memory of a target and, when keep, writes the store.
func (m *Memory) put(ctx context.Context, r *realmMemory, keep bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.realms[r.Key] = r
	if !keep {
		return nil
	}
	return m.save(ctx)
}

// save writes the store (m.mu held). A state over MaxState is not written;
// that is an error once.
func (m *Memory) save(ctx context.Context) error {
	if m.store == nil {
		return nil
	}
	f := stateFile{Comment: "waldur-gitops: what the Keycloak passes found (docs/keycloak.md#large-realms); safe to delete", Version: stateVersion}
	for _, k := range slices.Sorted(maps.Keys(m.realms)) {
		f.Realms = append(f.Realms, m.realms[k])
	}
	data, err := encodeState(f)
	if err != nil {
		return fmt.Errorf("%s: %w", m.store, err)
	}
	if len(data) > maxState {
		if m.tooBig {
			return nil
		}
		m.tooBig = true
		return fmt.Errorf("%s: %w: %d bytes, the bound is %d; kept in this process only", m.store, ErrStateTooLarge, len(data), maxState)
	}
	if err := m.store.Save(ctx, data); err != nil {
		return fmt.Errorf("save %s: %w", m.store, err)
	}
	return nil
}

// actual builds what the plan starts from out of the remembered groups keep
// selects; none of them is fresh yet.
func (r *realmMemory) actual(keep func(path string) bool) *Actual {
	a := &Actual{Groups: map[string]*Group{}, Users: map[Member]*User{}, fresh: map[string]bool{}, verified: map[string]time.Time{}}
	for p, m := range r.Groups {
		if !keep(p) {
			continue
		}
		a.Groups[p] = &Group{
			ID: m.ID, Name: m.Name, Path: p, Parent: m.Parent, Attributes: cloneAttrs(m.Attributes),
			SubGroupCount: m.SubGroupCount, Children: slices.Clone(m.Children), ChildrenRead: m.ChildrenRead,
			Members: slices.Clone(m.Members), MembersRead: m.MembersRead,
		}
		a.verified[p] = m.Verified
	}
	return a
}

func cloneAttrs(in map[string][]string) map[string][]string {
	out := make(map[string][]string, len(in))
	for k, v := range in {
		out[k] = slices.Clone(v)
	}
	return out
}

// markerAttrs keeps the attributes waldur-gitops writes.
func markerAttrs(in map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, k := range ownKeys {
		if v, ok := in[k]; ok {
			out[k] = slices.Clone(v)
		}
	}
	return out
}

// remembered is what a pass hands to the memory: the groups it read or
// wrote, and what became of the plan's operations.
type remembered struct {
	t      Target
	prev   *realmMemory // nil after a full pass
	a      *Actual
	plan   *Plan
	x      *execution // nil for a dry run
	scoped bool       // a run for some resources only
	// covered are the remembered paths the pass started from (replaced by
	// what it found).
	covered []string
	start   time.Time
	// eventsFrom is where the next pass reads admin events from; 0: none.
	// eventsRead is when that window was opened; zero: at start.
	eventsFrom int64
	eventsRead time.Time
}

// build makes the memory a pass leaves: the previous memory with the
// groups the pass covered replaced by what it read, changed by the
// operations that took effect. An operation that failed leaves its group to
// be re-read.
func (r remembered) build() *realmMemory {
	out := &realmMemory{Key: memoryKey(r.t), URL: strings.TrimRight(r.t.URL, "/"), Realm: r.t.Realm, Groups: map[string]*memGroup{}}
	if r.prev != nil {
		out.LastPass = r.prev.LastPass
		if r.scoped {
			maps.Copy(out.Groups, r.prev.Groups)
			for _, p := range r.covered {
				delete(out.Groups, p)
			}
		}
	}
	if !r.scoped {
		out.LastPass = r.start
		out.EventsFrom, out.EventsRead = r.eventsFrom, r.start
		if !r.eventsRead.IsZero() {
			out.EventsRead = r.eventsRead
		}
	} else if r.prev != nil {
		// A run for some resources reads no events: the next pass does.
		out.EventsFrom, out.EventsRead = r.prev.EventsFrom, r.prev.EventsRead
	}
	desired := map[string]bool{}
	if r.plan != nil {
		for _, e := range r.plan.Changes.Entries {
			if e.Kind == KindGroup {
				desired[e.Subject] = true
			}
		}
	}
	// Keep the groups waldur-gitops owns or is asked for, and their parents.
	keep := map[string]bool{}
	for p, g := range r.a.Groups {
		if r.t.owner(g) == owned || desired[p] {
			for q := p; q != ""; {
				keep[q] = true
				pg := r.a.Groups[q]
				if pg == nil {
					break
				}
				q = pg.Parent
			}
		}
	}
	for p := range keep {
		g := r.a.Groups[p]
		if g == nil {
			continue
		}
		v := r.start
		if r.a.fresh != nil && !r.a.fresh[p] {
			v = r.a.verified[p]
		}
		out.Groups[p] = &memGroup{
			ID: g.ID, Name: g.Name, Parent: g.Parent, Attributes: markerAttrs(g.Attributes),
			SubGroupCount: g.SubGroupCount, Children: slices.Clone(g.Children), ChildrenRead: g.ChildrenRead,
			Members: slices.Clone(g.Members), MembersRead: g.MembersRead, Verified: v,
		}
	}
	if r.x != nil {
		r.apply(out)
	}
	return out
}

// apply changes the memory by the operations that took effect.
func (r remembered) apply(out *realmMemory) {
	users := map[string]User{}
	for _, u := range r.a.Users {
		if u != nil {
			users[u.ID] = *u
		}
	}
	// own copies a group before it is changed: the previous memory's groups
	// are shared with it.
	own := func(p string) *memGroup {
		g := out.Groups[p]
		if g == nil {
			return nil
		}
		c := *g
		c.Members, c.Children, c.Attributes = slices.Clone(g.Members), slices.Clone(g.Children), cloneAttrs(g.Attributes)
		out.Groups[p] = &c
		return &c
	}
	for _, o := range r.plan.Ops {
		ok := r.x.out.Entries[o.Entry].Action != changeset.Skip
		g := own(o.Path)
		if !ok {
			if g != nil {
				g.Verified = time.Time{}
			}
			continue
		}
		switch o.Kind {
		case OpCreateGroup:
			id := r.x.created[o.Path]
			if id == "" {
				continue
			}
			out.Groups[o.Path] = &memGroup{ID: id, Name: o.Name, Parent: o.Parent, Attributes: markerAttrs(o.Attributes), ChildrenRead: true, MembersRead: true, Verified: r.start}
			if pg := own(o.Parent); pg != nil && !slices.Contains(pg.Children, o.Path) {
				pg.Children = append(pg.Children, o.Path)
				pg.SubGroupCount++
			}
		case OpUpdateGroup:
			if g != nil {
				g.Attributes = markerAttrs(o.Attributes)
			}
		case OpAddMember:
			if g != nil && !slices.ContainsFunc(g.Members, func(u User) bool { return u.ID == o.UserID }) {
				u, known := users[o.UserID]
				if !known {
					u = User{ID: o.UserID, Username: o.Username}
				}
				g.Members = append(g.Members, u)
			}
		case OpRemoveMember:
			if g != nil {
				g.Members = slices.DeleteFunc(g.Members, func(u User) bool { return u.ID == o.UserID })
			}
		case OpDeleteGroup:
			for p := range out.Groups {
				if p == o.Path || strings.HasPrefix(p, o.Path+"/") {
					delete(out.Groups, p)
				}
			}
			if g != nil {
				if pg := own(g.Parent); pg != nil {
					pg.Children = slices.DeleteFunc(pg.Children, func(c string) bool { return c == o.Path })
					pg.SubGroupCount = max(pg.SubGroupCount-1, 0)
				}
			}
		}
	}
}

// inScope reports whether a group serves one of the resources of a scoped run.
func inScope(resources []string, scope map[waldur.UUID]bool) bool {
	return slices.ContainsFunc(resources, func(r string) bool { return scope[waldur.UUID(r)] })
}

// rotation picks the remembered groups this pass re-reads: every group not
// read within every, and at least the share of all groups that the time since
// the last pass is of every, the longest unread first, so that reads spread
// evenly over the bound.
func rotation(a *Actual, last, now time.Time, every time.Duration) []string {
	paths := slices.Collect(maps.Keys(a.Groups))
	slices.SortFunc(paths, func(x, y string) int {
		return cmp.Or(a.verified[x].Compare(a.verified[y]), cmp.Compare(x, y))
	})
	n := 0
	for _, p := range paths {
		if now.Sub(a.verified[p]) >= every {
			n++
		}
	}
	switch elapsed := now.Sub(last); {
	case every <= 0 || elapsed >= every:
		n = len(paths)
	case elapsed > 0:
		share := int((int64(len(paths))*int64(elapsed) + int64(every) - 1) / int64(every))
		n = max(n, share)
	}
	return paths[:min(n, len(paths))]
}
