package render

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"log/slog"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waldur/waldur-gitops/internal/parallel"
	"github.com/waldur/waldur-gitops/waldur"
)

// ScopeCause says why a render rendered every resource instead of taking
// the unchanged ones from the last render (Memory). It is logged at debug.
type ScopeCause string

// The reasons a render with a Memory renders in full.
const (
	// ScopeNoLastRender: nothing is remembered yet (the first render of an
	// engine, so also the first after a config change).
	ScopeNoLastRender ScopeCause = "no_last_render"
	// ScopeOfferingChanged: an offering-wide input changed (the offering
	// was unread, or is now read again): its resources all render.
	ScopeOfferingChanged ScopeCause = "offering_changed"
)

// Memory keeps, from one render to the next, what each resource rendered to
// and a digest of everything that went into it: the resource, its orders and
// what they make of its limits (Update orders, plan quotas, holds), its
// project's team and accounts, and the offering users those name. A render
// with a Memory (Renderer.Remembering) renders only the resources whose digest
// changed, and takes the tenants, groups, warnings and skips of the others
// from the last render, so an event that touches one resource renders one
// tenant (plus those its change reaches through a shared team or user).
// Names are still claimed for every resource in creation order: a
// remembered resource whose names another has taken in the meantime, or
// that was skipped for a name conflict, is rendered again. The result is the
// same, byte for byte, as a render without a Memory.
//
// A Memory belongs to one config and its templates (serve keeps one per
// engine). It is safe for concurrent use; renders replace what it holds.
type Memory struct {
	mu    sync.Mutex
	seeds [2]maphash.Seed
	byOf  map[string]map[waldur.UUID]*memo
	log   *slog.Logger
	last  ScopeStats
}

// ScopeStats is what the latest render with a Memory did.
type ScopeStats struct {
	// Rendered and Reused count the resources rendered and those taken
	// from the last render.
	Rendered, Reused int
	// Full, when set, is why every resource of some offering rendered.
	Full ScopeCause
}

// NewMemory returns an empty Memory; log (nil: none) is told at debug how
// each render was scoped.
func NewMemory(log *slog.Logger) *Memory {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Memory{log: log, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

// Stats is what the latest render with m did.
func (m *Memory) Stats() ScopeStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// digest sums what went into one resource's render: 128 bits of two
// independently seeded hashes.
type digest [2]uint64

// memo is what one resource rendered to.
type memo struct {
	sum                   digest
	claims, projectClaims []string
	orders                []waldur.UUID
	name                  string
	warnings              []string
	excluded              []excludedMember
	tenants               []*Tenant
	groups                []Group
	err                   error
}

// Remembering makes Render take the unchanged resources from m (see Memory).
func (r *Renderer) Remembering(m *Memory) *Renderer {
	c := *r
	c.memory = m
	return &c
}

// scope is one render's use of a Memory: what the last render left, and
// what this one leaves.
type scope struct {
	m     *Memory
	prev  map[string]map[waldur.UUID]*memo
	next  map[string]map[waldur.UUID]*memo
	stats ScopeStats
	seeds [2]maphash.Seed
}

// begin starts a render's scope; nil without a Memory.
func (m *Memory) begin() *scope {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &scope{m: m, prev: m.byOf, next: map[string]map[waldur.UUID]*memo{}, seeds: m.seeds}
	if s.prev == nil {
		s.stats.Full = ScopeNoLastRender
	}
	return s
}

// offering is what the last render left of one offering, nil when nothing.
func (s *scope) offering(name string) map[waldur.UUID]*memo {
	if s == nil {
		return nil
	}
	prev, ok := s.prev[name]
	if !ok && s.prev != nil {
		s.stats.Full = ScopeOfferingChanged
	}
	s.next[name] = map[waldur.UUID]*memo{}
	return prev
}

// end keeps what this render left, replacing the last render's.
func (s *scope) end() {
	if s == nil {
		return
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.byOf, s.m.last = s.next, s.stats
	if s.stats.Full != "" {
		s.m.log.Debug("rendered in full", "cause", string(s.stats.Full), "resources", s.stats.Rendered)
		return
	}
	s.m.log.Debug("rendered what changed", "rendered", s.stats.Rendered, "reused", s.stats.Reused)
}

// keep remembers what job j of offering rendered to. A job skipped for a
// name another resource holds is not remembered: it depends on others.
func (s *scope) keep(offering string, j *job) {
	if s == nil {
		return
	}
	if j.reused {
		s.stats.Reused++
	} else {
		s.stats.Rendered++
	}
	if j.claimErr {
		return
	}
	s.next[offering][j.res.UUID] = &memo{
		sum: j.sum, claims: j.claims, projectClaims: j.projectClaims, orders: j.orders,
		name: j.name, warnings: j.warnings, excluded: j.excluded, tenants: j.tenants, groups: j.groups, err: j.err,
	}
}

// reuse fills j from what its resource rendered to last time when its
// inputs are the same and its names are still free, claiming them as
// claimNames would; it reports whether it did.
func reuse(prev map[waldur.UUID]*memo, j *job, claimed map[string]waldur.UUID, projectClaimed map[string]*waldur.Resource) bool {
	m := prev[j.res.UUID]
	if m == nil || m.sum != j.sum {
		return false
	}
	// The names are claimed before the templates run, so a resource whose
	// templates failed holds them too.
	for _, name := range m.claims {
		if _, taken := claimed[name]; taken {
			return false
		}
	}
	if checkProjectClaims(m.projectClaims, j.res, projectClaimed) != nil {
		return false
	}
	takeClaims(j.res, m.claims, m.projectClaims, claimed, projectClaimed)
	j.reused = true
	j.claims, j.projectClaims = m.claims, m.projectClaims
	j.name, j.warnings, j.excluded, j.tenants, j.groups, j.err = m.name, m.warnings, m.excluded, m.tenants, m.groups, m.err
	return true
}

// digests are the per-render digests of what resources share: their
// project's team and accounts with the offering users they name.
type digests struct {
	in       *offeringInput
	h        *hasher
	projects map[waldur.UUID]digest
	// accounts are the service and course accounts by project.
	accounts map[waldur.UUID][]any
	// dropObjects is the renderer's: a tenant kept with its objects is
	// not one rendered without them.
	dropObjects bool
}

// hasher feeds values into two seeded hashes, walking them field by field
// (every field, exported or not, so a field added to a Waldur type is
// covered without a change here); map keys are taken in sorted order.
type hasher struct {
	seeds [2]maphash.Seed
	buf   []byte
	// stable sums with SHA-256 instead: the same in every process.
	stable bool
}

func (h *hasher) str(s string) {
	h.u64(uint64(len(s)))
	h.buf = append(h.buf, s...)
}

func (h *hasher) u64(v uint64) { h.buf = binary.LittleEndian.AppendUint64(h.buf, v) }

// add adds v to the sum.
func (h *hasher) add(v any) { h.value(reflect.ValueOf(v)) }

var timeType = reflect.TypeFor[time.Time]()

func (h *hasher) value(v reflect.Value) {
	if !v.IsValid() {
		h.u64(0)
		return
	}
	h.u64(uint64(v.Kind()))
	switch v.Kind() {
	case reflect.String:
		h.str(v.String())
	case reflect.Bool:
		if v.Bool() {
			h.u64(1)
		} else {
			h.u64(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		h.u64(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		h.u64(v.Uint())
	case reflect.Float32, reflect.Float64:
		h.u64(math.Float64bits(v.Float()))
	case reflect.Struct:
		if v.Type() == timeType && v.CanInterface() {
			t := v.Interface().(time.Time)
			_, off := t.Zone()
			h.u64(uint64(t.UnixNano()))
			h.u64(uint64(off))
			h.str(t.Location().String())
			return
		}
		for i := range v.NumField() {
			h.value(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		h.u64(uint64(v.Len()))
		for i := range v.Len() {
			h.value(v.Index(i))
		}
	case reflect.Map:
		h.mapValue(v)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			h.u64(0)
			return
		}
		h.u64(1)
		h.value(v.Elem())
	default:
		// Functions and channels carry no data a template reads; an
		// unsafe pointer neither.
	}
}

// mapValue adds a map's entries in the order of their keys' text.
func (h *hasher) mapValue(v reflect.Value) {
	h.u64(uint64(v.Len()))
	if v.IsNil() {
		return
	}
	if v.CanInterface() {
		switch m := v.Interface().(type) {
		case waldur.Limits:
			for _, k := range slices.Sorted(maps.Keys(m)) {
				h.str(k)
				h.str(string(m[k]))
			}
			return
		case map[string]string:
			for _, k := range slices.Sorted(maps.Keys(m)) {
				h.str(k)
				h.str(m[k])
			}
			return
		}
	}
	keys := v.MapKeys()
	text := make([]string, len(keys))
	for i, k := range keys {
		if k.Kind() == reflect.String {
			text[i] = k.String()
		} else {
			text[i] = fmt.Sprint(k)
		}
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(text[a], text[b]) })
	for _, i := range order {
		h.str(text[i])
		h.value(v.MapIndex(keys[i]))
	}
}

// sum is the digest of what was added since the last sum.
func (h *hasher) sum() digest {
	var s digest
	if h.stable {
		b := sha256.Sum256(h.buf)
		s = digest{binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:16])}
	} else {
		s = digest{maphash.Bytes(h.seeds[0], h.buf), maphash.Bytes(h.seeds[1], h.buf)}
	}
	h.buf = h.buf[:0]
	return s
}

func newHasher(seeds [2]maphash.Seed) *hasher { return &hasher{seeds: seeds} }

// digests digests the resources of one offering's input for renderer r;
// nil without a scope.
func (s *scope) digests(r *Renderer, in *offeringInput) *digests {
	var h *hasher
	switch {
	case r.unchanged != nil:
		// The fingerprint of the inputs outlives the process (HollowWhen).
		h = &hasher{stable: true}
	case s != nil:
		h = newHasher(s.seeds)
	default:
		return nil
	}
	return &digests{in: in, h: h, projects: map[waldur.UUID]digest{}, dropObjects: r.dropObjects}
}

// sums sets the digest of everything rendering each job's resource reads
// (the resource, the orders its tenant fulfils and what they make of its
// limits, its project's team and accounts), on workers at once: the projects' digests first, in order, then each resource's with a
// hasher per worker (the input is only read). Nil digests leave them zero.
func (d *digests) sums(jobs []*job, workers int) {
	if d == nil {
		return
	}
	for _, j := range jobs {
		d.project(j.res.ProjectUUID)
	}
	workers = max(1, min(workers, len(jobs)))
	chunk := (len(jobs) + workers - 1) / workers
	parallel.For(workers, workers, func(w int) {
		h := &hasher{seeds: d.h.seeds, stable: d.h.stable}
		for _, j := range jobs[min(w*chunk, len(jobs)):min((w+1)*chunk, len(jobs))] {
			j.sum = d.resourceWith(h, j.res, j.orders, d.projects[j.res.ProjectUUID])
		}
	})
}

// resourceWith is resource with hasher h and the project's digest.
func (d *digests) resourceWith(h *hasher, r *waldur.Resource, orders []waldur.UUID, project digest) digest {
	in := d.in
	h.add(rendered(r))
	h.add(orders)
	for _, o := range in.orders[r.UUID] {
		h.add(o)
		h.add(in.held[o.UUID])
	}
	h.add(in.updates[r.UUID])
	h.add(in.holds[r.UUID])
	h.add(project)
	h.add(d.dropObjects)
	return h.sum()
}

// rendered is r without the fields the tool writes back and the render
// never reads (ResourceData has neither): refresh_last_sync moves
// last_sync every hour, which must not count as a change of input.
func rendered(r *waldur.Resource) waldur.Resource {
	c := *r
	c.LastSync, c.BackendMetadata = "", nil
	return c
}

// project digests a project's team, its service and course accounts, and
// the offering users they name, once per render.
func (d *digests) project(p waldur.UUID) digest {
	if sum, ok := d.projects[p]; ok {
		return sum
	}
	in, h := d.in, d.h
	if d.accounts == nil {
		d.accounts = map[waldur.UUID][]any{}
		for i := range in.st.ServiceAccounts {
			a := &in.st.ServiceAccounts[i]
			d.accounts[a.ProjectUUID] = append(d.accounts[a.ProjectUUID], a)
		}
		for i := range in.st.CourseAccounts {
			a := &in.st.CourseAccounts[i]
			d.accounts[a.ProjectUUID] = append(d.accounts[a.ProjectUUID], a)
		}
	}
	for _, m := range in.st.Teams[p] {
		h.add(m)
		h.add(in.users[m.OfferingUserUsername])
	}
	for _, a := range d.accounts[p] {
		h.add(a)
		switch a := a.(type) {
		case *waldur.ServiceAccount:
			h.add(in.users[a.Username])
		case *waldur.CourseAccount:
			h.add(in.users[a.Username])
		}
	}
	sum := h.sum()
	d.projects[p] = sum
	return sum
}
