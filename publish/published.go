// Package publish holds the publishers, which make a render durable
// somewhere: Git commits it to the GitOps repository and pushes it (review
// branches, Flux OCI shard artifacts, confirm-before-delete and the removal
// policy on the tree it plans), Cluster server-side applies it and prunes
// what is no longer rendered, Dir writes a directory. Published is what a
// publish left, for the stages after it; ServerValidator dry-runs the render
// on the API servers; GitPreflight checks what a Git publish needs.
package publish

import (
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// Options are the switches of one publish.
type Options struct {
	DryRun bool
	// Guard is the deletion policy the publish is checked against.
	Guard guard.Options
	// Confirm asks Waldur about removals nothing explains (the Source, when it
	// can); nil takes the state at its word.
	Confirm confirm.Confirmer
}

// Published is what a publish left at its destination, for the stages after
// it: the order stage finishes an order only when its tenant is here, and the
// identities stage keeps the groups of tenants that are still here.
type Published struct {
	// Before and After are the owned tree before the publish and as the
	// destination holds it now (a dry run: would hold it). For a cluster,
	// After holds the files of the tenants whose every object was applied.
	Before, After render.Tree
	// Ref is the commit made; empty when none was (or for a cluster or a directory).
	Ref string
	// Base is what the publish was planned on: the branch tip before the commit.
	Base string
	// Where names the destination for people: "URL branch:path", a directory.
	Where string
	// Wrote reports whether the destination was changed.
	Wrote bool
	// Failed maps the resources whose objects the destination refused to the
	// reason (the API server's message); their orders are erred with it.
	Failed map[waldur.UUID]string
	// Review maps the resources whose change waits on a review branch
	// (config review:) to why; their orders stay executing with it.
	Review map[waldur.UUID]string
	// FluxRevisions maps every shard (its Kustomization's name) to the
	// revision Flux reports once it has the shard's pushed artifact,
	// "latest@sha256:…", in the OCI layout (git.flux_oci_repository); nil
	// otherwise (every shard then applies "<branch>@sha1:<Ref>").
	FluxRevisions map[string]string
	// Held maps the resources whose change is committed but not yet where
	// the consumer reads it (their shard's artifact failed to push) to why;
	// their orders stay executing, and the next run pushes it.
	Held map[waldur.UUID]string
	// ReviewBranches are the review branches open after the publish.
	ReviewBranches []report.ReviewBranch
	// Incomplete is set when the publish failed as a whole somewhere (a
	// cluster unreachable): what is not in After was not checked, so no
	// order may be finished from its absence.
	Incomplete bool

	present map[waldur.UUID]bool // After's resources, read once
	// hollow is the render the destination was found holding when it was
	// hollow (render.Result.Hollow): Before and After are not made.
	hollow *render.Result
}

// Hollow reports whether the publish found the destination holding a
// hollow render: Before and After are then empty until Trees makes them.
func (p *Published) Hollow() bool { return p != nil && p.hollow != nil }

// Trees returns Before and After for a stage that reads them when need is
// set. After a hollow publish it first builds the render's files
// (render.Result.Fill) and takes them for both, since the destination holds
// exactly the render; without need they stay empty.
func (p *Published) Trees(need bool) (before, after render.Tree, err error) {
	if p.Hollow() && need {
		if err := p.hollow.Fill(); err != nil {
			return nil, nil, err
		}
		tree := p.hollow.Tree(nil)
		p.Before, p.After, p.hollow = tree, tree, nil
	}
	return p.Before, p.After, nil
}

// Present is Has after a hollow publish, whose After is not made; nil
// otherwise, for a reader that finds its tenants in After.
func (p *Published) Present() func(waldur.UUID) bool {
	if p.Hollow() {
		return p.Has
	}
	return nil
}

// Has reports whether the resource's tenant is at the destination, or was
// refused there (its objects may be partly in place).
func (p *Published) Has(id waldur.UUID) bool {
	if p == nil {
		return false
	}
	if _, failed := p.Failed[id]; failed {
		return true
	}
	return p.resources()[id]
}

// Done says what the publish made take effect, for a run cut short.
func (p *Published) Done() string {
	switch {
	case p == nil || !p.Wrote:
		return "nothing pushed or applied"
	case p.Ref != "":
		return "commit " + p.Ref + " pushed"
	}
	return "the apply went through"
}

// Reviewing is Review, nil for no publish.
func (p *Published) Reviewing() map[waldur.UUID]string {
	if p == nil {
		return nil
	}
	return p.Review
}

func (p *Published) resources() map[waldur.UUID]bool {
	if p.present == nil {
		p.present = p.After.ResourceUUIDs()
	}
	return p.present
}
