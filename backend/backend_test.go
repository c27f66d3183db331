package backend_test

import (
	"slices"
	"testing"

	"github.com/waldur/waldur-gitops/backend"
)

func TestBuiltins(t *testing.T) {
	if got, want := backend.Types(), []string{"k8s-ut-namespace", "namespace", "okd", "rancher"}; !slices.Equal(got, want) {
		t.Errorf("types %v, want %v", got, want)
	}
	for _, b := range backend.All() {
		if b.Profile != b.Type {
			t.Errorf("%s uses profile %s, want itself", b.Type, b.Profile)
		}
		if len(b.Kinds) == 0 || b.Templates == nil {
			t.Errorf("%s registers no kinds or no templates", b.Type)
		}
		for target := range b.Kinds {
			if !slices.Contains(b.Targets, target) {
				t.Errorf("%s has kinds for target %s, which is not one of %v", b.Type, target, b.Targets)
			}
		}
	}
	if got := backend.TargetsOf("rancher"); !slices.Equal(got, []string{"management", "downstream"}) {
		t.Errorf("rancher targets %v", got)
	}
	if got := backend.TargetsOf("unknown"); !slices.Equal(got, []string{"cluster"}) {
		t.Errorf("unknown type targets %v", got)
	}
}

func TestRegisterRefuses(t *testing.T) {
	for name, b := range map[string]backend.Backend{
		"empty type":     {DefaultTarget: "cluster", Targets: []string{"cluster"}},
		"twice":          {Type: "namespace", DefaultTarget: "cluster", Targets: []string{"cluster"}},
		"default target": {Type: "x-test", DefaultTarget: "management", Targets: []string{"cluster"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			backend.Register(b)
		}()
	}
	if backend.Lookup("x-test") != nil {
		t.Error("a refused backend was registered")
	}
}
