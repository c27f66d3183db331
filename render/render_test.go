package render

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/waldur"
)

// example renders the bundled example from examples/.
func example(t testing.TB) (*config.Config, *waldur.State, *Result) {
	t.Helper()
	l, err := config.Load("../examples/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := waldur.LoadSnapshot("../examples/snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	return l.Config, &snap.State, mustRender(t, l.Config, &snap.State)
}

func TestExampleGolden(t *testing.T) {
	_, _, res := example(t)
	golden(t, "example", dump(res))
}

// TestDeterministic renders the same state twice, and once more with every list
// in the input shuffled, and expects byte-identical trees.
func TestDeterministic(t *testing.T) {
	cfg, st, first := example(t)
	want := first.Tree(nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5; i++ {
		for j := range st.Offerings {
			o := &st.Offerings[j]
			rng.Shuffle(len(o.Resources), func(a, b int) { o.Resources[a], o.Resources[b] = o.Resources[b], o.Resources[a] })
			rng.Shuffle(len(o.Orders), func(a, b int) { o.Orders[a], o.Orders[b] = o.Orders[b], o.Orders[a] })
			rng.Shuffle(len(o.OfferingUsers), func(a, b int) { o.OfferingUsers[a], o.OfferingUsers[b] = o.OfferingUsers[b], o.OfferingUsers[a] })
			for _, team := range o.Teams {
				rng.Shuffle(len(team), func(a, b int) { team[a], team[b] = team[b], team[a] })
			}
		}
		got := mustRender(t, cfg, st).Tree(nil)
		if len(got) != len(want) {
			t.Fatalf("run %d: %d files, want %d", i, len(got), len(want))
		}
		for p, data := range want {
			if !bytes.Equal(got[p], data) {
				t.Fatalf("run %d: %s differs:\n%s", i, p, lineDiff(string(data), string(got[p])))
			}
		}
	}
}

// TestTenantsBuildWithKrusty builds every tenant directory of the example, alone,
// with kustomize's krusty, and expects exactly the tenant's objects back.
func TestTenantsBuildWithKrusty(t *testing.T) {
	_, _, res := example(t)
	fs := filesys.MakeFsInMemory()
	for p, data := range res.Tree(nil) {
		if err := fs.WriteFile("/"+p, data); err != nil {
			t.Fatal(err)
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, tn := range res.Tenants {
		t.Run(tn.Dir, func(t *testing.T) {
			rm, err := k.Run(fs, "/"+tn.Dir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", tn.Dir, err)
			}
			if rm.Size() != len(tn.Objects) {
				t.Fatalf("built %d objects, rendered %d", rm.Size(), len(tn.Objects))
			}
			for _, r := range rm.Resources() {
				m, err := r.Map()
				if err != nil {
					t.Fatal(err)
				}
				if m["metadata"].(map[string]any)["labels"].(map[string]any)[manifest.LabelResourceUUID] != string(tn.Resource) {
					t.Errorf("%s lost its resource label", r.CurId())
				}
			}
		})
	}
}

// TestRoundTrip reads every rendered file back with a YAML parser and expects
// the object that was rendered.
func TestRoundTrip(t *testing.T) {
	_, _, res := example(t)
	for _, tn := range res.Tenants {
		i := 0
		for _, f := range tn.Files {
			if f.Name == KustomizationFile {
				continue
			}
			var got map[string]any
			if err := yaml.Unmarshal(f.Data, &got); err != nil {
				t.Fatalf("%s/%s: %v", tn.Dir, f.Name, err)
			}
			want, _ := yaml.Marshal(tn.Objects[fileIndex(tn, f.Name)])
			have, _ := yaml.Marshal(got)
			if !bytes.Equal(want, have) {
				t.Errorf("%s/%s does not read back as rendered", tn.Dir, f.Name)
			}
			i++
		}
		if i != len(tn.Objects) {
			t.Errorf("%s: %d object files for %d objects", tn.Dir, i, len(tn.Objects))
		}
	}
}

func fileIndex(tn *Tenant, name string) int {
	for i, o := range tn.Objects {
		if strings.ToLower(o.Kind())+"-"+o.Name()+".yaml" == name {
			return i
		}
	}
	return -1
}

// TestInjectionIsInert feeds names full of YAML syntax through a profile that
// copies them into object fields and expects them back verbatim, in exactly the
// keys the template has.
func TestInjectionIsInert(t *testing.T) {
	evil := "x\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: pwned}\n# \"quoted\": {{ .Name }} & *alias !tag"
	r := resource(1, "safe", limits("cpu", 1))
	r.Name, r.CustomerName, r.ProjectName = evil, evil, evil
	res := mustRender(t, mustConfig(t, "rancher", "cluster_id: c-1", ""), state([]waldur.Resource{r}, nil))
	project := findObject(t, res, "Project")
	spec := project["spec"].(map[string]any)
	wantDesc := evil + " (Customer: " + evil + ", Project: " + evil + ")"
	if spec["description"] != wantDesc {
		t.Errorf("description = %q, want %q", spec["description"], wantDesc)
	}
	for _, tn := range res.Tenants {
		for _, f := range tn.Files {
			dec := yamlv3.NewDecoder(bytes.NewReader(f.Data))
			docs := 0
			for {
				var v map[string]any
				if err := dec.Decode(&v); err != nil {
					break
				}
				docs++
				if v["kind"] == "Secret" {
					t.Errorf("%s/%s: a Secret was injected", tn.Dir, f.Name)
				}
			}
			if docs != 1 {
				t.Errorf("%s/%s holds %d documents, want 1", tn.Dir, f.Name, docs)
			}
		}
	}
	var back map[string]any
	if err := yaml.Unmarshal(fileData(t, res, "project-"), &back); err != nil {
		t.Fatal(err)
	}
	if back["spec"].(map[string]any)["description"] != wantDesc {
		t.Errorf("description does not survive encoding: %q", back["spec"].(map[string]any)["description"])
	}
}

func fileData(t *testing.T, res *Result, prefix string) []byte {
	t.Helper()
	for _, tn := range res.Tenants {
		for _, f := range tn.Files {
			if strings.HasPrefix(f.Name, prefix) {
				return f.Data
			}
		}
	}
	t.Fatalf("no file %s*", prefix)
	return nil
}

func TestRenderRefusesIncompleteState(t *testing.T) {
	cfg := mustConfig(t, "namespace", "", "")
	tpls, err := LoadTemplates(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		st   *waldur.State
		want string
	}{
		{"offering missing", &waldur.State{}, `no offering "Test offering"`},
		{"other offering's state", &waldur.State{Offerings: []waldur.OfferingState{{Name: "Test offering", OfferingUUID: "11111111111141118111111111111111"}}}, "the state is of offering 1111"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(cfg, tpls).Render(tt.st)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestSkippedTenantIsKept checks that a resource skipped for bad input keeps the
// directory an earlier render wrote for it, and that Compare reports per tenant.
func TestSkippedTenantIsKept(t *testing.T) {
	cfg := mustConfig(t, "namespace", "", "")
	good := resource(1, "alpha", limits("cpu", 1))
	other := resource(2, "beta", limits("cpu", 1))
	gone := resource(3, "gamma", limits("cpu", 1))
	prevRes := mustRender(t, cfg, state([]waldur.Resource{good, other, gone}, nil))
	prev := prevRes.Tree(nil)

	other.Limits = limits("cpu", "not a number") // now bad: keep what exists
	good.Limits = limits("cpu", 2)               // changed
	added := resource(4, "delta", limits("cpu", 1))
	gone.State = waldur.ResourceTerminating
	terminate := waldur.Order{UUID: "0d000000000040008000000000000003", Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: gone.UUID}
	res := mustRender(t, cfg, state([]waldur.Resource{good, other, added, gone}, []waldur.Order{terminate}))
	if orders, ok := res.Terminations[gone.UUID]; !ok || len(orders) != 1 || orders[0] != terminate.UUID {
		t.Errorf("Terminations = %v, want gamma with its Terminate order", res.Terminations)
	}
	if _, ok := res.Skipped[other.UUID]; !ok {
		t.Fatalf("beta was not skipped: %v", res.Skipped)
	}
	next := res.Tree(prev)
	for p, data := range prev {
		if strings.Contains(p, "/waldur-beta/") && !bytes.Equal(next[p], data) {
			t.Errorf("%s of the skipped resource was not carried over", p)
		}
	}
	got := map[string]changeset.Action{}
	for _, e := range res.Compare(prev, next).Entries {
		got[filepath.Base(e.Subject)] = e.Action
		if e.Action == changeset.Delete && (e.Resource != string(gone.UUID) || len(e.Orders) != 1 || e.Orders[0] != string(terminate.UUID)) {
			t.Errorf("delete entry %+v does not carry gamma's Terminate order", e)
		}
	}
	want := map[string]changeset.Action{
		"waldur-alpha": changeset.Update, "waldur-beta": changeset.Unchanged,
		"waldur-gamma": changeset.Delete, "waldur-delta": changeset.Create,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("entries %v, want %v", got, want)
	}
}

func TestSiteTemplates(t *testing.T) {
	tests := []struct {
		name, file, body, wantErr string
	}{
		{"adds an object", "limitrange.yaml", "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: defaults\n  namespace: \"{{ .Namespace }}\"\nspec:\n  limits: []\n", ""},
		{"replaces a default", "namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: \"{{ .Name }}\"\n  labels:\n    site: custom\n", ""},
		{"invalid object name", "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"{{ .Resource.Name }}\"\n", "template " + "SITE/bad.yaml produced an invalid ConfigMap"},
		{"unknown target", "bad.yaml", "x-render:\n  target: elsewhere\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", `target "elsewhere"`},
		{"missing field", "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"{{ .Nope }}\"\n", "template SITE/bad.yaml, document 1: metadata: name: {{ .Nope }}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := mustConfig(t, "namespace", "", "  templates_dir: "+dir+"\n")
			res := mustRender(t, cfg, state([]waldur.Resource{resource(1, "alpha", limits("cpu", 1))}, nil))
			if tt.wantErr != "" {
				want := strings.ReplaceAll(tt.wantErr, "SITE", dir)
				if reason := res.Skipped[resUUID(1)]; !strings.Contains(reason, want) {
					t.Fatalf("skip reason %q, want it to contain %q", reason, want)
				}
				return
			}
			if len(res.Skipped) > 0 {
				t.Fatalf("skipped: %v", res.Skipped)
			}
			tree := res.Tree(nil)
			if tt.file == "namespace.yaml" {
				ns := string(tree["test-offering/cluster/waldur-alpha/namespace-waldur-alpha.yaml"])
				if !strings.Contains(ns, "site: custom") {
					t.Errorf("default namespace template not replaced:\n%s", ns)
				}
				return
			}
			lr := string(tree["test-offering/cluster/waldur-alpha/limitrange-defaults.yaml"])
			if !strings.Contains(lr, "namespace: waldur-alpha") || !strings.Contains(lr, manifest.LabelResourceUUID+": "+string(resUUID(1))) {
				t.Errorf("site object missing or without the common labels:\n%s", lr)
			}
		})
	}
}

// TestExecutingTerminateRemovesTenant checks that a resource still OK in Waldur
// but with an executing Terminate order is no longer rendered, and is recorded
// as a termination.
func TestExecutingTerminateRemovesTenant(t *testing.T) {
	cfg := mustConfig(t, "namespace", "", "")
	keep, drop := resource(1, "keep", limits("cpu", 1)), resource(2, "drop", limits("cpu", 1))
	term := waldur.Order{UUID: "0d000000000040008000000000000009", Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: drop.UUID}
	res := mustRender(t, cfg, state([]waldur.Resource{keep, drop}, []waldur.Order{term}))
	if len(res.Tenants) != 1 || res.Tenants[0].Resource != keep.UUID {
		t.Fatalf("rendered %d tenants, want only keep", len(res.Tenants))
	}
	if got := res.Terminations[drop.UUID]; len(got) != 1 || got[0] != term.UUID {
		t.Errorf("Terminations[drop] = %v", got)
	}
	if lim := res.Tenants[0].Limits["cpu"]; lim != 1 {
		t.Errorf("tenant limits = %v", res.Tenants[0].Limits)
	}
}
