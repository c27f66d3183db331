package render

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/parallel"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
)

// A run that starts afresh and finds its destination holding what the last
// run left spends most of its render on files it will only compare. With
// HollowWhen, Render first sums everything the files of a render depend on
// (Result.Inputs: the tool's version and build, the config, the templates
// and each resource's digest, as Memory takes it) and asks whether that sum is the
// one the destination was last written from. When it is, the render is
// hollow: every tenant has its names, quotas, limits, groups and directory,
// but no objects or files. A hollow result is only ever published as
// unchanged; anything that needs its files calls Fill, which builds them.

// HollowWhen makes Render ask unchanged, with the fingerprint of its inputs,
// whether the destination holds the files those inputs render to; when it
// does, the result is hollow (see Result.Hollow). unchanged is only asked of
// a render that can be recorded: no order to fulfil, nothing kept, held,
// unread or terminating.
func (r *Renderer) HollowWhen(unchanged func(inputs string) bool) *Renderer {
	c := *r
	c.unchanged = unchanged
	return &c
}

// Hollow reports whether the result's tenants have no objects or files yet:
// the destination was found holding them (HollowWhen). Fill builds them.
func (res *Result) Hollow() bool { return res.hollow }

// Complete reports whether the result is the whole desired state of every
// offering: nothing skipped, kept, unread, held or routed to review. Only a
// complete result's Inputs stand for its files.
func (res *Result) Complete() bool {
	return len(res.Skipped) == 0 && len(res.Kept) == 0 && len(res.Unread) == 0 && len(res.Held) == 0 && len(res.Review) == 0
}

// Unchanged lists every tenant as unchanged, the entries Compare gives for
// a destination already holding the result's tree.
func (res *Result) Unchanged() changeset.Set {
	var cs changeset.Set
	for _, tn := range res.Tenants {
		e := changeset.Entry{Stage: "render", Kind: "Tenant", Subject: tn.Dir, Action: changeset.Unchanged, Resource: string(tn.Resource), Offering: tn.Offering}
		for _, o := range tn.Orders {
			e.Orders = append(e.Orders, string(o))
		}
		cs.Add(e)
	}
	return cs
}

// hollowSource is what Fill needs to build a hollow tenant.
type hollowSource struct {
	r      *Renderer
	o      *config.Offering
	p      profile
	in     *offeringInput
	res    *waldur.Resource
	orders []waldur.UUID
}

// inputs is a render's fingerprint, ok while its result has the shape a
// hollow render gives: one tenant in each target of the backend per
// resource.
type inputs struct {
	sum string
	ok  bool
}

// fingerprint sums what the files of the prepared offerings depend on; not
// ok without HollowWhen, without a build ID or for a render that cannot be
// recorded.
func (r *Renderer) fingerprint(runs []*offeringRun, res *Result) *inputs {
	if r.unchanged == nil || len(res.Unread) > 0 || len(res.Kept) > 0 || len(res.Held) > 0 || len(res.Terminations) > 0 {
		return &inputs{}
	}
	cfg, err := json.Marshal(r.cfg) // config.Secret marshals redacted
	build := version.BuildID()      // the code that renders, whatever its version says
	if err != nil || build == "" {
		return &inputs{}
	}
	h := sha256.New()
	fmt.Fprintf(h, "waldur-gitops render inputs 1\x00%s\x00%s\x00%d\x00", version.String(), build, len(cfg))
	h.Write(cfg)
	var buf []byte
	for _, run := range runs {
		tpls := r.templates[run.o.Name]
		fmt.Fprintf(h, "\x00%s\x00%d\x00%d\x00", run.o.Name, len(tpls), len(run.jobs))
		for _, t := range tpls {
			d := t.Digest()
			h.Write(d[:])
		}
		for _, j := range run.jobs {
			if len(j.orders) > 0 {
				return &inputs{}
			}
			buf = append(append(buf[:0], j.res.UUID...), 0)
			buf = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(buf, j.sum[0]), j.sum[1])
			h.Write(buf)
		}
	}
	return &inputs{sum: hex.EncodeToString(h.Sum(nil)), ok: true}
}

// check keeps the sum only while every job of the offering rendered to one
// tenant in each of its backend's targets (hollowDirs).
func (in *inputs) check(run *offeringRun, j *job) {
	if !in.ok {
		return
	}
	if j.err != nil || len(j.tenants) == 0 {
		in.ok = false
		return
	}
	dirs := run.hollowDirs(j.tenants[0].Name)
	if len(j.tenants) != len(dirs) {
		in.ok = false
		return
	}
	for i, tn := range j.tenants {
		if tn.Dir != dirs[i] {
			in.ok = false
			return
		}
	}
}

// hollowDirs are the directories of a hollow tenant named name: one per
// target of the offering's backend, in the order buildTenants gives.
func (run *offeringRun) hollowDirs(name string) []string {
	dirs := make([]string, len(run.targets))
	for i, t := range run.targets {
		dirs[i] = path.Join(run.o.DirName(), t, name)
	}
	return dirs
}

// hollowBatch is phase 2 of a hollow render: each job's tenants, one per
// target, built from its template data without templates.
func (r *Renderer) hollowBatch(run *offeringRun) func(*config.Offering, profile, []*job, Tree) {
	return func(o *config.Offering, p profile, jobs []*job, _ Tree) {
		for _, j := range jobs {
			if j.err == nil {
				h := &hollowSource{r: r, o: o, p: p, in: run.in, res: j.res, orders: j.orders}
				for _, dir := range run.hollowDirs(j.data.Name) {
					tn := newTenant(o, j, dir)
					tn.hollow = h
					j.tenants = append(j.tenants, tn)
				}
			}
			j.release()
		}
	}
}

// Fill builds the objects and files of a hollow result's tenants in place,
// as a render without HollowWhen would have, a batch of resources at a
// time; a result that is not hollow is left as it is. It fails when a
// resource renders otherwise than its inputs' record promised (to other
// directories, or not at all).
func (res *Result) Fill() error {
	if !res.hollow {
		return nil
	}
	bySource := map[*hollowSource][]*Tenant{}
	var sources []*hollowSource
	for _, tn := range res.Tenants {
		if h := tn.hollow; h != nil {
			if bySource[h] == nil {
				sources = append(sources, h)
			}
			bySource[h] = append(bySource[h], tn)
		}
	}
	for len(sources) > 0 {
		n := min(len(sources), renderBatch)
		if err := fillBatch(sources[:n], bySource); err != nil {
			return err
		}
		sources = sources[n:]
	}
	res.hollow = false
	return nil
}

// fillBatch prepares the template data of sources in order, then builds
// their tenants in parallel.
func fillBatch(sources []*hollowSource, tenants map[*hollowSource][]*Tenant) error {
	jobs := make([]*job, len(sources))
	for i, h := range sources {
		data, err := h.in.tenantData(h.p, h.res)
		if err != nil {
			return fmt.Errorf("render resource %s again: %w", h.res.UUID, err)
		}
		jobs[i] = &job{res: h.res, orders: h.orders, data: data}
	}
	errs := make([]error, len(sources))
	parallel.For(len(sources), sources[0].r.workers, func(i int) {
		h := sources[i]
		built, err := h.r.buildTenants(h.o, h.p, jobs[i])
		if err != nil {
			errs[i] = fmt.Errorf("render resource %s again: %w", h.res.UUID, err)
			return
		}
		errs[i] = fillFrom(tenants[h], built)
	})
	return errors.Join(errs...)
}

// fillFrom gives each hollow tenant the objects and files of the built
// tenant in its directory.
func fillFrom(hollow, built []*Tenant) error {
	if len(built) != len(hollow) {
		return fmt.Errorf("render tenant %s again: it renders to %d directories, not %d; run again", hollow[0].Dir, len(built), len(hollow))
	}
	for i, tn := range hollow {
		if built[i].Dir != tn.Dir {
			return fmt.Errorf("render tenant %s again: it renders to %s instead; run again", tn.Dir, built[i].Dir)
		}
		tn.Objects, tn.Names, tn.Files, tn.hollow = built[i].Objects, built[i].Names, built[i].Files, nil
	}
	return nil
}
