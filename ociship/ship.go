package ociship

import (
	"context"
	"fmt"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Shipment is the shard artifacts of one pushed commit to publish.
type Shipment struct {
	Git    config.Git
	Layout gitsync.FluxLayout
	// Before and After are the owned tree before the commit and at it.
	Before, After render.Tree
	// Commit is the commit shipped; Source the repository URL it is from.
	Commit, Source string
}

// Shipped is what Ship did.
type Shipped struct {
	Changes changeset.Set
	Results []Result
	// Revisions maps every shard shipped to the revision Flux reports for it.
	Revisions map[string]string
	// Held maps the resources of the shards not pushed to why: their orders
	// stay executing.
	Held map[waldur.UUID]string
	// Err is set when a shard is not pushed; Config when none could be,
	// the registry's settings being unusable.
	Err    error
	Config bool
}

// Ship publishes the shard artifacts of s.After (the OCI layout), at
// s.Commit: only the shards whose content differs from what the registry
// holds are pushed, so a run after a failed push pushes what is missing. It
// holds back the tenants of a shard that could not be pushed.
func Ship(ctx context.Context, s Shipment) *Shipped {
	out := &Shipped{}
	names, dirs := s.Layout.ShardDirs()
	// A shard no longer generated gets an artifact without its directory
	// (ShardFiles of After finds none), so that it reports its path missing
	// rather than go on applying the tenants that moved away from it.
	on, od := s.Layout.Orphans(s.Before)
	names, dirs = append(names, on...), append(dirs, od...)
	shards := make([]Shard, len(names))
	for i := range names {
		shards[i] = Shard{Name: names[i], Dir: dirs[i]}
	}
	reg, err := FromConfig(s.Git)
	if err != nil {
		// The registry password cannot be read: no shard is shipped.
		for _, d := range dirs {
			out.hold(s, d, "the Flux shard artifacts are not pushed yet: "+err.Error())
		}
		out.Err, out.Config = fmt.Errorf("flux shard artifacts not pushed; commit %s was pushed, the next run pushes them: %w", s.Commit, err), true
		return out
	}
	out.Results = reg.Publish(ctx, s.After, shards, s.Commit, s.Source)
	out.Revisions = map[string]string{}
	var failed []string
	var firstErr error
	for _, r := range out.Results {
		e := changeset.Entry{Stage: "git", Kind: "OCIArtifact", Subject: r.Ref + "@" + r.Digest, Action: changeset.Unchanged}
		switch {
		case r.Err != nil:
			e.Subject, e.Action, e.Reason, e.Cause = r.Ref, changeset.Skip, r.Err.Error(), changeset.CauseShipFailed
			failed = append(failed, r.Name)
			if firstErr == nil {
				firstErr = r.Err
			}
			out.hold(s, r.Dir, "its Flux shard artifact "+r.Name+" is not pushed yet: "+r.Err.Error())
		case r.Pushed:
			e.Action = changeset.Create
			out.Revisions[r.Name] = r.Revision()
		default:
			out.Revisions[r.Name] = r.Revision()
		}
		out.Changes.Add(e)
	}
	if firstErr != nil {
		out.Err = fmt.Errorf("%d flux shard artifact(s) not pushed (%s); commit %s was pushed, the next run pushes them: %w",
			len(failed), strings.Join(failed, ", "), s.Commit, firstErr)
	}
	return out
}

// hold keeps executing, with why, the orders of the tenants a shard lists
// before or after the commit (a removed tenant's namespace is not pruned
// before the artifact is pushed either).
func (out *Shipped) hold(s Shipment, shardDir, why string) {
	if out.Held == nil {
		out.Held = map[waldur.UUID]string{}
	}
	for _, id := range ShardResources(s.Before, s.After, shardDir) {
		out.Held[id] = why
	}
}

// ShardResources lists the resources whose tenants the shard directory
// lists before or after a commit.
func ShardResources(before, after render.Tree, shardDir string) []waldur.UUID {
	var out []waldur.UUID
	for _, tree := range []render.Tree{before, after} {
		dirs := map[string]bool{}
		for f := range ShardFiles(tree, shardDir) {
			if parts := strings.SplitN(f, "/", 4); len(parts) == 4 && parts[0] != gitsync.FluxDir {
				dirs[strings.Join(parts[:3], "/")] = true
			}
		}
		for id, ds := range tree.TenantDirs() {
			for _, d := range ds {
				if dirs[d] {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// RootChanged reports whether the shard objects (_flux/*.yaml, applied
// from the GitRepository) differ between two trees.
func RootChanged(before, after render.Tree) bool {
	for _, f := range []string{gitsync.FluxDir + "/" + render.KustomizationFile, gitsync.FluxDir + "/flux-kustomizations.yaml"} {
		if string(before[f]) != string(after[f]) {
			return true
		}
	}
	return false
}
