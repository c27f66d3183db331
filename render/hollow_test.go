package render_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/templates"
	"github.com/waldur/waldur-gitops/waldur"
)

// everyBackendSite is a synthetic site of every backend type and its
// templates.
func everyBackendSite(t *testing.T) (*config.Loaded, map[string][]*templates.Template, synth.Options) {
	t.Helper()
	opts := synth.Options{Tenants: 160, Seed: 11, BackendTypes: config.BackendTypes}
	cfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, tpls, opts
}

// settled is st with every order done: nothing left for a render to fulfil.
func settled(st *waldur.State) *waldur.State {
	for i := range st.Offerings {
		o := &st.Offerings[i]
		for j := range o.Orders {
			o.Orders[j].State = waldur.OrderDone
		}
		for j := range o.Resources {
			if r := &o.Resources[j]; r.State == waldur.ResourceCreating || r.State == waldur.ResourceUpdating {
				r.State = waldur.ResourceOK
			}
		}
		o.Resources = slices.DeleteFunc(o.Resources, func(r waldur.Resource) bool { return r.State == waldur.ResourceTerminating })
	}
	return st
}

// dropSkipped takes the skipped resources out of st.
func dropSkipped(st *waldur.State, skipped map[waldur.UUID]string) {
	for i := range st.Offerings {
		o := &st.Offerings[i]
		o.Resources = slices.DeleteFunc(o.Resources, func(r waldur.Resource) bool { _, ok := skipped[r.UUID]; return ok })
	}
}

// TestHollowMatchesFullRender drives the event sequence of
// TestMemoryMatchesFullRender and renders each state in full, then with
// HollowWhen asking for that render's Inputs and for the last step's.
// Whenever two full renders have the same Inputs their files are the same;
// a render is hollow exactly when its Inputs are the ones asked for; a
// hollow render has every tenant, group, skip and change of the full one,
// only without objects or files; and Fill makes it the full render exactly.
func TestHollowMatchesFullRender(t *testing.T) {
	cfg, tpls, opts := everyBackendSite(t)
	for _, seed := range scopeSeeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			st := synth.Generate(opts)
			ev := &eventMaker{r: rand.New(rand.NewPCG(seed, 0)), st: st}
			files := map[string]render.Tree{} // Inputs → the files they rendered to
			var last string
			hollows := 0
			for step := range 80 {
				what := ev.next()
				full := render.New(cfg.Config, tpls).WithoutObjects()
				if ev.holds != nil {
					full = full.Holding(ev.holds)
				}
				want, err := full.HollowWhen(func(string) bool { return false }).Render(st)
				if err != nil {
					t.Fatal(err)
				}
				if step%3 != 0 {
					// Most steps: every order done and every skipped
					// resource gone, which a render can record.
					what += ", then settled"
					dropSkipped(settled(st), want.Skipped)
					if want, err = full.HollowWhen(func(string) bool { return false }).Render(st); err != nil {
						t.Fatal(err)
					}
				}
				if seen, ok := files[want.Inputs]; ok && want.Inputs != "" && !seen.Equal(want.Tree(nil)) {
					t.Fatalf("seed %d, step %d (%s): two renders with Inputs %s have different files", seed, step, what, want.Inputs)
				}
				files[want.Inputs] = want.Tree(nil)
				for _, asked := range []string{last, want.Inputs} {
					got, err := full.HollowWhen(func(in string) bool { return in == asked }).Render(st)
					if err != nil {
						t.Fatal(err)
					}
					if got.Hollow() != (want.Inputs != "" && want.Inputs == asked) {
						t.Fatalf("seed %d, step %d (%s): hollow %t with Inputs %q, asked for %q", seed, step, what, got.Hollow(), want.Inputs, asked)
					}
					if got.Hollow() {
						hollows++
						if d := hollowDiff(got, want); d != "" {
							t.Fatalf("seed %d, step %d (%s): the hollow render differs: %s", seed, step, what, d)
						}
						if err := got.Fill(); err != nil {
							t.Fatal(err)
						}
					}
					if d := resultDiff(got, want); d != "" {
						t.Fatalf("seed %d, step %d (%s): the filled render differs from a full render: %s", seed, step, what, d)
					}
				}
				last = want.Inputs
			}
			if hollows < 10 {
				t.Fatalf("%d renders hollow: the sequence tests too little", hollows)
			}
		})
	}
}

// hollowDiff names the first difference between a hollow render and the
// full one beyond the objects and files the hollow one leaves out.
func hollowDiff(hollow, full *render.Result) string {
	if len(hollow.Tenants) != len(full.Tenants) {
		return fmt.Sprintf("%d tenants, want %d", len(hollow.Tenants), len(full.Tenants))
	}
	for i, h := range hollow.Tenants {
		if len(h.Files) > 0 || len(h.Objects) > 0 || len(h.Names) > 0 {
			return "tenant " + h.Dir + " has objects or files"
		}
		w := *full.Tenants[i]
		w.Files, w.Objects, w.Names = nil, nil, nil
		c := *h
		if !reflect.DeepEqual(tenantFields(&c), tenantFields(&w)) {
			return fmt.Sprintf("tenant %s:\n%+v\nwant:\n%+v", h.Dir, c, w)
		}
	}
	if !reflect.DeepEqual(hollow.Groups, full.Groups) || !reflect.DeepEqual(hollow.Changes, full.Changes) ||
		!reflect.DeepEqual(hollow.Warnings, full.Warnings) || hollow.Inputs != full.Inputs {
		return "groups, changes, warnings or inputs"
	}
	return ""
}

// tenantFields are a tenant's exported fields.
func tenantFields(t *render.Tenant) []any {
	return []any{t.Offering, t.Dir, t.Name, t.BackendID, t.Resource, t.ResourceName, t.Orders, t.Limits, t.Quota, t.QuotaName}
}

// Inputs stand for everything the files depend on and nothing else: the
// same state renders the same Inputs in another renderer (another
// process), what the tool writes back to a resource does not move them,
// and any input of a file does; a render with an order to fulfil, a
// Terminating resource or a skipped resource has none.
func TestInputs(t *testing.T) {
	cfg, tpls, opts := everyBackendSite(t)
	inputs := func(t *testing.T, c *config.Config, tp map[string][]*templates.Template, st *waldur.State) string {
		t.Helper()
		res, err := render.New(c, tp).HollowWhen(func(string) bool { return false }).Render(st)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Complete() {
			return ""
		}
		return res.Inputs
	}
	base := inputs(t, cfg.Config, tpls, settled(synth.Generate(opts)))
	if base == "" {
		t.Fatal("a settled site has no Inputs")
	}
	first := func(st *waldur.State) *waldur.Resource { return &st.Offerings[0].Resources[0] }
	for _, c := range []struct {
		name string
		// change changes the state, config or templates of a settled site.
		change func(st *waldur.State, c *config.Config, tp map[string][]*templates.Template)
		// yaml changes the config's text.
		yaml func(string) string
		same bool // the Inputs stay base
		none bool // the render has no Inputs
	}{
		{name: "nothing", same: true},
		{name: "last_sync and backend_metadata written back", same: true, change: func(st *waldur.State, _ *config.Config, _ map[string][]*templates.Template) {
			first(st).LastSync, first(st).BackendMetadata = "2026-11-28T07:00:00Z", map[string]any{"namespace": "x"}
		}},
		{name: "a resource renamed", change: func(st *waldur.State, _ *config.Config, _ map[string][]*templates.Template) {
			first(st).Name += " renamed"
		}},
		{name: "a limit", change: func(st *waldur.State, _ *config.Config, _ map[string][]*templates.Template) {
			r := first(st)
			l := waldur.Limits{}
			for k, v := range r.Limits {
				l[k] = v + "1"
			}
			r.Limits = l
		}},
		{name: "a team member leaves", change: func(st *waldur.State, _ *config.Config, _ map[string][]*templates.Template) {
			p := first(st).ProjectUUID
			st.Offerings[0].Teams[p] = st.Offerings[0].Teams[p][1:]
		}},
		{name: "a backend setting", yaml: func(y string) string {
			return strings.Replace(y, "namespace_prefix: waldur-", "namespace_prefix: tenant-", 1)
		}},
		{name: "any setting (the whole config counts)", yaml: func(y string) string {
			return strings.Replace(y, "keycloak_realm: hpc", "keycloak_realm: other", 1)
		}},
		{name: "a template", change: func(_ *waldur.State, c *config.Config, tp map[string][]*templates.Template) {
			o := c.Offerings[0].Name
			old := tp[o][0]
			nt, err := templates.Parse(old.Name, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"{{ .Name }}\"\n  namespace: \"{{ .Namespace }}\"\n"))
			if err != nil {
				panic(err)
			}
			tp[o] = append([]*templates.Template{nt}, tp[o][1:]...)
		}},
		{name: "an executing order", none: true, change: func(st *waldur.State, _ *config.Config, _ map[string][]*templates.Template) {
			o := &st.Offerings[0]
			o.Orders = append(o.Orders, waldur.Order{UUID: "0a000000000000000000000000000001", Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: first(st).UUID, Limits: first(st).Limits})
		}},
		{name: "a terminating resource", none: true, change: func(st *waldur.State, _ *config.Config, _ map[string][]*templates.Template) {
			first(st).State = waldur.ResourceTerminating
		}},
		{name: "a skipped resource", none: true, change: func(st *waldur.State, _ *config.Config, _ map[string][]*templates.Template) {
			first(st).State = "Mystery"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := settled(synth.Generate(opts))
			text := string(synth.ConfigYAML(opts))
			if c.yaml != nil {
				if text = c.yaml(text); text == string(synth.ConfigYAML(opts)) {
					t.Fatal("the config text did not change")
				}
			}
			loaded, err := config.Parse([]byte(text), "synth.yaml")
			if err != nil {
				t.Fatal(err)
			}
			tp, err := render.LoadTemplates(loaded.Config)
			if err != nil {
				t.Fatal(err)
			}
			if c.change != nil {
				c.change(st, loaded.Config, tp)
			}
			got := inputs(t, loaded.Config, tp, st)
			switch {
			case c.none && got != "":
				t.Errorf("Inputs %s, want none", got)
			case !c.none && got == "":
				t.Error("no Inputs")
			case !c.none && (got == base) != c.same:
				t.Errorf("Inputs %s, base %s: want the same %t", got, base, c.same)
			}
		})
	}
}

// Unchanged lists what Compare lists for a destination already holding
// the result's tree.
func TestUnchangedIsCompareWithItself(t *testing.T) {
	cfg, tpls, opts := everyBackendSite(t)
	res, err := render.New(cfg.Config, tpls).Render(synth.Generate(opts))
	if err != nil {
		t.Fatal(err)
	}
	tree := res.Tree(nil)
	got, want := res.Unchanged(), res.Compare(tree, tree)
	if len(want.Entries) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("Unchanged:\n%+v\nCompare of the tree with itself:\n%+v", got, want)
	}
}
