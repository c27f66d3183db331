package gitsync

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
)

// LayoutFor is the Flux shard layer cfg asks for.
func LayoutFor(cfg *config.Config) FluxLayout {
	l := FluxLayout{
		Shards: cfg.Git.FluxShards, RepoPath: cfg.Git.Path,
		Namespace: cfg.Git.FluxNamespace, SourceName: cfg.Git.FluxSourceName,
		SourceNamespace: cfg.Git.FluxSourceNamespace, NamePrefix: cfg.Git.FluxNamePrefix, Generation: cfg.Git.FluxShardGeneration,
		OCIRepository: cfg.Git.FluxOCIRepository, OCIInsecure: cfg.Git.FluxOCIInsecure, OCISecretName: cfg.Git.FluxOCISecretName,
		Branches: cfg.Git.FluxShardBranches, BranchURL: cmp.Or(cfg.Git.FluxShardBranchesURL, cfg.Git.URL), BranchSecretName: cfg.Git.FluxShardBranchesSecretName,
		ConfiguredParts: cfg.Git.FluxShardParts,
	}
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		for _, t := range backend.TargetsOf(o.BackendType) {
			l.Targets = append(l.Targets, FluxTarget{Offering: o.DirName(), Target: t})
		}
	}
	return l
}

// WarnMoves warns on log (when set) when the commit moves tenants between
// Flux shards (the tree before it is Previous), which only lowering
// git.flux_shards or a new git.flux_shard_generation does (the assignment is
// otherwise stable), and says what to do with the shards no longer
// generated; and when git.flux_shard_parts asks for a part count the
// generation does not have, which it keeps.
func (l FluxLayout) WarnMoves(log *slog.Logger, next render.Tree) {
	if log == nil {
		return
	}
	cur, gen := l.Previous, l.Generation
	if had, want := PartsOf(cur, gen), max(l.ConfiguredParts, 1); had > 0 && had != want {
		log.Warn("git.flux_shard_parts differs from the part count this shard generation was cut with, which it keeps: moving tenants between two Kustomizations would prune them; "+
			"change the count together with a new git.flux_shard_generation (docs/gitops.md#shard-parts)",
			"generation", gen, "parts", had, "flux_shard_parts", want)
	}
	if was := Generations(cur); len(was) > 0 && !slices.Contains(was, gen) && len(Generations(next)) > 0 {
		log.Warn("git.flux_shard_generation changed: every tenant moves to the shards of the new generation and the old shards no longer build; "+
			"once every new shard Kustomization is Ready at this commit, delete the old ones, which report their path missing (docs/gitops.md#resharding-a-site)",
			"from_generations", fmt.Sprint(was), "to_generation", gen, "shards", ShardCount(next, gen))
		return
	}
	before, after := ShardCount(cur, gen), ShardCount(next, gen)
	moves := Moves(cur, next, gen)
	if before <= after && len(moves) == 0 {
		return
	}
	log.Warn("git.flux_shards lowered: the tenants of the shards no longer generated move to the remaining shards; "+
		"once every remaining shard Kustomization is Ready at this commit, delete the ones that report their path missing (docs/gitops.md#changing-the-shard-count)",
		"from", before, "to", after, "moved_tenants", len(moves))
}
