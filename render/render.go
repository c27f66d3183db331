// Package render turns Waldur state into the desired state: per-tenant Kubernetes
// manifests, laid out as a directory tree with one kustomization per tenant, and
// the Keycloak groups those manifests refer to. Render is a pure function of the
// state, the config and the templates: it does no I/O, and the same input always
// gives byte-identical files.
package render

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/parallel"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/templates"
	"github.com/waldur/waldur-gitops/waldur"
)

// KustomizationFile is the file name of every tenant's kustomization.
const KustomizationFile = "kustomization.yaml"

// Result is the desired state of every configured offering.
type Result struct {
	// Tenants are sorted by Dir.
	Tenants []*Tenant
	// Groups are the desired Keycloak groups of each offering, sorted by path,
	// then offering. Two offerings may need a group of the same path.
	Groups []Group
	// Changes holds a skip entry for every resource left out because of bad input.
	Changes changeset.Set
	// Skipped maps the UUID of every resource left out to the reason, so that later
	// stages keep what already exists for it instead of deleting it.
	Skipped map[waldur.UUID]string
	// Terminations maps the UUID of every resource Waldur is terminating (a
	// Terminate order pending or executing, or the resource in state Terminating)
	// to its Terminate orders. Removing such a tenant is expected; removing any
	// other is what the mass-deletion guard counts. A Kept resource is never in it.
	Terminations map[waldur.UUID][]waldur.UUID
	// Kept maps the UUID of every resource whose state is missing or not one
	// Waldur defines (Creating, OK, Erred, Updating, Terminating, Terminated) to
	// the reason. Such a resource is neither rendered nor removed: Tree carries
	// its tenant directories over from the previous tree byte for byte, and a
	// publisher must treat it as unchanged (no delete, no update, no order
	// moved) and report it. Each also has a skip entry in Changes.
	Kept map[waldur.UUID]string
	// Gone maps the resources Waldur lists as Terminated to why: removing
	// their tenants needs no Terminate order (someone else closed it).
	Gone map[waldur.UUID]string
	// Unread maps the config name of every offering whose Waldur state could
	// not be read to the reason: nothing of it is rendered, and Tree carries
	// its whole directory over from the previous tree byte for byte.
	Unread map[string]string
	// unreadDirs are the directory names of the Unread offerings.
	unreadDirs map[string]bool
	// Held maps every executing Update order that rendering does not fulfil to
	// the reason: it has no limits and its plan's quotas are not known (see
	// UpdateLimits). Its resource is rendered without it, and the order must
	// stay executing.
	Held map[waldur.UUID]string
	// HeldCause is why each order of Held is held: quota_held for a quota
	// hold, not_applied for a plan whose quotas are not known.
	HeldCause map[waldur.UUID]changeset.Cause
	// Review maps the resources whose change must wait on a review branch
	// whatever its class (a quota cut below usage under quota_shrink:
	// review) to why. The render leaves it empty; the engine's quota stage
	// fills it, and the Git publisher routes those tenants.
	Review map[waldur.UUID]string
	// Warnings are problems that did not stop a resource from rendering: a limit
	// dropped because no quota key maps its component. Sorted by subject.
	Warnings []Warning
	// Known maps each offering with preserve_unmanaged_backend_users to the
	// offering usernames of its offering users in any state, lower-cased:
	// the only members the Keycloak pass may take out of its groups.
	Known map[string]map[string]bool
	// Inputs is the fingerprint of everything the result's files depend on,
	// set only for a render with HollowWhen that is whole (one tenant per
	// resource in each target of its backend, no order to fulfil, nothing
	// skipped, kept, held, unread or terminating). The same Inputs render
	// to the same files, byte for byte.
	Inputs string
	hollow bool
}

// Warning is a problem with one rendered resource that left the rest of it
// rendered.
type Warning struct {
	// Offering is the offering's config name; Resource the resource's UUID.
	Offering string
	Resource waldur.UUID
	// Subject names the resource as skip entries do: <offering dir>/<uuid> ("<name>").
	Subject string
	// Message says what was left out and how to render it.
	Message string
}

// Tenant is the rendered output for one Waldur resource in one target directory.
type Tenant struct {
	// Offering is the offering's config name.
	Offering string
	// Dir is the tenant's directory relative to the output root: <offering>/<target>/<name>.
	Dir string
	// Name is the tenant's name (its namespace).
	Name string
	// BackendID is what Waldur records as the resource's backend id: the namespace
	// name, or <cluster>:<project> for Rancher.
	BackendID string
	// Resource is the Waldur resource's UUID; ResourceName its name.
	Resource     waldur.UUID
	ResourceName string
	// Orders are the executing Create, Restore and Update orders this tenant fulfils.
	Orders []waldur.UUID
	// Limits are the effective limits by component key: the resource's, or its
	// executing Update order's, after the paused and downscaled rules.
	Limits map[string]float64
	// Quota is the tenant's quota map by ResourceQuota key (held values
	// included, see QuotaHolds); QuotaName names the profile's
	// ResourceQuota, "" where another controller names it.
	Quota     map[string]string
	QuotaName string
	// Objects are the rendered objects, in file order. A renderer made
	// WithoutObjects keeps them only for tenants with Orders and leaves them
	// nil for the others.
	Objects []manifest.Object
	// Names name the rendered objects, in the order of Objects; they are
	// kept when the objects are not.
	Names []ObjectName
	// Files are the encoded files of the directory, sorted by name, kustomization included.
	Files []File
	// hollow is set while a hollow render's tenant has no objects or files.
	hollow *hollowSource
}

// ObjectName is what names a rendered object on its cluster.
type ObjectName struct {
	Kind, Namespace, Name string
}

// File is one file of a tenant directory.
type File struct {
	Name string
	Data []byte
}

// Group is one desired Keycloak group.
type Group struct {
	// Name of the group; Parent is its parent's name, "" for a top-level group.
	Name   string
	Parent string
	// Description goes into the group's description attribute.
	Description string
	// Offering is the config name of the offering that needs the group.
	Offering string
	// Resources lists the UUIDs of every resource that needs the group, sorted.
	Resources []waldur.UUID
	// Members are the offering usernames that belong in the group, sorted.
	Members []string
}

// Path is the group's Keycloak path, /parent/name or /name.
func (g Group) Path() string {
	if g.Parent != "" {
		return "/" + g.Parent + "/" + g.Name
	}
	return "/" + g.Name
}

// Renderer renders configured offerings with their templates.
type Renderer struct {
	cfg       *config.Config
	templates map[string][]*templates.Template
	workers   int
	// dropObjects: keep Tenant.Objects only for tenants with orders.
	dropObjects bool
	// batch is how many resources phase 1 prepares before phase 2 builds them.
	batch int
	// previous returns the tree in place, whose bytes equal files share.
	previous func() Tree
	// holds are the quota values kept while usage is above a cut.
	holds QuotaHolds
	// memory, when set, holds what the last render made of each resource.
	memory *Memory
	// unchanged, when set, is asked whether the destination holds what
	// the inputs render to (HollowWhen).
	unchanged func(inputs string) bool
}

// New builds a renderer. tpls maps each offering's name to its templates (see
// LoadTemplates).
func New(cfg *config.Config, tpls map[string][]*templates.Template) *Renderer {
	return &Renderer{cfg: cfg, templates: tpls, workers: runtime.GOMAXPROCS(0), batch: renderBatch}
}

// WithoutObjects makes Render drop each tenant's Objects once they are
// encoded into its Files, except for tenants that fulfil an order (Orders
// not empty), whose objects the order stage reads to know when the cluster
// shows the change. The Files are the same byte for byte. The generic objects
// take about two thirds of a result's memory; a run that only publishes
// files (Git, a directory) and neither applies nor validates objects on a
// server or prints them needs none of them.
func (r *Renderer) WithoutObjects() *Renderer {
	c := *r
	c.dropObjects = true
	return &c
}

// SharingWith makes Render call previous once, at its start, for the tree
// currently in place (nil when unknown), and give every file it encodes
// whose bytes equal those at the same path there that tree's bytes instead
// of its own (see Result.Share). A re-render of an unchanged site then keeps
// a single copy of its files from the start, not two until the end. previous
// may block, for example until the tree has been fetched.
func (r *Renderer) SharingWith(previous func() Tree) *Renderer {
	c := *r
	c.previous = previous
	return &c
}

// LoadTemplates loads the default and site templates of every offering.
func LoadTemplates(cfg *config.Config) (map[string][]*templates.Template, error) {
	out := map[string][]*templates.Template{}
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		var defaults fs.FS
		if b := backend.Lookup(o.BackendType); b != nil {
			defaults = b.Templates
		}
		t, err := templates.ForOfferingFS(defaults, o.BackendType, o.TemplatesDir)
		if err != nil {
			return nil, fmt.Errorf("offering %s: %w", o.Name, err)
		}
		out[o.Name] = t
	}
	return out, nil
}

// Render renders the state of every configured offering. It fails only when the
// state does not cover a configured offering; problems with single resources are
// reported in the result's Changes and Skipped and the rest is rendered.
func (r *Renderer) Render(st *waldur.State) (*Result, error) {
	res := &Result{Skipped: map[waldur.UUID]string{}, Terminations: map[waldur.UUID][]waldur.UUID{}, Kept: map[waldur.UUID]string{}, Gone: map[waldur.UUID]string{}}
	groups := map[string]*Group{}
	var prev Tree
	if r.previous != nil {
		prev = r.previous()
	}
	sc := r.memory.begin()
	defer sc.end()
	var runs []*offeringRun
	for i := range r.cfg.Offerings {
		o := &r.cfg.Offerings[i]
		if why, unread := st.Unread[o.Name]; unread {
			if res.Unread == nil {
				res.Unread, res.unreadDirs = map[string]string{}, map[string]bool{}
			}
			res.Unread[o.Name], res.unreadDirs[o.DirName()] = why, true
			continue
		}
		ost, ok := st.Offering(o.Name)
		if !ok {
			return nil, fmt.Errorf("the Waldur state has no offering %q: refusing to render without it", o.Name)
		}
		if ost.OfferingUUID != "" && string(ost.OfferingUUID) != o.WaldurOfferingUUID {
			return nil, fmt.Errorf("offering %s: the state is of offering %s, the config names %s", o.Name, ost.OfferingUUID, o.WaldurOfferingUUID)
		}
		for _, id := range ost.Terminated {
			res.Gone[id] = "terminated in Waldur"
		}
		if o.PreserveUnmanagedBackendUsers {
			res.known(o.Name, ost.OfferingUsers)
		}
		runs = append(runs, r.prepare(o, ost, res, sc))
	}
	in := r.fingerprint(runs, res)
	res.hollow = in.ok && r.unchanged(in.sum)
	for _, run := range runs {
		r.renderOffering(run, res, groups, prev, sc, res.hollow)
		for _, j := range run.jobs {
			in.check(run, j)
		}
	}
	if in.ok && res.Complete() {
		res.Inputs = in.sum
	}
	slices.SortFunc(res.Tenants, func(a, b *Tenant) int { return cmp.Compare(a.Dir, b.Dir) })
	res.Groups = sortedGroups(groups)
	res.Changes.Sort()
	slices.SortStableFunc(res.Warnings, func(a, b Warning) int { return cmp.Compare(a.Subject, b.Subject) })
	return res, nil
}

// sortedGroups returns the groups with their members and resources sorted and
// deduplicated, ordered by path and offering. Each path is built once rather
// than in every comparison.
func sortedGroups(groups map[string]*Group) []Group {
	type keyed struct {
		path string
		g    *Group
	}
	list := make([]keyed, 0, len(groups))
	for _, g := range groups {
		slices.Sort(g.Members)
		g.Members = slices.Compact(g.Members)
		slices.Sort(g.Resources)
		g.Resources = slices.Compact(g.Resources)
		list = append(list, keyed{g.Path(), g})
	}
	slices.SortFunc(list, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.g.Offering, b.g.Offering))
	})
	var out []Group
	for _, k := range list {
		out = append(out, *k.g)
	}
	return out
}

// job is one resource on its way through rendering.
type job struct {
	res    *waldur.Resource
	data   *TenantData // until its tenants are built
	groups []Group
	orders []waldur.UUID
	err    error
	// What collecting needs of data once it is gone.
	name     string
	warnings []string
	excluded []excludedMember
	tenants  []*Tenant
	// What a Memory keeps: the digest of the job's inputs, the names it
	// claimed, whether it failed on a name another holds, and whether it
	// was taken from the last render.
	sum                   digest
	claims, projectClaims []string
	claimErr, reused      bool
}

// renderBatch is how many resources phase 1 prepares before phase 2 builds
// them: enough to keep every worker busy, few enough that the template data
// of a batch is a small part of a render's memory.
const renderBatch = 256

// buildBatch runs phase 2 on jobs in parallel and then lets go of their
// template data. Files equal to those of prev take prev's bytes.
func (r *Renderer) buildBatch(o *config.Offering, p profile, jobs []*job, prev Tree) {
	parallel.For(len(jobs), r.workers, func(i int) {
		j := jobs[i]
		if j.reused {
			// Equal bytes of a tree fetched since are shared too: one
			// copy of an unchanged file, whoever wrote the tree.
			for _, tn := range j.tenants {
				tn.share(prev)
			}
			return
		}
		if j.err == nil {
			j.tenants, j.err = r.buildTenants(o, p, j)
		}
		for _, tn := range j.tenants {
			tn.share(prev)
		}
		j.release()
	})
}

// release keeps what collecting needs of a job's template data and lets go
// of the rest.
func (j *job) release() {
	if j.data != nil {
		j.name, j.warnings, j.excluded = j.data.Name, j.data.warnings, j.data.excluded
		j.data = nil
	}
}

// newTenant is the tenant of job j in directory dir, without objects.
func newTenant(o *config.Offering, j *job, dir string) *Tenant {
	return &Tenant{
		Offering: o.Name, Name: j.data.Name, BackendID: j.data.backendID(), Resource: j.res.UUID, ResourceName: j.res.Name,
		Limits: j.data.Resource.Limits, Quota: j.data.Quota, QuotaName: j.data.QuotaName,
		Orders: j.orders, Dir: dir,
	}
}

// offeringRun is one offering on its way through a render: what phase 1
// needs, decided before any tenant is built.
type offeringRun struct {
	o          *config.Offering
	p          profile
	in         *offeringInput
	remembered map[waldur.UUID]*memo
	// jobs are the resources to render, in creation order, each with its
	// orders and the digest of its inputs.
	jobs []*job
	// targets are the offering's backend's targets, sorted.
	targets []string
}

// prepare reads an offering's state into jobs: the resources to render in
// creation order, each with the orders it fulfils and its digest; resources
// in no state Waldur defines are kept and reported.
func (r *Renderer) prepare(o *config.Offering, st *waldur.OfferingState, res *Result, sc *scope) *offeringRun {
	run := &offeringRun{o: o, p: newProfile(o), in: newOfferingInput(o, st), targets: slices.Sorted(slices.Values(backend.TargetsOf(o.BackendType)))}
	in := run.in
	in.holds = r.holds
	dg := sc.digests(r, in)
	run.remembered = sc.offering(o.Name)
	in.terminations(res.Terminations)
	for id, why := range in.held {
		if res.Held == nil {
			res.Held = map[waldur.UUID]string{}
		}
		res.Held[id] = why
		res.hold(id, changeset.CauseNotApplied)
	}
	resources := slices.Clone(st.Resources)
	slices.SortStableFunc(resources, func(a, b waldur.Resource) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID))
	})
	for i := range resources {
		rs := &resources[i]
		if why := unknownState(rs); why != "" {
			res.Kept[rs.UUID] = why
			delete(res.Terminations, rs.UUID)
			res.Changes.Add(changeset.Entry{
				Stage: "render", Kind: "Resource", Action: changeset.Skip, Offering: o.Name,
				Subject: o.DirName() + "/" + resourceLabel(rs), Resource: string(rs.UUID), Reason: why,
				Cause: changeset.CauseUnknownState,
			})
			continue
		}
		orders, render := in.lifecycle(rs)
		if !render {
			continue
		}
		orders = in.holdUpdates(rs.UUID, orders, res)
		run.jobs = append(run.jobs, &job{res: rs, orders: orders})
	}
	dg.sums(run.jobs, r.workers)
	return run
}

// renderOffering renders the jobs of one prepared offering; hollow builds
// their tenants without templates or files (see HollowWhen).
func (r *Renderer) renderOffering(run *offeringRun, res *Result, groups map[string]*Group, prev Tree, sc *scope, hollow bool) {
	o, p, in := run.o, run.p, run.in
	// Phase 1, in order: claim names, so that the first-created resource
	// keeps a contested name. Phase 2, in parallel: execute templates and
	// encode files. The two alternate in batches, so that only one batch's
	// template data is alive at a time; the claims of a batch see every
	// earlier one, so the result is the same.
	claimed := map[string]waldur.UUID{}
	projectClaimed := map[string]*waldur.Resource{}
	build := r.buildBatch
	if hollow {
		build = r.hollowBatch(run)
	}
	for batch := 0; batch < len(run.jobs); batch += r.batch {
		part := run.jobs[batch:min(batch+r.batch, len(run.jobs))]
		r.prepareData(run, part, hollow)
		for _, j := range part {
			if !hollow && reuse(run.remembered, j, claimed, projectClaimed) {
				continue
			}
			if j.data == nil && j.err == nil {
				j.data, j.err = in.tenantData(p, j.res)
			}
			if j.err == nil {
				j.err = claimNames(p, j, claimed, projectClaimed)
				j.claimErr = j.err != nil
			}
		}
		build(o, p, part, prev)
	}
	// Phase 3, in order: collect.
	collectJobs(o, run.jobs, res, groups)
	if hollow {
		return // a hollow tenant has nothing to take again
	}
	for _, j := range run.jobs {
		sc.keep(o.Name, j)
	}
}

// prepareData makes the template data of the jobs that will not be taken
// from the Memory, in parallel: tenantData reads the offering's input and
// writes only the job's own data. A registered backend's Profile.Fill is
// not known to be safe to call at once, so its jobs are left to the
// serial phase 1.
func (r *Renderer) prepareData(run *offeringRun, jobs []*job, hollow bool) {
	if _, registered := run.p.(*registeredProfile); registered || r.workers < 2 {
		return
	}
	parallel.For(len(jobs), r.workers, func(i int) {
		j := jobs[i]
		if m := run.remembered[j.res.UUID]; !hollow && m != nil && m.sum == j.sum {
			return // likely taken from the Memory
		}
		j.data, j.err = run.in.tenantData(run.p, j.res)
	})
}

// claimNames claims the names a job's tenant takes, in resource order, so
// that the first-created resource keeps a contested name: a name another
// resource claimed is an error, and so is a project-wide name claimed
// differently; when none is, the job's names are taken and its groups set.
func claimNames(p profile, j *job, claimed map[string]waldur.UUID, projectClaimed map[string]*waldur.Resource) error {
	rs := j.res
	for _, name := range p.claims(j.data) {
		if other, taken := claimed[name]; taken {
			return changeset.Because(changeset.CauseNameConflict, fmt.Errorf("name %s is already used by resource %s", name, other))
		}
	}
	if err := checkProjectClaims(p.projectClaims(j.data), rs, projectClaimed); err != nil {
		return err
	}
	j.claims, j.projectClaims = p.claims(j.data), p.projectClaims(j.data)
	takeClaims(rs, j.claims, j.projectClaims, claimed, projectClaimed)
	j.groups = p.groups(j.data)
	return nil
}

// takeClaims records the names resource rs takes.
func takeClaims(rs *waldur.Resource, names, projectNames []string, claimed map[string]waldur.UUID, projectClaimed map[string]*waldur.Resource) {
	for _, name := range names {
		claimed[name] = rs.UUID
	}
	for _, name := range projectNames {
		if _, taken := projectClaimed[name]; !taken {
			projectClaimed[name] = rs
		}
	}
}

// collectJobs adds an offering's rendered jobs to res in resource order: the
// tenants, warnings and left-out members of each, or why it was skipped, and
// its Keycloak groups merged into groups, keyed per offering.
func collectJobs(o *config.Offering, jobs []*job, res *Result, groups map[string]*Group) {
	dir := o.DirName()
	for _, j := range jobs {
		if j.err != nil {
			res.Skipped[j.res.UUID] = j.err.Error()
			res.Changes.Add(changeset.Entry{
				Stage: "render", Kind: "Resource", Action: changeset.Skip, Offering: o.Name,
				Subject: dir + "/" + resourceLabel(j.res), Resource: string(j.res.UUID),
				Reason: j.err.Error(), Cause: changeset.CauseOf(j.err, changeset.CauseRenderFailed),
			})
			continue
		}
		res.Tenants = append(res.Tenants, j.tenants...)
		subject := dir + "/" + resourceLabel(j.res)
		for _, w := range j.warnings {
			res.Warnings = append(res.Warnings, Warning{Offering: o.Name, Resource: j.res.UUID, Subject: subject, Message: w})
		}
		for _, e := range j.excluded {
			res.Changes.Add(changeset.Entry{
				Stage: "render", Kind: "Member", Action: changeset.Skip, Offering: o.Name,
				Subject: subject + " member " + strconv.Quote(e.name), Resource: string(j.res.UUID),
				Reason: "left out of tenant " + j.name + ": " + e.reason, Cause: changeset.CauseMemberLeftOut,
			})
		}
		for _, g := range j.groups {
			// Per offering: offerings may use different Keycloak realms, and
			// each looks its members up in its own way.
			key := o.Name + "\x00" + g.Path()
			if have, ok := groups[key]; ok {
				have.Members = append(have.Members, g.Members...)
				have.Resources = append(have.Resources, g.Resources...)
				continue
			}
			// A copy: the job's groups may be remembered (Memory) and
			// merging must not write into them.
			gc := g
			gc.Members, gc.Resources = slices.Clone(g.Members), slices.Clone(g.Resources)
			groups[key] = &gc
		}
	}
}

// unknownState says why a resource's state is not one Waldur defines, "" when
// it is.
func unknownState(r *waldur.Resource) string {
	switch r.State {
	case waldur.ResourceCreating, waldur.ResourceOK, waldur.ResourceErred, waldur.ResourceUpdating,
		waldur.ResourceTerminating, waldur.ResourceTerminated:
		return ""
	case "":
		return "the resource has no state: its tenant is kept exactly as it is"
	}
	return fmt.Sprintf("the resource state %q is not one Waldur defines: its tenant is kept exactly as it is", r.State)
}

// checkProjectClaims refuses names that a resource of another Waldur project
// already holds: Rancher project groups are per Waldur project, and two
// projects (of different customers) may share a slug. The first resource in
// creation order keeps the name; later ones are skipped with both named.
func checkProjectClaims(names []string, r *waldur.Resource, claimed map[string]*waldur.Resource) error {
	for _, name := range names {
		if other, taken := claimed[name]; taken && other.ProjectUUID != r.ProjectUUID {
			return changeset.Because(changeset.CauseNameConflict, fmt.Errorf("%s is already the group of Waldur project %s (resource %s); this resource's project %s has the same slug %q, and two projects never share a group: give keycloak_groups.child a pattern with {project_uuid}",
				name, other.ProjectUUID, other.UUID, r.ProjectUUID, r.ProjectSlug))
		}
	}
	return nil
}

// resourceLabel names a resource in messages: its UUID and, quoted so that no
// character of it can break a line of output, its name.
func resourceLabel(r *waldur.Resource) string {
	if r.Name != "" {
		return fmt.Sprintf("%s (%q)", r.UUID, r.Name)
	}
	return string(r.UUID)
}

// buildTenants executes the offering's templates for one resource and files the
// objects into one tenant per target directory.
func (r *Renderer) buildTenants(o *config.Offering, p profile, j *job) ([]*Tenant, error) {
	byTarget := map[string]*Tenant{}
	var targets []string
	def, all := backend.DefaultTargetOf(o.BackendType), backend.TargetsOf(o.BackendType)
	for _, t := range r.templates[o.Name] {
		objs, err := t.Execute(j.data, def)
		if err != nil {
			return nil, changeset.Because(changeset.CauseTemplate, err)
		}
		for _, obj := range objs {
			if !slices.Contains(all, obj.Target) {
				return nil, changeset.Because(changeset.CauseTemplate, fmt.Errorf("template %s: target %q is not one of %s", t.Name, obj.Target, strings.Join(slices.Sorted(slices.Values(all)), ", ")))
			}
			mo := manifest.Object(obj.Body)
			mo.SetStrings("labels", map[string]string{
				manifest.LabelManagedBy:    manifest.ManagedByValue,
				manifest.LabelResourceUUID: string(j.res.UUID),
			})
			mo.SetStrings("annotations", map[string]string{
				manifest.AnnotationOffering: o.WaldurOfferingUUID,
				manifest.AnnotationProject:  string(j.res.ProjectUUID),
				manifest.AnnotationCustomer: string(j.res.CustomerUUID),
			})
			if err := mo.Validate(); err != nil {
				return nil, changeset.Because(changeset.CauseTemplate, fmt.Errorf("template %s produced an invalid %s: %w", t.Name, cmp.Or(mo.Kind(), "object"), err))
			}
			tn, ok := byTarget[obj.Target]
			if !ok {
				tn = newTenant(o, j, path.Join(o.DirName(), obj.Target, j.data.Name))
				byTarget[obj.Target] = tn
				targets = append(targets, obj.Target)
			}
			tn.Objects = append(tn.Objects, mo)
			tn.Names = append(tn.Names, ObjectName{Kind: mo.Kind(), Namespace: mo.Namespace(), Name: mo.Name()})
		}
	}
	var out []*Tenant
	slices.Sort(targets)
	for _, target := range targets {
		tn := byTarget[target]
		if err := tn.encode(); err != nil {
			return nil, err
		}
		if r.dropObjects && len(tn.Orders) == 0 {
			tn.Objects = nil
		}
		out = append(out, tn)
	}
	return out, nil
}

// encode writes one file per object and the kustomization listing them.
func (t *Tenant) encode() error {
	names := map[string]bool{}
	for _, obj := range t.Objects {
		name := strings.ToLower(obj.Kind()) + "-" + obj.Name() + ".yaml"
		if names[name] || name == KustomizationFile {
			return changeset.Because(changeset.CauseNameConflict, fmt.Errorf("two objects would both be written to %s/%s", t.Dir, name))
		}
		names[name] = true
		data, err := manifest.Encode(map[string]any(obj))
		if err != nil {
			return changeset.Because(changeset.CauseTemplate, fmt.Errorf("encode %s: %w", obj.ID(), err))
		}
		t.Files = append(t.Files, File{Name: name, Data: data})
	}
	slices.SortFunc(t.Files, func(a, b File) int { return cmp.Compare(a.Name, b.Name) })
	data, err := manifest.Encode(kustomizationDoc(t.Name, t.Resource, t.Files))
	if err != nil {
		return changeset.Because(changeset.CauseTemplate, fmt.Errorf("encode %s/%s: %w", t.Dir, KustomizationFile, err))
	}
	t.Files = append(t.Files, File{Name: KustomizationFile, Data: data})
	slices.SortFunc(t.Files, func(a, b File) int { return cmp.Compare(a.Name, b.Name) })
	return nil
}

// kustomizationDoc is the generic form (as encoding/json decodes it) of the
// kustomize types.Kustomization listing files, named name and annotated with
// the resource's UUID: built directly rather than through a JSON round trip,
// which was a third of the per-tenant encoding. TestKustomizationDoc holds it
// to the round trip of the typed value.
func kustomizationDoc(name string, resource waldur.UUID, files []File) map[string]any {
	meta := map[string]any{"annotations": map[string]any{manifest.LabelResourceUUID: string(resource)}}
	if name != "" {
		meta["name"] = name
	}
	doc := map[string]any{"apiVersion": types.KustomizationVersion, "kind": types.KustomizationKind, "metadata": meta}
	if len(files) > 0 {
		res := make([]any, len(files))
		for i, f := range files {
			res[i] = f.Name
		}
		doc["resources"] = res
	}
	return doc
}

// Stream writes every object of every tenant as one YAML stream, in directory order.
func (res *Result) Stream() []byte {
	var b bytes.Buffer
	for _, t := range res.Tenants {
		for _, f := range t.Files {
			if f.Name == KustomizationFile {
				continue
			}
			fmt.Fprintf(&b, "---\n# Source: %s/%s\n", t.Dir, f.Name)
			b.Write(f.Data)
		}
	}
	return b.Bytes()
}

// known records the offering usernames of an offering's users (Known).
func (res *Result) known(offering string, users []waldur.OfferingUser) {
	if res.Known == nil {
		res.Known = map[string]map[string]bool{}
	}
	names := map[string]bool{}
	for _, u := range users {
		if u.Username != "" {
			names[strings.ToLower(u.Username)] = true
		}
	}
	res.Known[offering] = names
}
