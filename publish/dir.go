package publish

import (
	"context"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/localtree"
	"github.com/waldur/waldur-gitops/render"
)

// Dir writes the render into a local directory, replacing it
// atomically (render --out).
type Dir struct {
	Dir string
}

// Stage is "out".
func (p *Dir) Stage() string { return "out" }

// Class is failure.ClassOutput.
func (p *Dir) Class() failure.Class { return failure.ClassOutput }

// Publish compares the render with the directory and writes it when it
// differs; the directories of skipped resources are carried over.
func (p *Dir) Publish(_ context.Context, res *render.Result, o Options) (*Published, changeset.Result, error) {
	if err := res.Fill(); err != nil { // only the Git publisher takes a hollow render as it is
		return nil, changeset.Result{}, err
	}
	prev, err := localtree.Read(p.Dir)
	if err != nil {
		return nil, changeset.Result{}, err
	}
	next := res.Tree(prev)
	pub := &Published{Before: prev, After: next, Where: p.Dir}
	cs := res.Compare(prev, next)
	if o.DryRun || next.Equal(prev) {
		return pub, changeset.Result{Changes: cs}, nil
	}
	if err := localtree.Write(p.Dir, next); err != nil {
		return nil, changeset.Result{Changes: cs}, err
	}
	pub.Wrote = true
	return pub, changeset.Result{Changes: cs}, nil
}
