package render

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestWithoutObjects renders the same state with and without objects, for
// every backend type: the files are the same byte for byte, and only the
// tenants that fulfil an order keep their objects.
func TestWithoutObjects(t *testing.T) {
	for _, backend := range config.BackendTypes {
		t.Run(backend, func(t *testing.T) {
			opts := synth.Options{Tenants: 300, Seed: 7, BackendTypes: []string{backend}}
			cfg, err := synth.Config(opts, "synth.yaml")
			if err != nil {
				t.Fatal(err)
			}
			tpls, err := LoadTemplates(cfg.Config)
			if err != nil {
				t.Fatal(err)
			}
			st := synth.Generate(opts)
			full, err := New(cfg.Config, tpls).Render(st)
			if err != nil {
				t.Fatal(err)
			}
			lean, err := New(cfg.Config, tpls).WithoutObjects().Render(st)
			if err != nil {
				t.Fatal(err)
			}
			if len(lean.Tenants) != len(full.Tenants) || len(full.Tenants) == 0 {
				t.Fatalf("%d tenants without objects, %d with", len(lean.Tenants), len(full.Tenants))
			}
			kept, dropped := 0, 0
			for i, want := range full.Tenants {
				got := lean.Tenants[i]
				if got.Dir != want.Dir || len(got.Files) != len(want.Files) {
					t.Fatalf("tenant %d: %s with %d files, want %s with %d", i, got.Dir, len(got.Files), want.Dir, len(want.Files))
				}
				for j, f := range want.Files {
					if got.Files[j].Name != f.Name || !bytes.Equal(got.Files[j].Data, f.Data) {
						t.Fatalf("%s/%s differs", want.Dir, f.Name)
					}
				}
				if len(want.Objects) == 0 {
					t.Fatalf("%s: the full render has no objects", want.Dir)
				}
				switch {
				case len(want.Orders) > 0:
					if !reflect.DeepEqual(got.Objects, want.Objects) {
						t.Fatalf("%s fulfils orders %v: its objects differ or were dropped", want.Dir, want.Orders)
					}
					kept++
				case got.Objects != nil:
					t.Fatalf("%s fulfils no order but kept %d objects", want.Dir, len(got.Objects))
				default:
					dropped++
				}
			}
			if kept == 0 || dropped == 0 {
				t.Fatalf("kept %d, dropped %d: the state should have tenants of both kinds", kept, dropped)
			}
		})
	}
}

// TestBatchesRenderTheSame renders the example, a synthetic site of every
// backend type and a state whose resources contest names with batches of
// several sizes: phase 1 and 2 alternating must give exactly what one batch
// gives, contested names included (the first-created resource keeps it).
func TestBatchesRenderTheSame(t *testing.T) {
	type input struct {
		name string
		cfg  *config.Config
		st   *waldur.State
	}
	exCfg, exState, _ := example(t)
	opts := synth.Options{Tenants: 120, Seed: 11, BackendTypes: config.BackendTypes}
	synCfg, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var contested []waldur.Resource
	for i := range 9 {
		contested = append(contested, resource(i, fmt.Sprintf("slug-%d", i%3), limits("cpu", 1)))
	}
	inputs := []input{
		{"example", exCfg, exState},
		{"synthetic", synCfg.Config, synth.Generate(opts)},
		{"contested", mustConfig(t, config.BackendK8sUTNamespace, "", ""), state(contested, nil, member("alice", "manager"))},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			tpls, err := LoadTemplates(in.cfg)
			if err != nil {
				t.Fatal(err)
			}
			one := New(in.cfg, tpls)
			one.batch = 1 << 30
			res, err := one.Render(in.st)
			if err != nil {
				t.Fatal(err)
			}
			want := dump(res)
			if in.name == "contested" && !bytes.Contains(want, []byte("already used by resource")) {
				t.Fatalf("no contested name in\n%s", want)
			}
			for _, n := range []int{1, 2, 7} {
				r := New(in.cfg, tpls)
				r.batch = n
				res, err := r.Render(in.st)
				if err != nil {
					t.Fatal(err)
				}
				if got := dump(res); !bytes.Equal(got, want) {
					t.Fatalf("batches of %d:\n%s", n, lineDiff(string(want), string(got)))
				}
			}
		})
	}
}

// TestShare: after Share, every rendered file equal to the one at its path in
// the previous tree holds the previous tree's bytes, a changed one keeps its
// own, and the tree laid out is the same.
func TestShare(t *testing.T) {
	_, _, res := example(t)
	want := res.Tree(nil)
	prev := Tree{}
	for p, data := range want {
		prev[p] = bytes.Clone(data)
	}
	var changed string
	for _, tn := range res.Tenants {
		changed = tn.Dir + "/" + tn.Files[0].Name
		break
	}
	prev[changed] = []byte("changed: true\n")
	files := 0
	for _, tn := range res.Tenants {
		files += len(tn.Files)
	}
	if n := res.Share(prev); n != files-1 {
		t.Fatalf("Share shared %d files, want %d", n, files-1)
	}
	for _, tn := range res.Tenants {
		for _, f := range tn.Files {
			p := tn.Dir + "/" + f.Name
			shared := &prev[p][0] == &f.Data[0]
			if shared == (p == changed) {
				t.Fatalf("%s: shared %t", p, shared)
			}
		}
	}
	got := res.Tree(nil)
	if len(got) != len(want) {
		t.Fatalf("%d files after Share, want %d", len(got), len(want))
	}
	for p, data := range want {
		if !bytes.Equal(got[p], data) {
			t.Fatalf("%s changed", p)
		}
	}
	if n := res.Share(nil); n != 0 {
		t.Fatalf("Share(nil) = %d", n)
	}
}
