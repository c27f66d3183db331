package render

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
)

// scopeSeeds are the sequences TestMemoryMatchesFullRender drives;
// $WALDUR_GITOPS_SCOPE_SEED runs one more.
var scopeSeeds = []uint64{1, 20261128, 424242}

// TestMemoryMatchesFullRender drives a randomised, seeded sequence of
// events (creations, approvals, limit and Update-order changes,
// terminations, team and offering-user changes, renames into and out of name
// conflicts, pauses, quota holds) over a synthetic site of every backend
// type, and after each renders the state with a Memory (taking unchanged
// resources from the last render) and from scratch: the results — every
// tenant's files and the orders it fulfils, the Keycloak groups, the skips,
// holds and terminations — are the same.
func TestMemoryMatchesFullRender(t *testing.T) {
	seeds := scopeSeeds
	if s, err := strconv.ParseUint(os.Getenv("WALDUR_GITOPS_SCOPE_SEED"), 10, 64); err == nil {
		seeds = append(seeds, s)
	}
	opts := synth.Options{Tenants: 160, Seed: 11, BackendTypes: config.BackendTypes}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := LoadTemplates(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Logf("seed %d (WALDUR_GITOPS_SCOPE_SEED=%d repeats it)", seed, seed)
			st := synth.Generate(opts)
			mem := NewMemory(nil)
			scoped := New(cfg.Config, tpls).WithoutObjects().Remembering(mem)
			ev := &eventMaker{r: rand.New(rand.NewPCG(seed, 0)), st: st}
			reused := 0
			for step := range 80 {
				what := ev.next()
				r, full := scoped, New(cfg.Config, tpls).WithoutObjects()
				if ev.holds != nil {
					r, full = r.Holding(ev.holds), full.Holding(ev.holds)
				}
				got, err := r.Render(st)
				if err != nil {
					t.Fatal(err)
				}
				want, err := full.Render(st)
				if err != nil {
					t.Fatal(err)
				}
				if d := resultDiff(got, want); d != "" {
					t.Fatalf("seed %d, step %d (%s): the render with a memory differs from a full render: %s", seed, step, what, d)
				}
				if step > 0 {
					reused += mem.Stats().Reused
				}
			}
			if reused == 0 {
				t.Fatal("no render took anything from the memory")
			}
		})
	}
}

// resultDiff names the first difference between two results, "" for none.
func resultDiff(got, want *Result) string {
	if !got.Tree(nil).Equal(want.Tree(nil)) {
		g, w := got.Tree(nil), want.Tree(nil)
		for p := range w {
			if string(g[p]) != string(w[p]) {
				return fmt.Sprintf("file %s:\n%s\nwant:\n%s", p, g[p], w[p])
			}
		}
		for p := range g {
			if _, ok := w[p]; !ok {
				return "extra file " + p
			}
		}
	}
	if !reflect.DeepEqual(got.Groups, want.Groups) {
		return fmt.Sprintf("groups:\n%v\nwant:\n%v", got.Groups, want.Groups)
	}
	for i := range want.Tenants {
		if i >= len(got.Tenants) || !reflect.DeepEqual(got.Tenants[i], want.Tenants[i]) {
			return "tenant " + want.Tenants[i].Dir
		}
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("results:\n%+v\nwant:\n%+v", *got, *want)
	}
	return ""
}

// eventMaker changes a state as Waldur's events would.
type eventMaker struct {
	r     *rand.Rand
	st    *waldur.State
	n     int
	holds QuotaHolds
}

// next makes one change and says what it was.
func (e *eventMaker) next() string {
	e.n++
	o := &e.st.Offerings[e.r.IntN(len(e.st.Offerings))]
	if len(o.Resources) == 0 {
		return "nothing"
	}
	rs := &o.Resources[e.r.IntN(len(o.Resources))]
	e.holds = nil
	switch k := e.r.IntN(12); k {
	case 0:
		return e.create(o, *rs)
	case 1:
		for i := range o.Orders {
			if ord := o.Orders[i]; ord.Type == waldur.OrderCreate {
				o.Orders = slices.Delete(o.Orders, i, i+1)
				for j := range o.Resources {
					if o.Resources[j].UUID == ord.MarketplaceResourceUUID {
						o.Resources[j].State = waldur.ResourceOK
					}
				}
				return "create order done " + string(ord.MarketplaceResourceUUID)
			}
		}
		return "no create order"
	case 2:
		rs.Limits = e.setLimit(rs.Limits, waldur.Amount(strconv.Itoa(1+e.r.IntN(64))))
		return "limits of " + string(rs.UUID)
	case 3:
		o.Orders = append(o.Orders, waldur.Order{UUID: e.uuid(), Type: waldur.OrderUpdate, State: waldur.OrderExecuting,
			MarketplaceResourceUUID: rs.UUID, Limits: e.setLimit(rs.Limits, "3"), Created: synth.Base.Add(time.Duration(e.n) * time.Hour)})
		return "update order of " + string(rs.UUID)
	case 4:
		o.Orders = append(o.Orders, waldur.Order{UUID: e.uuid(), Type: waldur.OrderTerminate, State: waldur.OrderExecuting,
			MarketplaceResourceUUID: rs.UUID, Created: synth.Base.Add(time.Duration(e.n) * time.Hour)})
		return "terminate order of " + string(rs.UUID)
	case 5:
		id := rs.UUID
		i := slices.IndexFunc(o.Resources, func(r waldur.Resource) bool { return r.UUID == id })
		o.Resources = slices.Delete(o.Resources, i, i+1)
		o.Terminated = append(o.Terminated, id)
		slices.Sort(o.Terminated)
		return "terminated " + string(id)
	case 6:
		return e.team(o, rs.ProjectUUID)
	case 7:
		if len(o.OfferingUsers) == 0 {
			return "no offering user"
		}
		u := &o.OfferingUsers[e.r.IntN(len(o.OfferingUsers))]
		u.UserEmail = fmt.Sprintf("moved-%d@example.org", e.n)
		u.UserFullName = fmt.Sprint("Renamed ", e.n)
		return "offering user " + u.Username
	case 8:
		other := o.Resources[e.r.IntN(len(o.Resources))]
		rs.Slug = other.Slug // often a name another holds
		return "slug of " + string(rs.UUID) + " to " + other.Slug
	case 9:
		rs.Paused = !rs.Paused
		return "pause of " + string(rs.UUID)
	case 10:
		e.holds = QuotaHolds{rs.UUID: {Keep: map[string]string{"requests.cpu": "77"}, Reason: "in use"}}
		return "hold of " + string(rs.UUID)
	default:
		rs.Limits = e.setLimit(rs.Limits, "not-a-number")
		return "bad limits of " + string(rs.UUID)
	}
}

// create adds a resource like model with its Create order, keeping the
// model's slug (a name conflict) every other time.
func (e *eventMaker) create(o *waldur.OfferingState, model waldur.Resource) string {
	model.UUID, model.State = e.uuid(), waldur.ResourceCreating
	model.Created = synth.Base.Add(time.Duration(e.r.IntN(1000)) * time.Hour)
	if e.r.IntN(2) == 0 {
		model.Slug = fmt.Sprint("ev", e.n)
	}
	o.Resources = append(o.Resources, model)
	o.Orders = append(o.Orders, waldur.Order{UUID: e.uuid(), Type: waldur.OrderCreate, State: waldur.OrderExecuting,
		MarketplaceResourceUUID: model.UUID, Created: model.Created})
	return "created " + string(model.UUID) + " " + model.Slug
}

// team adds a member to a project's team or takes one out.
func (e *eventMaker) team(o *waldur.OfferingState, p waldur.UUID) string {
	team := o.Teams[p]
	if len(team) > 1 && e.r.IntN(2) == 0 {
		o.Teams[p] = slices.Delete(slices.Clone(team), 0, 1)
		return "member left " + string(p)
	}
	if len(o.OfferingUsers) == 0 {
		return "no offering user"
	}
	u := o.OfferingUsers[e.r.IntN(len(o.OfferingUsers))]
	o.Teams[p] = append(slices.Clone(team), waldur.TeamMember{UUID: u.UserUUID, Username: u.UserUsername, Role: "PROJECT.MEMBER",
		OfferingUserUsername: u.Username, OfferingUserState: "OK"})
	return "member joined " + string(p)
}

func (e *eventMaker) uuid() waldur.UUID {
	return waldur.UUID(fmt.Sprintf("%016x%016x", e.r.Uint64(), e.r.Uint64()))
}

// setLimit sets one limit, picked in key order, of a copy of l.
func (e *eventMaker) setLimit(l waldur.Limits, v waldur.Amount) waldur.Limits {
	out := maps.Clone(l)
	if out == nil {
		out = waldur.Limits{}
	}
	keys := slices.Sorted(maps.Keys(out))
	if len(keys) == 0 {
		keys = []string{"cpu"}
	}
	out[keys[e.r.IntN(len(keys))]] = v
	return out
}

// TestDigestCoversEveryField: changing any one field of a resource, an
// order, a team member or an offering user changes the digest, so a field
// added to a Waldur type is never left out of what decides a re-render.
func TestDigestCoversEveryField(t *testing.T) {
	h := newHasher(NewMemory(nil).seeds)
	for _, zero := range []any{waldur.Resource{}, waldur.Order{}, waldur.TeamMember{}, waldur.OfferingUser{}, waldur.ServiceAccount{}, waldur.CourseAccount{}, QuotaHold{}} {
		typ := reflect.TypeOf(zero)
		t.Run(typ.Name(), func(t *testing.T) {
			h.add(zero)
			base := h.sum()
			for i := range typ.NumField() {
				v := reflect.New(typ).Elem()
				f := v.Field(i)
				if !setSome(f) {
					t.Fatalf("field %s: the test cannot set a %s", typ.Field(i).Name, f.Type())
				}
				h.add(v.Interface())
				if h.sum() == base {
					t.Errorf("field %s does not change the digest", typ.Field(i).Name)
				}
			}
		})
	}
}

// setSome gives v a value other than its zero one.
func setSome(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return true
		}
		return v.NumField() > 0 && setSome(v.Field(0))
	default:
		return false
	}
	return true
}
