package gitsync

import (
	"fmt"
	"hash/fnv"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/waldur/waldur-gitops/render"
)

// FluxDir is the directory, below the owned directory, that holds the Flux
// shard entry points. No offering can be named so: offering directories are
// made of lower-case letters, digits and dashes only.
const FluxDir = "_flux"

// FluxTarget is one offering target whose tenants are split into shards.
type FluxTarget struct {
	// Offering is the offering's directory name, Target the target directory
	// (cluster, management or downstream).
	Offering, Target string
}

// Defaults of the generated Flux objects, the values before they became
// configurable.
const (
	DefaultFluxNamespace  = "flux-system"
	DefaultFluxSource     = "waldur-tenants"
	DefaultFluxNamePrefix = "waldur-"
	// DefaultFluxOCITag is the tag of every shard artifact in the OCI layout.
	DefaultFluxOCITag = "latest"
)

// FluxLayout describes the Flux shard entry points added to the rendered tree.
//
// For every target it adds Shards directories _flux/<offering>.<target>.<NN>/
// whose kustomization.yaml lists a share of the target's tenant directories,
// _flux/flux-kustomizations.yaml with one Flux Kustomization per shard, and
// _flux/kustomization.yaml listing that file (the path of the one Flux
// Kustomization a site creates by hand). Every shard exists even when empty,
// so that Flux prunes a shard's last tenant instead of failing on a missing
// path. A shard in parts (Parts above 1, parts.go) also gets one entry
// point and one Kustomization per part.
//
// The assignment is stable: a tenant that Previous (the tree on the branch
// tip) places in a shard that still exists stays there, whatever Shards is
// now, because moving a tenant between two shards that both exist makes the
// giving shard prune it — Flux deletes the namespace with everything in it,
// and the receiving shard creates it again. Only a tenant not placed yet, or
// placed in a shard that no longer exists, is assigned by a consistent hash of
// its directory name over the current Shards (ShardOf). So raising Shards
// moves nothing (the new shards fill with new tenants only), and lowering it
// moves only the tenants of the shards that are no longer generated: such a
// shard reports its path missing in Flux and keeps its objects (Flux
// garbage-collects only after a successful build), while the receiving shard
// applies them and takes them over; the orphaned shard Kustomization is
// deleted by hand once every remaining shard is Ready (docs/gitops.md).
type FluxLayout struct {
	// Shards is the number of shards per target; 0 adds nothing.
	Shards int
	// Generation numbers the set of shards (git.flux_shard_generation). A
	// tenant keeps its shard only within a generation: a new one places
	// every tenant afresh in shards of new directories and names, and every
	// shard of an older generation is orphaned (Orphans), which is how an
	// existing site is split into more shards or fewer safely. 0 gives the
	// directories and names of before generations existed.
	Generation int
	// RepoPath is the owned directory in the repository (git.path), which the
	// Flux Kustomizations' spec.path starts with.
	RepoPath string
	// Targets lists every offering target, whether or not it has tenants now.
	Targets []FluxTarget
	// Previous is the tree on the branch tip (nil: none), whose shard
	// directories say where each tenant already is.
	Previous render.Tree
	// Namespace is the namespace of the shard Kustomizations (default
	// DefaultFluxNamespace); SourceName and SourceNamespace name the
	// GitRepository they build from (defaults DefaultFluxSource and
	// Namespace); NamePrefix starts every shard Kustomization's name (default
	// DefaultFluxNamePrefix), so that two installations feeding one Flux can
	// keep apart.
	Namespace, SourceName, SourceNamespace, NamePrefix string
	// OCIRepository, when set, chooses the OCI layout: every shard builds
	// from its own artifact, "oci://<OCIRepository>/<shard name>" at tag
	// DefaultFluxOCITag (package ociship pushes them), through an
	// OCIRepository of the shard's name generated beside its Kustomization,
	// instead of from the GitRepository SourceName. The artifact holds the
	// shard directory and its tenants (ociship.ArtifactFiles), paths relative
	// to the owned directory, so the Kustomization's path is the shard
	// directory alone. OCIInsecure makes the OCIRepositories
	// talk plain HTTP; OCISecretName names the Secret they pull with.
	OCIRepository, OCISecretName string
	OCIInsecure                  bool
	// Branches chooses the shard-branch layout: every shard builds from its
	// own branch, ShardBranch of its name, through a GitRepository of the
	// shard's name at BranchURL (with the Secret BranchSecretName, when set)
	// generated beside its Kustomization. The branch holds the same files
	// as an OCI artifact, at its root, so the Kustomization's path is the
	// shard directory alone.
	Branches                    bool
	BranchURL, BranchSecretName string
	// ConfiguredParts is git.flux_shard_parts: how many Kustomizations apply
	// each shard of a new generation (0 or 1: one). Parts is the count in
	// force, which a generation keeps (parts.go).
	ConfiguredParts int
}

// OCI reports whether the layout is the OCI one (OCIRepository set).
func (l FluxLayout) OCI() bool { return l.OCIRepository != "" }

// Placement returns, per target ("<offering>/<target>"), the shard each
// tenant directory is listed in by the shard directories of generation of
// tree. A tenant listed in several shards (a hand edit) counts in the lowest.
func Placement(tree render.Tree, generation int) map[string]map[string]int {
	out := map[string]map[string]int{}
	for p, b := range tree {
		sd, ok := parseShardPath(p)
		if !ok || sd.generation != generation {
			continue
		}
		key := sd.target.Offering + "/" + sd.target.Target
		prefix := "- ../../" + key + "/"
		for line := range strings.Lines(string(b)) {
			line = strings.TrimSpace(line)
			tenant, ok := strings.CutPrefix(line, prefix)
			if !ok || tenant == "" || strings.Contains(tenant, "/") {
				continue
			}
			m := out[key]
			if m == nil {
				m = map[string]int{}
				out[key] = m
			}
			if old, seen := m[tenant]; !seen || sd.shard < old {
				m[tenant] = sd.shard
			}
		}
	}
	return out
}

// shardDir is a shard directory parsed from its path.
type shardDir struct {
	dir               string // below the owned directory: _flux/<name>
	target            FluxTarget
	generation, shard int
}

// parseShardPath reads the shard of "_flux/<offering>.<target>.<NN>/
// kustomization.yaml" (generation 0) or "_flux/<offering>.<target>.g<G>.<NN>/
// kustomization.yaml"; ok is false for any other path.
func parseShardPath(p string) (shardDir, bool) {
	dir, file := path.Split(p)
	if file != render.KustomizationFile || !strings.HasPrefix(dir, FluxDir+"/") {
		return shardDir{}, false
	}
	name := strings.TrimSuffix(strings.TrimPrefix(dir, FluxDir+"/"), "/")
	if strings.Contains(name, "/") {
		return shardDir{}, false
	}
	parts := strings.Split(name, ".")
	sd := shardDir{dir: FluxDir + "/" + name}
	switch len(parts) {
	case 3:
	case 4:
		g, err := strconv.Atoi(strings.TrimPrefix(parts[2], "g"))
		if !strings.HasPrefix(parts[2], "g") || err != nil || g < 1 {
			return shardDir{}, false
		}
		sd.generation = g
	default:
		return shardDir{}, false
	}
	shard, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil || shard < 0 || parts[0] == "" || parts[1] == "" {
		return shardDir{}, false
	}
	sd.target, sd.shard = FluxTarget{Offering: parts[0], Target: parts[1]}, shard
	return sd, true
}

// shardDirs lists the shard directories of tree, sorted by path.
func shardDirs(tree render.Tree) []shardDir {
	var out []shardDir
	for p := range tree {
		if sd, ok := parseShardPath(p); ok {
			out = append(out, sd)
		}
	}
	slices.SortFunc(out, func(a, b shardDir) int { return strings.Compare(a.dir, b.dir) })
	return out
}

// Generations lists the shard generations tree has directories of, in
// order.
func Generations(tree render.Tree) []int {
	var out []int
	for _, sd := range shardDirs(tree) {
		if !slices.Contains(out, sd.generation) {
			out = append(out, sd.generation)
		}
	}
	slices.Sort(out)
	return out
}

// Moves reports the tenants whose shard of generation differs between the
// shard directories of two trees, as "<offering>/<target>/<tenant>" →
// [from, to], leaving out tenants that are in only one of them.
func Moves(before, after render.Tree, generation int) map[string][2]int {
	a, b := Placement(before, generation), Placement(after, generation)
	out := map[string][2]int{}
	for key, m := range a {
		for tenant, from := range m {
			if to, ok := b[key][tenant]; ok && to != from {
				out[key+"/"+tenant] = [2]int{from, to}
			}
		}
	}
	return out
}

// ShardCount returns the number of shards per target of generation that
// the shard directories of tree hold (the highest shard number plus one; 0:
// none).
func ShardCount(tree render.Tree, generation int) int {
	n := 0
	for _, sd := range shardDirs(tree) {
		if sd.generation == generation && sd.shard+1 > n {
			n = sd.shard + 1
		}
	}
	return n
}

// ShardName is the name of a shard's Flux Kustomization (and, in the OCI
// layout, of its OCIRepository): <prefix><offering>-<target>-<NN>, with
// -g<G> before the shard number from generation 1 on.
func (l FluxLayout) ShardName(t FluxTarget, shard int) string {
	return flux63(l.shardBase(t, shard))
}

// shardBase is a shard's name before it is kept to 63 characters.
func (l FluxLayout) shardBase(t FluxTarget, shard int) string {
	prefix := l.NamePrefix
	if prefix == "" {
		prefix = DefaultFluxNamePrefix
	}
	gen := ""
	if l.Generation > 0 {
		gen = fmt.Sprintf("g%d-", l.Generation)
	}
	return fmt.Sprintf("%s%s-%s-%s%02d", prefix, t.Offering, t.Target, gen, shard)
}

func (l FluxLayout) names() (ns, source, sourceNS string) {
	ns, source, sourceNS = l.Namespace, l.SourceName, l.SourceNamespace
	if ns == "" {
		ns = DefaultFluxNamespace
	}
	if source == "" {
		source = DefaultFluxSource
	}
	if sourceNS == "" {
		sourceNS = ns
	}
	return ns, source, sourceNS
}

// ShardDir is the directory of one shard of generation 0 below the owned
// directory; FluxLayout.Dir is that of the layout's generation.
func ShardDir(t FluxTarget, shard int) string {
	return FluxLayout{}.Dir(t, shard)
}

// Dir is the directory of one shard of the layout's generation below the
// owned directory: _flux/<offering>.<target>.<NN>, with .g<G> before the
// shard number from generation 1 on.
func (l FluxLayout) Dir(t FluxTarget, shard int) string {
	if l.Generation > 0 {
		return fmt.Sprintf("%s/%s.%s.g%d.%02d", FluxDir, t.Offering, t.Target, l.Generation, shard)
	}
	return fmt.Sprintf("%s/%s.%s.%02d", FluxDir, t.Offering, t.Target, shard)
}

// ShardOf returns the shard, of n, that the tenant directory name belongs to.
func ShardOf(tenant string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(tenant))
	return jump(h.Sum64(), n)
}

// jump is the jump consistent hash of Lamping and Veach (arXiv:1406.2294):
// growing n to n+1 moves a key only to the new bucket, with probability 1/(n+1).
func jump(key uint64, n int) int {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// Apply adds the shard entry points to t, which it modifies and returns.
// Tenant directories of t outside the listed targets are left out of every
// shard.
func (l FluxLayout) Apply(t render.Tree) render.Tree {
	if l.Shards <= 0 {
		return t
	}
	members := map[string][]string{}
	for p := range t {
		parts := strings.Split(p, "/")
		if len(parts) == 4 && parts[3] == render.KustomizationFile && parts[0] != FluxDir {
			key := parts[0] + "/" + parts[1]
			members[key] = append(members[key], parts[2])
		}
	}
	var index strings.Builder
	index.WriteString(generatedHeader)
	index.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-kustomizations.yaml\n")
	var objs strings.Builder
	objs.WriteString(generatedHeader)
	targets := l.sortedTargets()
	placed := Placement(l.Previous, l.Generation)
	k := l.Parts()
	for _, tg := range targets {
		shards := make([][]string, l.Shards)
		key := tg.Offering + "/" + tg.Target
		for _, tenant := range members[key] {
			s, ok := placed[key][tenant]
			if !ok || s >= l.Shards {
				s = ShardOf(tenant, l.Shards)
			}
			shards[s] = append(shards[s], tenant)
		}
		for s, tenants := range shards {
			slices.Sort(tenants)
			dir := l.Dir(tg, s)
			var b strings.Builder
			b.WriteString(generatedHeader)
			fmt.Fprintf(&b, "# Flux shard %d of %d of %s/%s: %d tenant(s).\n", s, l.Shards, tg.Offering, tg.Target, len(tenants))
			writeResources(&b, "../../"+tg.Offering+"/"+tg.Target+"/", tenants)
			t[dir+"/"+render.KustomizationFile] = []byte(b.String())
			l.writeParts(t, tg, s, k, tenants)
			l.writeShardObjects(&objs, tg, s, k)
		}
	}
	t[FluxDir+"/"+render.KustomizationFile] = []byte(index.String())
	t[FluxDir+"/flux-kustomizations.yaml"] = []byte(objs.String())
	return t
}

// writeShardObjects writes the Flux objects of one shard of k parts: its
// source, in the OCI and shard-branch layouts, and the Kustomization of each
// part.
func (l FluxLayout) writeShardObjects(b *strings.Builder, tg FluxTarget, s, k int) {
	ns, source, sourceNS := l.names()
	name := l.ShardName(tg, s)
	kind := "GitRepository"
	switch {
	case l.OCI():
		l.writeOCISource(b, name, ns, tg)
		kind, source, sourceNS = "OCIRepository", name, ns
	case l.Branches:
		l.writeBranchSource(b, name, ns, tg)
		source, sourceNS = name, ns
	}
	for p := 0; p < k; p++ {
		separate(b)
		dir := l.PartDir(tg, s, p, k)
		if !l.OCI() && !l.Branches {
			dir = path.Join(l.RepoPath, dir)
		}
		writeShardKustomization(b, l.PartName(tg, s, p, k), ns, tg, dir, kind, source)
		if sourceNS != ns {
			fmt.Fprintf(b, "    namespace: %s\n", sourceNS)
		}
	}
}

// writeOCISource writes one shard's OCIRepository.
func (l FluxLayout) writeOCISource(b *strings.Builder, name, ns string, tg FluxTarget) {
	separate(b)
	writeFluxHead(b, "source.toolkit.fluxcd.io/v1", "OCIRepository", name, ns, tg)
	fmt.Fprintf(b, `spec:
  url: oci://%s/%s
  ref:
    tag: %s
  interval: 10m
`, strings.TrimSuffix(l.OCIRepository, "/"), name, DefaultFluxOCITag)
	if l.OCIInsecure {
		b.WriteString("  insecure: true\n")
	}
	if l.OCISecretName != "" {
		fmt.Fprintf(b, "  secretRef:\n    name: %s\n", l.OCISecretName)
	}
}

// writeBranchSource writes one shard's GitRepository, following the shard's
// branch.
func (l FluxLayout) writeBranchSource(b *strings.Builder, name, ns string, tg FluxTarget) {
	separate(b)
	writeFluxHead(b, "source.toolkit.fluxcd.io/v1", "GitRepository", name, ns, tg)
	fmt.Fprintf(b, `spec:
  url: %s
  ref:
    branch: %s
  interval: 10m
`, l.BranchURL, ShardBranch(name))
	if l.BranchSecretName != "" {
		fmt.Fprintf(b, "  secretRef:\n    name: %s\n", l.BranchSecretName)
	}
}

// separate starts a new document in a stream of generated objects unless
// it holds none yet.
func separate(b *strings.Builder) {
	if b.Len() > len(generatedHeader) {
		b.WriteString("---\n")
	}
}

// writeFluxHead writes the apiVersion, kind and metadata of a generated Flux
// object of a shard of tg: its name, namespace and the labels every such
// object carries. The spec follows.
func writeFluxHead(b *strings.Builder, apiVersion, kind, name, ns string, tg FluxTarget) {
	fmt.Fprintf(b, `apiVersion: %s
kind: %s
metadata:
  name: %s
  namespace: %s
  labels:
    app.kubernetes.io/managed-by: waldur-gitops
    waldur.io/offering: %s
    waldur.io/target: %s
`, apiVersion, kind, name, ns, tg.Offering, tg.Target)
}

// writeShardKustomization writes the Kustomization of a shard that builds
// dir (relative to its source's root) from the source of sourceKind named
// sourceName; a sourceRef namespace, when needed, is the caller's to add.
func writeShardKustomization(b *strings.Builder, name, ns string, tg FluxTarget, dir, sourceKind, sourceName string) {
	writeFluxHead(b, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, ns, tg)
	fmt.Fprintf(b, `spec:
  interval: 10m
  retryInterval: 2m
  timeout: 5m
  path: ./%s
  prune: true
  sourceRef:
    kind: %s
    name: %s
`, dir, sourceKind, sourceName)
}

// sortedTargets returns the layout's targets in the order of the generated
// objects: by offering, then target.
func (l FluxLayout) sortedTargets() []FluxTarget {
	targets := slices.Clone(l.Targets)
	slices.SortFunc(targets, func(a, b FluxTarget) int {
		return strings.Compare(a.Offering+"/"+a.Target, b.Offering+"/"+b.Target)
	})
	return targets
}

// ShardDirs lists every shard of the layout with its directory, in the order of
// the generated objects.
func (l FluxLayout) ShardDirs() (names, dirs []string) {
	targets := l.sortedTargets()
	for _, tg := range targets {
		for s := 0; s < l.Shards; s++ {
			names = append(names, l.ShardName(tg, s))
			dirs = append(dirs, l.Dir(tg, s))
		}
	}
	return names, dirs
}

// Orphans lists the shards prev (the tree before a commit) holds that the
// layout no longer generates — after a lowered count, a new generation, or a
// target gone —, in path order: in the OCI layout each gets an artifact
// without its directory, so that its Kustomization reports its path missing
// and does nothing, as it does in the Git layout.
func (l FluxLayout) Orphans(prev render.Tree) (names, dirs []string) {
	targets := l.sortedTargets()
	for _, sd := range shardDirs(prev) {
		if sd.generation == l.Generation && sd.shard < l.Shards && slices.Contains(targets, sd.target) {
			continue
		}
		old := l
		old.Generation = sd.generation
		names = append(names, old.ShardName(sd.target, sd.shard))
		dirs = append(dirs, sd.dir)
	}
	return names, dirs
}

const generatedHeader = "# Generated by waldur-gitops; the next run replaces it.\n"

// flux63 keeps a Kustomization name within a DNS label's 63 characters,
// replacing the middle of a long name by a hash.
func flux63(name string) string {
	if len(name) <= 63 {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%s-%08x%s", name[:42], h.Sum32(), name[len(name)-11:])
}
