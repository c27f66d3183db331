package ociship

import (
	"maps"
	"path"
	"strings"

	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/render"
)

// TenantsDir is the directory of a shard artifact, beside its
// kustomization.yaml, that holds one file per flattened tenant.
const TenantsDir = "tenants"

// ArtifactFiles returns the files of one shard's artifact, built from the
// shard's files in tree (ShardFiles): the shard's kustomization.yaml, and per
// tenant one YAML stream of its objects, TenantsDir/<tenant>.yaml, which the
// kustomization lists in place of the tenant's directory.
//
// Flattening is what makes a large shard cheap for Flux: kustomize-controller
// unpacks a file per tenant instead of one per object, and kustomize reads
// plain files instead of building a kustomization per tenant. A file per
// tenant rather than one per shard, because kustomize checks every object it
// reads from one file against the others of that file, which costs the
// square of the file's size (measured in BENCHMARKS.md, "Flux consuming a
// commit"). The objects are the same, in the same order, so the switch
// prunes nothing. A tenant directory whose kustomization is not the plain
// list of its own files that render writes (hand-edited, say) is carried as
// it is and stays listed as a directory. A shard that does not exist gives no
// files.
//
// A shard in parts (gitsync.PartDirs) is flattened part by part, each part
// directory holding its own TenantsDir, and the shard's kustomization.yaml
// lists the part directories, so that every part's Kustomization builds its
// own directory and nothing outside it.
func ArtifactFiles(tree render.Tree, shardDir string) map[string][]byte {
	kz, ok := tree[shardDir+"/"+render.KustomizationFile]
	if !ok {
		return map[string][]byte{}
	}
	parts := gitsync.PartDirs(tree, shardDir)
	if len(parts) == 0 {
		return flatten(tree, shardDir, "../../")
	}
	files := map[string][]byte{}
	var entry strings.Builder
	for line := range strings.Lines(string(kz)) {
		if !strings.HasPrefix(line, "#") {
			break
		}
		entry.WriteString(line)
	}
	entry.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, d := range parts {
		maps.Copy(files, flatten(tree, d, "../../../"))
		entry.WriteString("- " + path.Base(d) + "\n")
	}
	files[shardDir+"/"+render.KustomizationFile] = []byte(entry.String())
	return files
}

// flatten returns the flattened files of the kustomization of dir, whose
// tenant directories are listed as "- <up><offering>/<target>/<tenant>".
func flatten(tree render.Tree, dir, up string) map[string][]byte {
	kzPath := dir + "/" + render.KustomizationFile
	files := map[string][]byte{}
	nested := map[string]bool{} // tenant directories carried as they are
	var entry strings.Builder
	for line := range strings.Lines(string(tree[kzPath])) {
		rel, listed := strings.CutPrefix(strings.TrimSpace(line), "- "+up)
		if !listed || rel == "" {
			entry.WriteString(line)
			continue
		}
		tenant := path.Clean(rel)
		if names, ok := plainTenant(tree, tenant); ok {
			var stream strings.Builder
			for _, n := range names {
				appendDocument(&stream, tenant+"/"+n, tree[tenant+"/"+n])
			}
			name := TenantsDir + "/" + path.Base(tenant) + ".yaml"
			files[dir+"/"+name] = []byte(stream.String())
			entry.WriteString("- " + name + "\n")
			continue
		}
		entry.WriteString(line)
		nested[tenant] = true
	}
	files[kzPath] = []byte(entry.String())
	addUnder(files, tree, nested)
	return files
}

// appendDocument adds one file's object to a YAML stream, headed by a
// comment naming the file it comes from.
func appendDocument(b *strings.Builder, name string, data []byte) {
	b.WriteString("---\n# ")
	b.WriteString(name)
	b.WriteByte('\n')
	b.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
}

// plainTenant reports whether the kustomization of dir is one render writes
// (apiVersion, kind Kustomization, metadata, and resources naming files of
// dir itself) and returns the files it lists, in order. Anything else (a
// patch, a generator, a resource in another directory, a file missing) makes
// it not plain, and the tenant is carried unflattened.
func plainTenant(tree render.Tree, dir string) ([]string, bool) {
	kz, ok := tree[dir+"/"+render.KustomizationFile]
	if !ok {
		return nil, false
	}
	var names []string
	section := ""
	kind := false
	for line := range strings.Lines(string(kz)) {
		l := strings.TrimRight(line, "\r\n")
		switch {
		case strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#"):
		case strings.HasPrefix(l, " "):
			if section != "metadata" {
				return nil, false
			}
		case strings.HasPrefix(l, "- "):
			n := strings.TrimPrefix(l, "- ")
			if section != "resources" || !plainFileName(n) {
				return nil, false
			}
			if _, ok := tree[dir+"/"+n]; !ok {
				return nil, false
			}
			names = append(names, n)
		default:
			key, value, ok := strings.Cut(l, ":")
			if !ok {
				return nil, false
			}
			section = key
			value = strings.TrimSpace(value)
			switch key {
			case "apiVersion", "metadata":
			case "kind":
				kind = value == "Kustomization"
			case "resources":
				if value != "" && value != "[]" {
					return nil, false
				}
			default:
				return nil, false
			}
		}
	}
	return names, kind
}

// plainFileName reports whether n names a YAML file of the directory itself,
// written without quoting.
func plainFileName(n string) bool {
	if n == render.KustomizationFile || !strings.HasSuffix(n, ".yaml") {
		return false
	}
	return !strings.ContainsAny(n, "/\\ \t'\"#:{}[]&*!|>%@`")
}
