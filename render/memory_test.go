package render_test

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

	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/render"
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
	cfg, tpls, opts := everyBackendSite(t)
	var offerings []*orders.Offering
	for i := range cfg.Offerings {
		offerings = append(offerings, orders.OfferingFromConfig(&cfg.Offerings[i], nil, nil))
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Logf("seed %d (WALDUR_GITOPS_SCOPE_SEED=%d repeats it)", seed, seed)
			st := synth.Generate(opts)
			mem := render.NewMemory(nil)
			scoped := render.New(cfg.Config, tpls).WithoutObjects().Remembering(mem)
			ev := &eventMaker{r: rand.New(rand.NewPCG(seed, 0)), st: st}
			reused, decided := 0, 0
			for step := range 80 {
				what := ev.next()
				r, full := scoped, render.New(cfg.Config, tpls).WithoutObjects()
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
				got.ResolveClaims(cfg.Config, st, nil)
				want.ResolveClaims(cfg.Config, st, nil)
				if d := resultDiff(got, want); d != "" {
					t.Fatalf("seed %d, step %d (%s): the render with a memory differs from a full render: %s", seed, step, what, d)
				}
				d, n := decisionDiff(offerings, st, got, want)
				if d != "" {
					t.Fatalf("seed %d, step %d (%s): the order decisions differ: %s", seed, step, what, d)
				}
				decided += n
				if step > 0 {
					reused += mem.Stats().Reused
				}
			}
			if reused == 0 || decided == 0 {
				t.Fatalf("%d resources taken from the memory, %d order decisions: the sequence tests nothing", reused, decided)
			}
		})
	}
}

// resultDiff names the first difference between two results, "" for none.
func resultDiff(got, want *render.Result) string {
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

// decisionDiff compares what the order stage decides from two renders of
// st: the approvals (capacity included) and the executing orders it
// finishes, with each render's tree as the pushed one.
// It also says how many orders were decided.
func decisionDiff(offerings []*orders.Offering, st *waldur.State, got, want *render.Result) (string, int) {
	ga, wa := orders.PlanApprovals(offerings, st, got), orders.PlanApprovals(offerings, st, want)
	if !reflect.DeepEqual(ga, wa) {
		return fmt.Sprintf("approvals:\n%+v\nwant:\n%+v", ga, wa), 0
	}
	gf, wf := orders.PlanFinish(offerings, st, got, got.Tree(nil)), orders.PlanFinish(offerings, st, want, want.Tree(nil))
	if !reflect.DeepEqual(gf, wf) {
		return fmt.Sprintf("finished:\n%+v\nwant:\n%+v", gf, wf), 0
	}
	return "", len(ga) + len(gf)
}

// eventMaker changes a state as Waldur's events would.
type eventMaker struct {
	r     *rand.Rand
	st    *waldur.State
	n     int
	holds render.QuotaHolds
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
		e.holds = render.QuotaHolds{rs.UUID: {Keep: map[string]string{"requests.cpu": "77"}, Reason: "in use"}}
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
	state := waldur.OrderExecuting
	if e.r.IntN(3) == 0 {
		state = waldur.OrderPendingProvider // for the approve stage to decide
	}
	o.Orders = append(o.Orders, waldur.Order{UUID: e.uuid(), Type: waldur.OrderCreate, State: state,
		MarketplaceResourceUUID: model.UUID, Created: model.Created})
	return "created " + string(model.UUID) + " " + model.Slug + " (" + state + ")"
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
