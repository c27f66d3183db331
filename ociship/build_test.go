package ociship_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/ociship"
	"github.com/waldur/waldur-gitops/render"
)

// Every shard artifact of the bundled example builds with kustomize on its
// own, at the path its Kustomization names, as kustomize-controller builds
// the unpacked artifact; together the shards give exactly the objects the
// tenant directories build, byte for byte.
func TestArtifactsBuildAlone(t *testing.T) {
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	res := exampletest.Render(t, cfg.Config, st)
	l := gitsync.FluxLayout{Shards: 3, RepoPath: cfg.Git.Path, OCIRepository: "registry.example.org/w"}
	for _, o := range cfg.Offerings {
		targets := []string{render.TargetCluster}
		if o.BackendType == config.BackendRancher {
			targets = []string{render.TargetManagement, render.TargetDownstream}
		}
		for _, tg := range targets {
			l.Targets = append(l.Targets, gitsync.FluxTarget{Offering: o.DirName(), Target: tg})
		}
	}
	for _, parts := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d parts", parts), func(t *testing.T) {
			l.ConfiguredParts = parts
			tree := l.Apply(res.Tree(nil))
			want := tenantObjects(t, tree, res)
			var got, shards []string
			names, dirs := l.ShardDirs()
			targets := slices.Clone(l.Targets) // in the order of ShardDirs
			slices.SortFunc(targets, func(a, b gitsync.FluxTarget) int {
				return strings.Compare(a.Offering+"/"+a.Target, b.Offering+"/"+b.Target)
			})
			for i, dir := range dirs {
				fs := unpack(t, ociship.ArtifactFiles(tree, dir))
				// Each Kustomization's path, then the shard's entry point as a whole.
				for p := range parts {
					got = append(got, build(t, fs, l.PartDir(targets[i/l.Shards], i%l.Shards, p, parts), names[i])...)
				}
				shards = append(shards, build(t, fs, dir, names[i])...)
			}
			for _, g := range [][]string{got, shards} {
				slices.Sort(g)
				if len(want) == 0 || !slices.Equal(g, want) {
					t.Errorf("the artifacts build %d objects, the tenants %d; they differ", len(g), len(want))
				}
			}
		})
	}
}

// tenantObjects builds every tenant directory of tree, sorted.
func tenantObjects(t *testing.T, tree render.Tree, res *render.Result) []string {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	whole := filesys.MakeFsInMemory()
	for p, b := range tree {
		_ = whole.WriteFile(path.Join("/site", p), b)
	}
	var want []string
	for _, tn := range res.Tenants {
		rm, err := k.Run(whole, path.Join("/site", tn.Dir))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, objects(t, rm)...)
	}
	slices.Sort(want)
	return want
}

// unpack puts an artifact's files, through its archive, below /artifact of
// a file system of their own, as kustomize-controller unpacks it.
func unpack(t *testing.T, files map[string][]byte) filesys.FileSystem {
	t.Helper()
	data, err := ociship.Archive(files)
	if err != nil {
		t.Fatal(err)
	}
	fs := filesys.MakeFsInMemory()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fs
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if err := fs.WriteFile(path.Join("/artifact", h.Name), b); err != nil {
			t.Fatal(err)
		}
	}
}

// build builds dir of an unpacked artifact with kustomize's default (root
// only) load restrictions.
func build(t *testing.T, fs filesys.FileSystem, dir, shard string) []string {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, path.Join("/artifact", dir))
	if err != nil {
		t.Fatalf("kustomize build of %s in the artifact of %s: %v", dir, shard, err)
	}
	return objects(t, rm)
}

// objects returns every object of a build as YAML.
func objects(t *testing.T, rm resmap.ResMap) []string {
	t.Helper()
	var out []string
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(y))
	}
	return out
}
