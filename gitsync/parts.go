package gitsync

import (
	"fmt"
	"hash/fnv"
	"path"
	"strconv"
	"strings"

	"github.com/waldur/waldur-gitops/render"
)

// Shard parts (git.flux_shard_parts): a shard whose tenants are applied by
// several Flux Kustomizations, each building a stable share of them, all
// from the shard's one source. kustomize's build costs the square of the
// objects it holds (docs/gitops.md, "What a commit costs"), so a shard of
// 625 tenants in four parts costs about a quarter of one build per commit,
// while the shard keeps its one source, moved only with its content.
//
// The shard directory's kustomization.yaml still lists every tenant of the
// shard (it records where each tenant is, and Argo CD's per-shard form builds
// it); each part adds _flux/<shard dir>/p<P>/kustomization.yaml listing its
// share, and the Kustomization <shard name>-p<P> builds that.
//
// A tenant's part is a hash of its directory name over the part count, and a
// generation keeps the part count it was cut with: moving tenants between
// two Kustomizations that both exist would make the giving one prune them.
// So the count in force is the one the shard directories of the generation
// on the branch tip have; the configured count applies to a generation that
// has no directories yet, that is, with a new git.flux_shard_generation.

// partPrefix starts a part directory's name below its shard directory.
const partPrefix = "p"

// PartOf returns the part, of k, that a tenant directory name belongs to.
// The hash is salted so that parts and shards are independent: tenants of
// one shard spread over all its parts.
func PartOf(tenant string, k int) int {
	if k <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte("part/"))
	h.Write([]byte(tenant))
	return jump(h.Sum64(), k)
}

// PartsOf returns the part count the shard directories of generation in tree
// were cut with: 0 when tree has none, 1 when they have no part directories.
func PartsOf(tree render.Tree, generation int) int {
	n := 0
	for p := range tree {
		if !strings.HasPrefix(p, FluxDir+"/") {
			continue
		}
		if sd, ok := parseShardPath(p); ok && sd.generation == generation && n == 0 {
			n = 1
		}
		if sd, part, ok := parsePartPath(p); ok && sd.generation == generation && part+1 > n {
			n = part + 1
		}
	}
	return n
}

// parsePartPath reads the shard and part of
// "_flux/<shard dir name>/p<P>/kustomization.yaml"; ok is false for any
// other path.
func parsePartPath(p string) (shardDir, int, bool) {
	dir, file := path.Split(p)
	if file != render.KustomizationFile {
		return shardDir{}, 0, false
	}
	shard, part := path.Split(strings.TrimSuffix(dir, "/"))
	digits, ok := strings.CutPrefix(part, partPrefix)
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n < 0 || strconv.Itoa(n) != digits {
		return shardDir{}, 0, false
	}
	sd, ok := parseShardPath(shard + render.KustomizationFile)
	return sd, n, ok
}

// Parts returns the part count in force for the layout's generation: the
// one Previous was cut with, else the configured Parts (at least 1).
func (l FluxLayout) Parts() int {
	if n := PartsOf(l.Previous, l.Generation); n > 0 {
		return n
	}
	return max(l.ConfiguredParts, 1)
}

// PartName is the name of the Kustomization of one part of a shard, of k
// parts: the shard's name when k is 1, else with -p<P> appended.
func (l FluxLayout) PartName(t FluxTarget, shard, part, k int) string {
	if k <= 1 {
		return l.ShardName(t, shard)
	}
	return flux63(fmt.Sprintf("%s-%s%d", l.shardBase(t, shard), partPrefix, part))
}

// PartDir is the directory one part of a shard, of k parts, builds: the
// shard's directory when k is 1, else its p<P> subdirectory.
func (l FluxLayout) PartDir(t FluxTarget, shard, part, k int) string {
	if k <= 1 {
		return l.Dir(t, shard)
	}
	return fmt.Sprintf("%s/%s%d", l.Dir(t, shard), partPrefix, part)
}

// FluxKustomization is one generated Flux Kustomization: its name, and the
// name of the shard whose source it builds from (its own name when the shard
// is applied whole).
type FluxKustomization struct{ Name, Shard string }

// Kustomizations lists every Flux Kustomization the layout generates, in
// the order of the generated objects.
func (l FluxLayout) Kustomizations() []FluxKustomization {
	k := l.Parts()
	var out []FluxKustomization
	for _, tg := range l.sortedTargets() {
		for s := 0; s < l.Shards; s++ {
			for p := 0; p < k; p++ {
				out = append(out, FluxKustomization{Name: l.PartName(tg, s, p, k), Shard: l.ShardName(tg, s)})
			}
		}
	}
	return out
}

// writeParts adds to t the part entry points of one shard of k parts, whose
// tenants (sorted) are listed; nothing when k is 1.
func (l FluxLayout) writeParts(t render.Tree, tg FluxTarget, shard, k int, tenants []string) {
	if k <= 1 {
		return
	}
	parts := make([][]string, k)
	for _, tn := range tenants {
		p := PartOf(tn, k)
		parts[p] = append(parts[p], tn)
	}
	for p, members := range parts {
		var b strings.Builder
		b.WriteString(generatedHeader)
		fmt.Fprintf(&b, "# Part %d of %d of Flux shard %d of %s/%s: %d tenant(s).\n", p, k, shard, tg.Offering, tg.Target, len(members))
		writeResources(&b, "../../../"+tg.Offering+"/"+tg.Target+"/", members)
		t[l.PartDir(tg, shard, p, k)+"/"+render.KustomizationFile] = []byte(b.String())
	}
}

// writeResources writes a kustomization's apiVersion, kind and resources:
// every name, after prefix (an empty list when none).
func writeResources(b *strings.Builder, prefix string, names []string) {
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
	if len(names) == 0 {
		b.WriteString("resources: []\n")
		return
	}
	b.WriteString("resources:\n")
	for _, n := range names {
		b.WriteString("- ")
		b.WriteString(prefix)
		b.WriteString(n)
		b.WriteByte('\n')
	}
}

// PartDirs lists the part directories tree holds below a shard directory,
// in part order; none for a shard applied whole.
func PartDirs(tree render.Tree, shardDir string) []string {
	var out []string
	for p := 0; ; p++ {
		d := fmt.Sprintf("%s/%s%d", shardDir, partPrefix, p)
		if _, ok := tree[d+"/"+render.KustomizationFile]; !ok {
			return out
		}
		out = append(out, d)
	}
}
