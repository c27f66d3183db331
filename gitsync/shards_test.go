package gitsync

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/render"
)

// exampleTree renders the bundled example (four offerings, 15 tenants).
func exampleTree(t *testing.T) (*config.Loaded, *render.Result, render.Tree) {
	t.Helper()
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	res := exampletest.Render(t, cfg.Config, st)
	return cfg, res, res.Tree(nil)
}

func exampleLayout(cfg *config.Loaded, shards int) FluxLayout {
	l := FluxLayout{Shards: shards, RepoPath: cfg.Git.Path}
	for _, o := range cfg.Offerings {
		targets := []string{render.TargetCluster}
		if o.BackendType == config.BackendRancher {
			targets = []string{render.TargetManagement, render.TargetDownstream}
		}
		for _, tg := range targets {
			l.Targets = append(l.Targets, FluxTarget{Offering: o.DirName(), Target: tg})
		}
	}
	return l
}

// writeFS puts the tree below root of an in-memory file system.
func writeFS(t *testing.T, tree render.Tree, root string) filesys.FileSystem {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for p, b := range tree {
		if err := fs.WriteFile(path.Join(root, p), b); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

// Every tenant directory and every shard entry point builds with kustomize, as
// Argo CD and Flux build them; every tenant is in exactly one shard, and the
// shards together give exactly the tenants' objects.
func TestShardsBuildWithKustomize(t *testing.T) {
	cfg, res, tree := exampleTree(t)
	const shards = 3
	layout := exampleLayout(cfg, shards)
	tree = layout.Apply(tree)
	fs := writeFS(t, tree, "/repo/"+cfg.Git.Path)
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())

	objects := map[string]int{} // target → objects of its tenants
	for _, tn := range res.Tenants {
		rm, err := k.Run(fs, "/repo/"+cfg.Git.Path+"/"+tn.Dir)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", tn.Dir, err)
		}
		objects[path.Dir(tn.Dir)] += rm.Size()
	}

	seen := map[string]string{} // tenant dir → shard
	built := map[string]int{}
	for _, tg := range layout.Targets {
		for s := range shards {
			dir := ShardDir(tg, s)
			rm, err := k.Run(fs, "/repo/"+cfg.Git.Path+"/"+dir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", dir, err)
			}
			built[tg.Offering+"/"+tg.Target] += rm.Size()
			var kz struct{ Resources []string }
			if err := yaml.Unmarshal(tree[dir+"/kustomization.yaml"], &kz); err != nil {
				t.Fatal(err)
			}
			for _, r := range kz.Resources {
				tenant := path.Clean(path.Join(dir, r))
				if other, dup := seen[tenant]; dup {
					t.Errorf("%s is in %s and %s", tenant, other, dir)
				}
				seen[tenant] = dir
				if ShardOf(path.Base(tenant), shards) != s {
					t.Errorf("%s is in shard %d, ShardOf says %d", tenant, s, ShardOf(path.Base(tenant), shards))
				}
			}
		}
	}
	for _, tn := range res.Tenants {
		if _, ok := seen[tn.Dir]; !ok {
			t.Errorf("%s is in no shard", tn.Dir)
		}
	}
	if len(seen) != len(res.Tenants) {
		t.Errorf("shards list %d tenants, %d rendered", len(seen), len(res.Tenants))
	}
	if !maps.Equal(objects, built) {
		t.Errorf("objects per target: tenants %v, shards %v", objects, built)
	}

	// The index builds to one Flux Kustomization per shard, pointing at it.
	rm, err := k.Run(fs, "/repo/"+cfg.Git.Path+"/"+FluxDir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", FluxDir, err)
	}
	if rm.Size() != shards*len(layout.Targets) {
		t.Errorf("%d Flux Kustomizations, want %d", rm.Size(), shards*len(layout.Targets))
	}
	for _, r := range rm.Resources() {
		m, _ := r.Map()
		p := m["spec"].(map[string]any)["path"].(string)
		if _, ok := tree[strings.TrimPrefix(p, "./"+cfg.Git.Path+"/")+"/kustomization.yaml"]; !ok || r.GetKind() != "Kustomization" || len(r.GetName()) > 63 {
			t.Errorf("%s %s points at %s, which is not a shard", r.GetKind(), r.GetName(), p)
		}
	}

	// The shard files are not tenants: Compare does not see them.
	for _, e := range res.Compare(nil, tree).Entries {
		if strings.HasPrefix(e.Subject, FluxDir) {
			t.Errorf("Compare reports %s", e.Subject)
		}
	}
}

// Shards exist when empty, and zero shards add nothing.
func TestShardLayoutEdges(t *testing.T) {
	l := FluxLayout{Shards: 2, RepoPath: ".", Targets: []FluxTarget{{"empty", "cluster"}}}
	tree := l.Apply(render.Tree{render.MarkerFile: []byte("m\n")})
	for s := range 2 {
		b, ok := tree[ShardDir(l.Targets[0], s)+"/kustomization.yaml"]
		if !ok || !strings.Contains(string(b), "resources: []") {
			t.Errorf("shard %d: %q", s, b)
		}
	}
	if !strings.Contains(string(tree["_flux/flux-kustomizations.yaml"]), "path: ./_flux/empty.cluster.01\n") {
		t.Errorf("spec.path for the repository root:\n%s", tree["_flux/flux-kustomizations.yaml"])
	}
	if got := (FluxLayout{}).Apply(render.Tree{"a": nil}); len(got) != 1 {
		t.Errorf("zero shards added files: %v", slices.Collect(maps.Keys(got)))
	}
}

// Growing the shard count moves only the tenants that land in the new shard.
func TestShardOfIsConsistent(t *testing.T) {
	const tenants = 2000
	for n := 1; n < 40; n++ {
		moved, counts := 0, make([]int, n+1)
		for i := range tenants {
			name := fmt.Sprintf("waldur-tenant-%d", i)
			a, b := ShardOf(name, n), ShardOf(name, n+1)
			counts[b]++
			if a != b {
				moved++
				if b != n {
					t.Fatalf("%s moved from %d to %d when growing to %d shards", name, a, b, n+1)
				}
			}
		}
		if want := tenants / (n + 1); moved > 2*want+20 || counts[n] < want/2 {
			t.Errorf("%d→%d shards: %d moved, new shard has %d, expected about %d", n, n+1, moved, counts[n], want)
		}
	}
}

// The Argo CD example's git directory generators select exactly the tenant
// directories of the rendered tree, each once, and nothing else (not the Flux
// shards): the same glob a git directory generator applies, segment by segment.
func TestArgoCDExampleSelectsTenants(t *testing.T) {
	cfg, res, tree := exampleTree(t)
	l := exampleLayout(cfg, 2)
	l.ConfiguredParts = 2 // a shard's part directories are as deep as a tenant's
	tree = l.Apply(tree)
	dirs := map[string]bool{}
	for p := range tree {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[path.Join(cfg.Git.Path, d)] = true
		}
	}
	files, err := filepath.Glob("../examples/argocd/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Argo CD examples: %v", err)
	}
	matched := map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "-shards.yaml") {
			continue // the per-shard form, an alternative (TestArgoCDShardExampleSelectsShards)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for doc := range strings.SplitSeq(string(b), "\n---\n") {
			var as struct {
				Kind string
				Spec struct {
					Generators []struct {
						Git *struct {
							Directories []struct {
								Path    string
								Exclude bool
							}
						}
					}
				}
			}
			if err := yaml.Unmarshal([]byte(doc), &as); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if as.Kind != "ApplicationSet" {
				continue
			}
			for _, g := range as.Spec.Generators {
				if g.Git == nil {
					continue
				}
				for d := range dirs {
					in := false
					for _, pat := range g.Git.Directories {
						if ok, _ := path.Match(pat.Path, d); ok {
							in = !pat.Exclude
							if pat.Exclude {
								break
							}
						}
					}
					if in {
						matched[d]++
					}
				}
			}
		}
	}
	for _, tn := range res.Tenants {
		d := path.Join(cfg.Git.Path, tn.Dir)
		if matched[d] != 1 {
			t.Errorf("%s is selected %d times", d, matched[d])
		}
		delete(matched, d)
	}
	for d := range matched {
		t.Errorf("%s is selected but is not a tenant directory", d)
	}
}

// The Flux example builds.
func TestFluxExampleBuilds(t *testing.T) {
	fs := filesys.MakeFsOnDisk()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "../examples/flux")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range rm.Resources() {
		kinds[r.GetKind()]++
	}
	if kinds["GitRepository"] != 1 || kinds["Kustomization"] < 1 {
		t.Errorf("the Flux example builds to %v", kinds)
	}
}

// syntheticTree holds n tenant directories of one target.
func syntheticTree(n int) render.Tree {
	tree := render.Tree{}
	for i := range n {
		tree[fmt.Sprintf("off/cluster/tenant-%04d/kustomization.yaml", i)] = []byte("resources: []\n")
	}
	return tree
}

// The shard assignment is stable across count changes: from a tree placed
// with one count, another count moves no tenant whose shard still exists;
// the tenants of removed shards go where the hash over the new count says;
// and Placement reads back exactly what Apply wrote.
func TestShardAssignmentIsStable(t *testing.T) {
	target := FluxTarget{"off", "cluster"}
	layout := func(n int, prev render.Tree) render.Tree {
		return FluxLayout{Shards: n, RepoPath: "waldur", Targets: []FluxTarget{target}, Previous: prev}.Apply(syntheticTree(1000))
	}
	for _, tc := range []struct{ from, to int }{{4, 5}, {4, 16}, {16, 4}, {5, 4}, {8, 3}, {3, 1}} {
		t.Run(fmt.Sprintf("%d→%d", tc.from, tc.to), func(t *testing.T) {
			before := layout(tc.from, nil)
			placed := Placement(before, 0)["off/cluster"]
			if len(placed) != 1000 {
				t.Fatalf("Placement reads %d tenants back, want 1000", len(placed))
			}
			for tenant, s := range placed {
				if s != ShardOf(tenant, tc.from) {
					t.Fatalf("%s read back in shard %d, written to %d", tenant, s, ShardOf(tenant, tc.from))
				}
			}
			after := layout(tc.to, before)
			if got := ShardCount(after, 0); got != tc.to {
				t.Errorf("ShardCount %d, want %d", got, tc.to)
			}
			moves := Moves(before, after, 0)
			for tenant, s := range Placement(after, 0)["off/cluster"] {
				was := placed[tenant]
				switch {
				case was < tc.to && s != was:
					t.Errorf("%s moved from shard %d, which still exists, to %d", tenant, was, s)
				case was >= tc.to && s != ShardOf(tenant, tc.to):
					t.Errorf("%s of removed shard %d went to %d, the hash says %d", tenant, was, s, ShardOf(tenant, tc.to))
				}
			}
			wantMoves := 0
			for _, s := range placed {
				if s >= tc.to {
					wantMoves++
				}
			}
			if len(moves) != wantMoves {
				t.Errorf("%d moves, want %d (the tenants of the removed shards)", len(moves), wantMoves)
			}
		})
	}
}

// A new generation places every tenant afresh, by the hash over the new
// count, in directories and names of its own; the old generation's shards
// are all orphans, named as they were; Placement of either generation reads
// only its own directories; and going on with the same generation moves
// nothing.
func TestShardGenerations(t *testing.T) {
	targets := []FluxTarget{{"off", "cluster"}}
	g0 := FluxLayout{Shards: 4, Targets: targets}.Apply(syntheticTree(200))
	l1 := FluxLayout{Shards: 6, Generation: 1, Targets: targets, Previous: g0}
	g1 := l1.Apply(syntheticTree(200))
	placed := Placement(g1, 1)["off/cluster"]
	if len(placed) != 200 {
		t.Fatalf("generation 1 places %d tenants, want 200", len(placed))
	}
	for tenant, s := range placed {
		if s != ShardOf(tenant, 6) {
			t.Errorf("%s in shard %d of generation 1, the hash over 6 says %d", tenant, s, ShardOf(tenant, 6))
		}
	}
	for p := range g1 {
		if strings.HasPrefix(p, "_flux/off.cluster.0") {
			t.Errorf("generation 1 still writes %s", p)
		}
	}
	if _, ok := g1["_flux/off.cluster.g1.05/kustomization.yaml"]; !ok {
		t.Error("no _flux/off.cluster.g1.05")
	}
	if got := len(Placement(g1, 0)); got != 0 {
		t.Errorf("Placement of generation 0 reads %d targets from generation 1's tree", got)
	}
	if got := Generations(g1); !slices.Equal(got, []int{1}) {
		t.Errorf("Generations = %v", got)
	}
	names, dirs := l1.Orphans(g0)
	wantNames := []string{"waldur-off-cluster-00", "waldur-off-cluster-01", "waldur-off-cluster-02", "waldur-off-cluster-03"}
	wantDirs := []string{"_flux/off.cluster.00", "_flux/off.cluster.01", "_flux/off.cluster.02", "_flux/off.cluster.03"}
	if !slices.Equal(names, wantNames) || !slices.Equal(dirs, wantDirs) {
		t.Errorf("orphans %v %v, want %v %v", names, dirs, wantNames, wantDirs)
	}
	if n, _ := l1.ShardDirs(); n[0] != "waldur-off-cluster-g1-00" || len(n) != 6 {
		t.Errorf("generation 1 shards %v", n)
	}
	if !strings.Contains(string(g1["_flux/flux-kustomizations.yaml"]), "path: ./_flux/off.cluster.g1.03") {
		t.Error("the shard Kustomization does not build its generation's directory")
	}
	// The next run of generation 1 keeps every tenant where it is, and
	// lowering within it orphans only the shards it drops.
	l1.Previous = g1
	if again := l1.Apply(syntheticTree(200)); len(Moves(g1, again, 1)) != 0 {
		t.Error("a second run of generation 1 moved tenants")
	}
	l1.Shards = 5
	if names, _ := l1.Orphans(g1); !slices.Equal(names, []string{"waldur-off-cluster-g1-05"}) {
		t.Errorf("lowering within generation 1 orphans %v", names)
	}
}

// Shard directories parse back to their target, generation and shard; other
// paths under _flux are not shards.
func TestParseShardPath(t *testing.T) {
	for _, tc := range []struct {
		path      string
		ok        bool
		gen, num  int
		offTarget string
	}{
		{"_flux/off.cluster.03/kustomization.yaml", true, 0, 3, "off/cluster"},
		{"_flux/off.cluster.g12.07/kustomization.yaml", true, 12, 7, "off/cluster"},
		{"_flux/off.cluster.gx.07/kustomization.yaml", false, 0, 0, ""},
		{"_flux/off.cluster.g0.07/kustomization.yaml", false, 0, 0, ""},
		{"_flux/off.cluster.03/other.yaml", false, 0, 0, ""},
		{"_flux/kustomization.yaml", false, 0, 0, ""},
		{"_flux/off.03/kustomization.yaml", false, 0, 0, ""},
		{"off/cluster/t/kustomization.yaml", false, 0, 0, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			sd, ok := parseShardPath(tc.path)
			if ok != tc.ok || ok && (sd.generation != tc.gen || sd.shard != tc.num || sd.target.Offering+"/"+sd.target.Target != tc.offTarget) {
				t.Errorf("got %+v %v", sd, ok)
			}
		})
	}
}

// A tenant listed by hand in two shards counts in the lowest; lines that are
// not a tenant of the shard's own target are ignored.
func TestPlacementReadsHandEdits(t *testing.T) {
	tree := render.Tree{
		"_flux/off.cluster.03/kustomization.yaml": []byte("resources:\n- ../../off/cluster/a\n- ../../off/cluster/b\n- ../../other/cluster/c\n"),
		"_flux/off.cluster.01/kustomization.yaml": []byte("resources:\n  - ../../off/cluster/b\n"),
		"_flux/kustomization.yaml":                []byte("resources:\n- ../../off/cluster/x\n"),
		"off/cluster/a/kustomization.yaml":        []byte("resources: []\n"),
	}
	got := Placement(tree, 0)
	want := map[string]map[string]int{"off/cluster": {"a": 3, "b": 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Placement = %v, want %v", got, want)
	}
}

// The shard Kustomizations' namespace, source and name prefix come from the
// layout; two prefixes give disjoint names; the defaults are the names used
// before they were configurable.
func TestFluxObjectsConfigurable(t *testing.T) {
	target := FluxTarget{"off", "cluster"}
	objects := func(l FluxLayout) []map[string]any {
		l.Shards, l.RepoPath, l.Targets = 3, "waldur", []FluxTarget{target}
		tree := l.Apply(syntheticTree(10))
		var out []map[string]any
		for doc := range strings.SplitSeq(string(tree["_flux/flux-kustomizations.yaml"]), "\n---\n") {
			var o map[string]any
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatal(err)
			}
			out = append(out, o)
		}
		return out
	}
	get := func(o map[string]any, keys ...string) any {
		var v any = o
		for _, k := range keys {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		return v
	}
	for _, tc := range []struct {
		name                             string
		layout                           FluxLayout
		ns, source, sourceNS, namePrefix string
	}{
		{"defaults", FluxLayout{}, "flux-system", "waldur-tenants", "", "waldur-off-cluster-0"},
		{"same namespace", FluxLayout{Namespace: "tenants", SourceName: "repo", NamePrefix: "site-a-"}, "tenants", "repo", "", "site-a-off-cluster-0"},
		{"source elsewhere", FluxLayout{Namespace: "tenants", SourceName: "repo", SourceNamespace: "sources"}, "tenants", "repo", "sources", "waldur-off-cluster-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(tc.layout)
			if len(objs) != 3 {
				t.Fatalf("%d objects, want 3", len(objs))
			}
			for s, o := range objs {
				if got := get(o, "metadata", "name"); got != fmt.Sprintf("%s%d", tc.namePrefix, s) {
					t.Errorf("name %v", got)
				}
				if got := get(o, "metadata", "namespace"); got != tc.ns {
					t.Errorf("namespace %v, want %s", got, tc.ns)
				}
				if got := get(o, "spec", "sourceRef", "name"); got != tc.source {
					t.Errorf("sourceRef.name %v, want %s", got, tc.source)
				}
				if got, _ := get(o, "spec", "sourceRef", "namespace").(string); got != tc.sourceNS {
					t.Errorf("sourceRef.namespace %q, want %q", got, tc.sourceNS)
				}
			}
		})
	}
	a, b := objects(FluxLayout{NamePrefix: "site-a-"}), objects(FluxLayout{NamePrefix: "site-b-"})
	for i := range a {
		for j := range b {
			if get(a[i], "metadata", "name") == get(b[j], "metadata", "name") {
				t.Errorf("two installations write %v", get(a[i], "metadata", "name"))
			}
		}
	}
}

// The OCI layout generates, per shard, an OCIRepository following the
// shard's artifact and a Kustomization of the same name building the shard
// directory from it (a path inside the artifact, which holds the owned
// directory); the index still builds with kustomize.
func TestFluxObjectsOCI(t *testing.T) {
	cfg, _, tree := exampleTree(t)
	for _, tc := range []struct {
		name     string
		insecure bool
		secret   string
	}{{"registry with a pull secret", false, "registry-creds"}, {"plain-HTTP test registry", true, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			l := exampleLayout(cfg, 2)
			l.OCIRepository, l.OCIInsecure, l.OCISecretName = "registry.example.org/site/tenants/", tc.insecure, tc.secret
			out := l.Apply(maps.Clone(tree))
			fs := writeFS(t, out, "/repo/"+cfg.Git.Path)
			rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/repo/"+cfg.Git.Path+"/"+FluxDir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", FluxDir, err)
			}
			names, dirs := l.ShardDirs()
			if rm.Size() != 2*len(names) || len(names) != 2*len(l.Targets) {
				t.Fatalf("%d objects for %d shards", rm.Size(), len(names))
			}
			repos, kzs := map[string]map[string]any{}, map[string]map[string]any{}
			for _, r := range rm.Resources() {
				m, _ := r.Map()
				spec := m["spec"].(map[string]any)
				switch r.GetKind() {
				case "OCIRepository":
					repos[r.GetName()] = spec
				case "Kustomization":
					kzs[r.GetName()] = spec
				default:
					t.Errorf("unexpected %s %s", r.GetKind(), r.GetName())
				}
			}
			for i, n := range names {
				repo, kz := repos[n], kzs[n]
				if repo == nil || kz == nil {
					t.Fatalf("shard %s: OCIRepository %v, Kustomization %v", n, repo != nil, kz != nil)
				}
				if repo["url"] != "oci://registry.example.org/site/tenants/"+n || fmt.Sprint(repo["ref"]) != "map[tag:"+DefaultFluxOCITag+"]" {
					t.Errorf("OCIRepository %s: url %v, ref %v", n, repo["url"], repo["ref"])
				}
				if ins, _ := repo["insecure"].(bool); ins != tc.insecure {
					t.Errorf("OCIRepository %s: insecure %v", n, repo["insecure"])
				}
				if got := fmt.Sprint(repo["secretRef"]); (tc.secret == "") != (repo["secretRef"] == nil) || tc.secret != "" && got != "map[name:"+tc.secret+"]" {
					t.Errorf("OCIRepository %s: secretRef %s", n, got)
				}
				if fmt.Sprint(kz["sourceRef"]) != "map[kind:OCIRepository name:"+n+"]" || kz["path"] != "./"+dirs[i] {
					t.Errorf("Kustomization %s: sourceRef %v, path %v", n, kz["sourceRef"], kz["path"])
				}
				if _, ok := out[dirs[i]+"/kustomization.yaml"]; !ok {
					t.Errorf("shard directory %s missing", dirs[i])
				}
			}
		})
	}
}

// The shard-branch layout generates, per shard, a GitRepository following
// the shard's branch and a Kustomization of the same name building the
// shard directory from it (a path at the branch's root); the index still
// builds with kustomize.
func TestFluxObjectsShardBranches(t *testing.T) {
	cfg, _, tree := exampleTree(t)
	for _, tc := range []struct{ name, secret string }{{"with a read credential", "waldur-tenants-git"}, {"anonymous", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			l := exampleLayout(cfg, 2)
			l.Branches, l.BranchURL, l.BranchSecretName = true, "https://git.example.org/platform/tenants.git", tc.secret
			out := l.Apply(maps.Clone(tree))
			fs := writeFS(t, out, "/repo/"+cfg.Git.Path)
			rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/repo/"+cfg.Git.Path+"/"+FluxDir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", FluxDir, err)
			}
			names, dirs := l.ShardDirs()
			if rm.Size() != 2*len(names) {
				t.Fatalf("%d objects for %d shards", rm.Size(), len(names))
			}
			repos, kzs := map[string]map[string]any{}, map[string]map[string]any{}
			for _, r := range rm.Resources() {
				m, _ := r.Map()
				spec := m["spec"].(map[string]any)
				switch r.GetKind() {
				case "GitRepository":
					repos[r.GetName()] = spec
				case "Kustomization":
					kzs[r.GetName()] = spec
				default:
					t.Errorf("unexpected %s %s", r.GetKind(), r.GetName())
				}
			}
			for i, n := range names {
				repo, kz := repos[n], kzs[n]
				if repo == nil || kz == nil {
					t.Fatalf("shard %s: GitRepository %v, Kustomization %v", n, repo != nil, kz != nil)
				}
				if repo["url"] != l.BranchURL || fmt.Sprint(repo["ref"]) != "map[branch:"+ShardBranch(n)+"]" {
					t.Errorf("GitRepository %s: url %v, ref %v", n, repo["url"], repo["ref"])
				}
				if got := fmt.Sprint(repo["secretRef"]); (tc.secret == "") != (repo["secretRef"] == nil) || tc.secret != "" && got != "map[name:"+tc.secret+"]" {
					t.Errorf("GitRepository %s: secretRef %s", n, got)
				}
				if fmt.Sprint(kz["sourceRef"]) != "map[kind:GitRepository name:"+n+"]" || kz["path"] != "./"+dirs[i] {
					t.Errorf("Kustomization %s: sourceRef %v, path %v", n, kz["sourceRef"], kz["path"])
				}
			}
		})
	}
}

// The per-shard Argo CD example (the shard-branch layout) selects exactly
// the shard directories of the in-cluster targets, and names each
// Application and branch as the layout names the shard.
func TestArgoCDShardExampleSelectsShards(t *testing.T) {
	cfg, _, tree := exampleTree(t)
	l := exampleLayout(cfg, 2)
	l.ConfiguredParts = 2 // Argo CD builds the shard, not its parts
	tree = l.Apply(tree)
	b, err := os.ReadFile("../examples/argocd/applicationset-shards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var as struct {
		Spec struct {
			Generators []struct {
				Git struct{ Directories []struct{ Path string } }
			}
			Template struct {
				Metadata struct{ Name string }
				Spec     struct {
					Source struct{ TargetRevision, Path string } `json:"source"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &as); err != nil || len(as.Spec.Generators) != 1 || len(as.Spec.Generators[0].Git.Directories) != 1 {
		t.Fatalf("applicationset-shards.yaml: %v %+v", err, as)
	}
	glob := as.Spec.Generators[0].Git.Directories[0].Path
	want := map[string]string{}
	names, dirs := l.ShardDirs()
	for i, d := range dirs {
		if strings.Contains(d, ".cluster.") {
			want[path.Join(cfg.Git.Path, d)] = names[i]
		}
	}
	got := map[string]bool{}
	for p := range tree {
		if d := path.Dir(p); d != "." {
			if ok, _ := path.Match(glob, path.Join(cfg.Git.Path, d)); ok {
				got[path.Join(cfg.Git.Path, d)] = true
			}
		}
	}
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("the generator selects %v, want the %d in-cluster shard directories %v", got, len(want), want)
	}
	// The template's names, with the directory's base name for
	// .path.basename and replace "." "-" applied.
	fill := func(s, base string) string {
		s = strings.NewReplacer(`{{ .path.basename | replace "." "-" }}`, strings.ReplaceAll(base, ".", "-"), `{{ .path.basename }}`, base).Replace(s)
		if strings.Contains(s, "{{") {
			t.Fatalf("unexpected template %q", s)
		}
		return s
	}
	for d, name := range want {
		base := path.Base(d)
		if got := fill(as.Spec.Template.Metadata.Name, base); got != name {
			t.Errorf("%s: Application %s, want the shard name %s", d, got, name)
		}
		if got := fill(as.Spec.Template.Spec.Source.TargetRevision, base); got != ShardBranch(name) {
			t.Errorf("%s: targetRevision %s, want %s", d, got, ShardBranch(name))
		}
		if got := fill(as.Spec.Template.Spec.Source.Path, base); got != strings.TrimPrefix(d, cfg.Git.Path+"/") {
			t.Errorf("%s: path %s", d, got)
		}
	}
}
