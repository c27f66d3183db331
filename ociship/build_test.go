package ociship_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"path"
	"slices"
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
	tree := l.Apply(res.Tree(nil))
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	var want []string
	whole := filesys.MakeFsInMemory()
	for p, b := range tree {
		_ = whole.WriteFile(path.Join("/site", p), b)
	}
	for _, tn := range res.Tenants {
		rm, err := k.Run(whole, path.Join("/site", tn.Dir))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, objects(t, rm)...)
	}
	var got []string
	_, dirs := l.ShardDirs()
	for _, dir := range dirs {
		data, err := ociship.Archive(ociship.ArtifactFiles(tree, dir))
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
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			if err := fs.WriteFile(path.Join("/artifact", h.Name), b); err != nil {
				t.Fatal(err)
			}
		}
		rm, err := k.Run(fs, path.Join("/artifact", dir))
		if err != nil {
			t.Fatalf("kustomize build of the artifact of %s: %v", dir, err)
		}
		got = append(got, objects(t, rm)...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the artifacts build %d objects, the tenants %d; they differ", len(got), len(want))
	}
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
