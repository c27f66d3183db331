package ociship_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"path"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/exampletest"
	"github.com/waldur/waldur-gitops/ociship"
	"github.com/waldur/waldur-gitops/render"
)

// Every shard artifact of the bundled example builds with kustomize on its
// own, at the path its Kustomization names, as kustomize-controller builds
// the unpacked artifact; together the shards give every tenant's objects.
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
	want := 0
	whole := filesys.MakeFsInMemory()
	for p, b := range tree {
		_ = whole.WriteFile(path.Join("/site", p), b)
	}
	for _, tn := range res.Tenants {
		rm, err := k.Run(whole, path.Join("/site", tn.Dir))
		if err != nil {
			t.Fatal(err)
		}
		want += rm.Size()
	}
	got := 0
	_, dirs := l.ShardDirs()
	for _, dir := range dirs {
		data, err := ociship.Archive(ociship.ShardFiles(tree, dir))
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
		got += rm.Size()
	}
	if got != want || want == 0 {
		t.Errorf("the artifacts build %d objects, the tenants %d", got, want)
	}
}
