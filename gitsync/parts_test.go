package gitsync

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/render"
)

// A shard in parts: the shard directory still lists every tenant of the
// shard, each part lists a share of them — disjoint, together the shard,
// each tenant in PartOf's part — and builds with kustomize to exactly its
// tenants' objects; the index has one Kustomization per part, named and
// pointed as the layout says, all from the shard's one source. In every
// layout.
func TestShardParts(t *testing.T) {
	cfg, res, tree := exampleTree(t)
	const shards, parts = 2, 3
	for _, tc := range []struct {
		name, sourceKind string
		set              func(*FluxLayout)
	}{
		{"git", "GitRepository", func(*FluxLayout) {}},
		{"oci", "OCIRepository", func(l *FluxLayout) { l.OCIRepository = "registry.example.org/site" }},
		{"branches", "GitRepository", func(l *FluxLayout) { l.Branches, l.BranchURL = true, "https://git.example.org/t.git" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := exampleLayout(cfg, shards)
			l.ConfiguredParts = parts
			tc.set(&l)
			out := l.Apply(maps.Clone(tree))
			fs := writeFS(t, out, "/repo/"+cfg.Git.Path)
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			for _, tg := range l.Targets {
				for s := range shards {
					shard := listed(t, out, l.Dir(tg, s))
					var union []string
					objects := 0
					for p := range parts {
						dir := l.PartDir(tg, s, p, parts)
						members := listed(t, out, dir)
						for _, m := range members {
							if got := PartOf(path.Base(m), parts); got != p {
								t.Errorf("%s is in part %d, PartOf says %d", m, p, got)
							}
						}
						union = append(union, members...)
						rm, err := k.Run(fs, "/repo/"+cfg.Git.Path+"/"+dir)
						if err != nil {
							t.Fatalf("kustomize build %s: %v", dir, err)
						}
						objects += rm.Size()
					}
					slices.Sort(union)
					if !slices.Equal(union, shard) {
						t.Errorf("shard %s lists %v, its parts %v", l.Dir(tg, s), shard, union)
					}
					rm, err := k.Run(fs, "/repo/"+cfg.Git.Path+"/"+l.Dir(tg, s))
					if err != nil {
						t.Fatalf("kustomize build %s: %v", l.Dir(tg, s), err)
					}
					if rm.Size() != objects {
						t.Errorf("shard %s builds %d objects, its parts %d", l.Dir(tg, s), rm.Size(), objects)
					}
				}
			}
			checkPartObjects(t, l, out, tc.sourceKind)
			// A part directory is as deep as a tenant, yet no tenant.
			for _, e := range res.Compare(nil, out).Entries {
				if strings.HasPrefix(e.Subject, FluxDir) {
					t.Errorf("Compare reports %s", e.Subject)
				}
			}
		})
	}
}

// listed returns the tenant directories (relative to the owned directory) a
// kustomization of tree lists, sorted.
func listed(t *testing.T, tree render.Tree, dir string) []string {
	t.Helper()
	var kz struct{ Resources []string }
	if err := yaml.Unmarshal(tree[dir+"/"+render.KustomizationFile], &kz); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var out []string
	for _, r := range kz.Resources {
		out = append(out, path.Clean(path.Join(dir, r)))
	}
	slices.Sort(out)
	return out
}

// checkPartObjects checks the generated Flux objects of a layout in parts:
// one source per shard (OCI and branches), one Kustomization per part, in
// the order Kustomizations lists, each building its part from its shard's
// source.
func checkPartObjects(t *testing.T, l FluxLayout, tree render.Tree, sourceKind string) {
	t.Helper()
	var names, sources []string
	for _, doc := range strings.Split(string(tree[FluxDir+"/flux-kustomizations.yaml"]), "\n---\n") {
		var o struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct {
				Path      string
				SourceRef struct{ Kind, Name string }
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		if o.Kind != "Kustomization" {
			sources = append(sources, o.Metadata.Name)
			continue
		}
		names = append(names, o.Metadata.Name)
		if _, ok := tree[strings.TrimPrefix(path.Join(strings.TrimPrefix(o.Spec.Path, "./"), render.KustomizationFile), l.RepoPath+"/")]; !ok {
			t.Errorf("Kustomization %s builds %s, which is no part", o.Metadata.Name, o.Spec.Path)
		}
		if o.Spec.SourceRef.Kind != sourceKind {
			t.Errorf("Kustomization %s builds from a %s", o.Metadata.Name, o.Spec.SourceRef.Kind)
		}
		if sourceKind == "OCIRepository" || l.Branches {
			if !slices.Contains(sources, o.Spec.SourceRef.Name) || !strings.HasPrefix(o.Metadata.Name, o.Spec.SourceRef.Name+"-p") {
				t.Errorf("Kustomization %s builds from %s, not its shard's source", o.Metadata.Name, o.Spec.SourceRef.Name)
			}
		}
	}
	var want []string
	for _, k := range l.Kustomizations() {
		want = append(want, k.Name)
		if k.Name != k.Shard && !strings.HasPrefix(k.Name, k.Shard+"-p") {
			t.Errorf("Kustomization %s of shard %s", k.Name, k.Shard)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("Kustomizations %v, Kustomizations() %v", names, want)
	}
	shardNames, _ := l.ShardDirs()
	if (sourceKind == "OCIRepository" || l.Branches) && !slices.Equal(sources, shardNames) {
		t.Errorf("sources %v, want one per shard %v", sources, shardNames)
	}
}

// A generation keeps the part count it was cut with, whatever
// git.flux_shard_parts says now, and the run warns; a new generation takes
// the configured count. A site cut before parts existed stays whole.
func TestShardPartsStick(t *testing.T) {
	cfg, _, tree := exampleTree(t)
	cut := func(parts, generation int, prev render.Tree) (FluxLayout, render.Tree) {
		l := exampleLayout(cfg, 2)
		l.ConfiguredParts, l.Generation, l.Previous = parts, generation, prev
		return l, l.Apply(maps.Clone(tree))
	}
	_, three := cut(3, 0, nil)
	_, whole := cut(1, 0, nil)
	for _, tc := range []struct {
		name            string
		configured, gen int
		prev, want      render.Tree
		parts           int
		warns           bool
	}{
		{"more parts asked", 4, 0, three, three, 3, true},
		{"fewer parts asked", 2, 0, three, three, 3, true},
		{"same count", 3, 0, three, three, 3, false},
		{"parts asked of a whole site", 4, 0, whole, whole, 1, true},
		{"new generation", 2, 1, three, nil, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, out := cut(tc.configured, tc.gen, tc.prev)
			if l.Parts() != tc.parts || PartsOf(out, tc.gen) != tc.parts {
				t.Errorf("Parts() %d, the tree has %d, want %d", l.Parts(), PartsOf(out, tc.gen), tc.parts)
			}
			if tc.want != nil && !maps.EqualFunc(out, tc.want, bytes.Equal) {
				t.Errorf("the tree changed with the configured count")
			}
			var log bytes.Buffer
			l.WarnMoves(slog.New(slog.NewTextHandler(&log, nil)), out)
			if got := strings.Contains(log.String(), "git.flux_shard_parts differs"); got != tc.warns {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warns, log.String())
			}
		})
	}
}

// A shard's tenants spread over all its parts: the part hash is independent
// of the shard hash.
func TestPartOfSpreads(t *testing.T) {
	const shards, parts = 16, 4
	counts := map[[2]int]int{}
	for i := range 4000 {
		name := fmt.Sprintf("waldur-tenant-%d", i)
		counts[[2]int{ShardOf(name, shards), PartOf(name, parts)}]++
	}
	for s := range shards {
		for p := range parts {
			if n := counts[[2]int{s, p}]; n < 4000/shards/parts/2 {
				t.Errorf("shard %d part %d holds %d tenants", s, p, n)
			}
		}
	}
	if PartOf("anything", 1) != 0 || PartOf("anything", 0) != 0 {
		t.Error("one part is part 0")
	}
}

func TestParsePartPath(t *testing.T) {
	for _, tc := range []struct {
		path     string
		ok       bool
		gen, num int
		part     int
	}{
		{"_flux/off.cluster.03/p2/kustomization.yaml", true, 0, 3, 2},
		{"_flux/off.cluster.g4.01/p10/kustomization.yaml", true, 4, 1, 10},
		{"_flux/off.cluster.03/p02/kustomization.yaml", false, 0, 0, 0},
		{"_flux/off.cluster.03/q2/kustomization.yaml", false, 0, 0, 0},
		{"_flux/off.cluster.03/p-1/kustomization.yaml", false, 0, 0, 0},
		{"_flux/off.cluster.03/p2/other.yaml", false, 0, 0, 0},
		{"_flux/off.cluster.03/kustomization.yaml", false, 0, 0, 0},
		{"off/cluster/t/p1/kustomization.yaml", false, 0, 0, 0},
	} {
		t.Run(tc.path, func(t *testing.T) {
			sd, part, ok := parsePartPath(tc.path)
			if ok != tc.ok || ok && (sd.generation != tc.gen || sd.shard != tc.num || part != tc.part) {
				t.Errorf("got %+v part %d %v", sd, part, ok)
			}
		})
	}
}
