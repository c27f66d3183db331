package synth_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

func TestSameSeedSameState(t *testing.T) {
	opts := synth.Options{Tenants: 300, Seed: 7, BackendTypes: config.BackendTypes}
	a, b := synth.Generate(opts), synth.Generate(opts)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same options differ")
	}
	if !bytes.Equal(synth.ConfigYAML(opts), synth.ConfigYAML(opts)) {
		t.Fatal("two configs with the same options differ")
	}
	opts.Seed = 8
	if reflect.DeepEqual(a, synth.Generate(opts)) {
		t.Fatal("a different seed gave the same state")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	opts := synth.Options{Tenants: 200, Seed: 3, BackendTypes: config.BackendTypes}
	var buf bytes.Buffer
	if err := waldur.WriteSnapshot(&buf, synth.Snapshot(opts)); err != nil {
		t.Fatal(err)
	}
	s, err := waldur.ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&s.State, synth.Generate(opts)) {
		t.Fatal("the state read back from the snapshot differs from the generated one")
	}
}

// TestRendersEveryTenant checks that Tenants is the number of resources rendered,
// with no skip, for the default options and for every backend type.
func TestRendersEveryTenant(t *testing.T) {
	cases := []struct {
		name string
		opts synth.Options
	}{
		{"default", synth.Options{Tenants: 1000, Seed: 1}},
		{"all-types", synth.Options{Tenants: 1001, Seed: 2, BackendTypes: config.BackendTypes}},
		{"light", synth.Options{Tenants: 200, Seed: 3, BackendTypes: config.BackendTypes, DisableKeycloak: true, DisableUserSync: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := synth.Config(tc.opts, "synth.yaml")
			if err != nil {
				t.Fatal(err)
			}
			tpls, err := render.LoadTemplates(cfg.Config)
			if err != nil {
				t.Fatal(err)
			}
			st := synth.Generate(tc.opts)
			res, err := render.New(cfg.Config, tpls).Render(st)
			if err != nil {
				t.Fatal(err)
			}
			for uuid, why := range res.Skipped {
				t.Errorf("resource %s skipped: %s", uuid, why)
			}
			perOffering := map[string]map[waldur.UUID]bool{}
			for _, tn := range res.Tenants {
				if perOffering[tn.Offering] == nil {
					perOffering[tn.Offering] = map[waldur.UUID]bool{}
				}
				perOffering[tn.Offering][tn.Resource] = true
			}
			total := 0
			for _, o := range synth.Offerings(tc.opts) {
				if got := len(perOffering[o.Name]); got != o.Tenants {
					t.Errorf("offering %s: %d resources rendered, want %d", o.Name, got, o.Tenants)
				}
				total += o.Tenants
			}
			if total != tc.opts.Tenants {
				t.Errorf("offerings hold %d tenants, want %d", total, tc.opts.Tenants)
			}
		})
	}
}

// TestShape checks that the features the benchmarks are meant to exercise occur.
func TestShape(t *testing.T) {
	st := synth.Generate(synth.Options{Tenants: 5000, Seed: 11})
	o := st.Offerings[0]
	count := map[string]int{}
	customers := map[waldur.UUID]bool{}
	for _, r := range o.Resources {
		count["state:"+r.State]++
		customers[r.CustomerUUID] = true
		if r.Paused {
			count["paused"]++
		}
		if r.Downscaled {
			count["downscaled"]++
		}
	}
	for _, ord := range o.Orders {
		count["order:"+ord.Type+"/"+ord.State]++
	}
	spelled := map[bool]int{}
	for _, team := range o.Teams {
		if len(team) < 2 || len(team) > 8 {
			t.Errorf("team of %d members, want 2–8", len(team))
		}
		for _, m := range team {
			spelled[strings.HasPrefix(m.Role, "PROJECT.")]++
		}
	}
	want := map[string][2]int{ // [min, max] out of 5000 rendered
		"paused":                        {40, 160},
		"downscaled":                    {40, 160},
		"state:Creating":                {50, 200},
		"state:Terminating":             {10, 120},
		"order:Update/executing":        {100, 300},
		"order:Create/executing":        {50, 160},
		"order:Terminate/executing":     {10, 120},
		"order:Create/pending-provider": {1, 60},
	}
	for k, mm := range want {
		if c := count[k]; c < mm[0] || c > mm[1] {
			t.Errorf("%s: %d, want %d–%d", k, c, mm[0], mm[1])
		}
	}
	if spelled[true] == 0 || spelled[false] == 0 {
		t.Errorf("role spellings: %d PROJECT.X, %d short; want both", spelled[true], spelled[false])
	}
	if n := len(o.Resources); n/len(customers) < 3 || n/len(o.Teams) < 2 {
		t.Errorf("%d resources in %d projects of %d customers: want several resources per project and projects per customer", n, len(o.Teams), len(customers))
	}
	if len(o.OfferingUsers) == 0 {
		t.Error("no offering users")
	}
}
