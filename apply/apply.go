package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/parallel"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// FieldManager is the field manager every apply is made as.
const FieldManager = "waldur-gitops"

// Stages of the change-set entries.
const (
	StageApply    = "apply"
	StageValidate = "validate"
)

// SurrogateNamespace is where a dry run validates a namespaced object whose
// own namespace does not exist yet because the same run would create it: the
// API server refuses even a dry run into a missing namespace.
const SurrogateNamespace = "default"

// Options control a run.
type Options struct {
	// Kubeconfig, when set, is the kubeconfig every offering and target uses,
	// replacing the kubeconfig keys of the config file (--kubeconfig).
	Kubeconfig string
	// DryRun sends every change with dryRun=All: the API server validates and
	// reports, and stores nothing (--dry-run=server).
	DryRun bool
	// ForceConflicts takes over fields another field manager owns instead of
	// reporting the conflict (--force-conflicts).
	ForceConflicts bool
	// Guard is the mass-deletion policy pruning is checked against.
	Guard guard.Options
	// Workers is the number of requests in flight per run (default 8).
	Workers int
	// QPS limits the requests per second to each cluster (default 100, with
	// bursts of twice that; negative: no client-side limit, the API server's
	// priority and fairness alone decides). A rate set in the kubeconfig wins.
	QPS float32
	// NamespaceWait bounds the wait for a namespace that objects live in but
	// that is neither rendered nor there yet, such as the backing namespace
	// Rancher creates for a new Project (default 30 s).
	NamespaceWait time.Duration
	// Log receives progress and API server warnings (default: discarded).
	Log *slog.Logger
	// Confirm, when set, is asked about the tenants pruning would remove
	// although no Terminate order explains it, per offering (config name):
	// keep maps the resources to leave alone to why (Waldur still has them,
	// or could not be asked), explained those Waldur reports terminated.
	Confirm func(ctx context.Context, offering string, ids []waldur.UUID) (keep map[waldur.UUID]string, explained map[string]string)
	// Explained maps the resources Waldur reports gone (listed Terminated)
	// to why: the guard lists their tenants' removal, it does not count it.
	Explained map[string]string
}

// Result is what a run did, or would do on a dry run.
type Result struct {
	// Changes has one entry per object, sorted.
	Changes changeset.Set
	// Calls counts API requests by kind: discovery, list, get (namespaces),
	// apply, create (dry-run validation in a surrogate namespace), delete.
	Calls map[string]int
}

// Apply server-side applies every rendered object of res and prunes what is no
// longer rendered. It returns the result even with an error; the error joins
// every failure (a missing kind, a rejected object, a conflict, a refused
// prune), and the tenants not named in it were applied.
func Apply(ctx context.Context, cfg *config.Config, res *render.Result, o Options) (*Result, error) {
	return newRun(cfg, res, o, StageApply).execute(ctx)
}

// ValidateServer dry-runs every rendered object of res on the API server, as
// sync --validate-server does before committing. Nothing is stored and nothing
// is pruned; conflicts with other field managers are ignored (the dry run
// forces), so only what the server rejects is an error. The result reports
// which objects would be created, updated or left unchanged.
func ValidateServer(ctx context.Context, cfg *config.Config, res *render.Result, o Options) (*Result, error) {
	o.DryRun, o.ForceConflicts = true, true
	return newRun(cfg, res, o, StageValidate).execute(ctx)
}

// run is one Apply or ValidateServer.
type run struct {
	o     Options
	stage string
	cfg   *config.Config
	res   *render.Result

	offerings map[string]*config.Offering // by config name
	byUUID    map[string]*config.Offering // by Waldur offering UUID
	clusters  map[source]*cluster
	units     []*unit

	mu      sync.Mutex
	calls   map[string]int
	changes changeset.Set
	errs    []error
}

// unit is every rendered object of one Waldur resource of one offering: the
// objects that are applied together or not at all (a Rancher tenant spans two
// clusters).
type unit struct {
	offering *config.Offering
	resource waldur.UUID
	dirs     []string
	items    []*item

	mu     sync.Mutex
	failed bool // some object failed: later tiers and pruning leave it alone
}

// item is one rendered object on its way to a cluster.
type item struct {
	unit    *unit
	tenant  *render.Tenant
	obj     manifest.Object
	key     objKey
	cl      *cluster
	mapping *meta.RESTMapping
	// deferred is set when the object's namespace is neither rendered nor there.
	deferred bool
}

func newRun(cfg *config.Config, res *render.Result, o Options, stage string) *run {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.NamespaceWait <= 0 {
		o.NamespaceWait = 30 * time.Second
	}
	r := &run{o: o, stage: stage, cfg: cfg, res: res,
		offerings: map[string]*config.Offering{}, byUUID: map[string]*config.Offering{},
		clusters: map[source]*cluster{}, calls: map[string]int{}}
	for i := range cfg.Offerings {
		off := &cfg.Offerings[i]
		r.offerings[off.Name] = off
		r.byUUID[normUUID(off.WaldurOfferingUUID)] = off
	}
	return r
}

func (r *run) count(kind string) {
	r.mu.Lock()
	r.calls[kind]++
	r.mu.Unlock()
}

func (r *run) report(e changeset.Entry, err error) {
	e.Stage = r.stage
	r.mu.Lock()
	r.changes.Add(e)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	r.mu.Unlock()
}

func (r *run) fail(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *run) result() (*Result, error) {
	r.changes.Sort()
	slices.SortStableFunc(r.errs, func(a, b error) int { return cmp.Compare(a.Error(), b.Error()) })
	return &Result{Changes: r.changes, Calls: r.calls}, errors.Join(r.errs...)
}

func (r *run) cluster(src source) *cluster {
	c, ok := r.clusters[src]
	if !ok {
		c = &cluster{src: src, inventory: map[objKey]*unstructured.Unstructured{}, desired: map[objKey]bool{},
			namespaces: map[string]bool{}, missing: map[string]bool{}, waits: map[string]*nsWait{}}
		r.clusters[src] = c
	}
	return c
}

func (r *run) execute(ctx context.Context) (*Result, error) {
	if err := r.plan(); err != nil {
		return &Result{Calls: r.calls}, err
	}
	r.connect()
	r.mapKinds()
	if err := r.takeInventory(ctx); err != nil {
		return r.result()
	}
	var prune []*candidate
	if r.stage == StageApply {
		var err error
		if prune, err = r.planPrune(ctx); err != nil {
			r.fail(err)
			return r.result()
		}
	}
	r.applyAll(ctx)
	if r.stage == StageApply {
		r.prune(ctx, prune)
	}
	return r.result()
}

// tenantTarget is the target directory level of a tenant: <offering>/<target>/<name>.
func tenantTarget(t *render.Tenant) string { return path.Base(path.Dir(t.Dir)) }

// plan groups the rendered objects into units and finds their clusters.
func (r *run) plan() error {
	byResource := map[string]*unit{}
	for _, t := range r.res.Tenants {
		off, ok := r.offerings[t.Offering]
		if !ok {
			return fmt.Errorf("tenant %s: offering %q is not in the config", t.Dir, t.Offering)
		}
		key := off.Name + "\x00" + string(t.Resource)
		u, ok := byResource[key]
		if !ok {
			u = &unit{offering: off, resource: t.Resource}
			byResource[key] = u
			r.units = append(r.units, u)
		}
		u.dirs = append(u.dirs, t.Dir)
		cl := r.cluster(r.o.sourceFor(off, tenantTarget(t)))
		for _, obj := range t.Objects {
			it := &item{unit: u, tenant: t, obj: obj, key: keyOfObject(obj), cl: cl}
			if cl.desired[it.key] {
				return fmt.Errorf("%s is rendered twice for cluster %s (again by %s)", it.key.subject(), cl.src, t.Dir)
			}
			cl.desired[it.key] = true
			if it.key.isNamespace() {
				cl.namespaces[it.key.name] = true
			}
			u.items = append(u.items, it)
		}
	}
	// Clusters that only hold objects to prune matter too.
	if r.stage == StageApply {
		for i := range r.cfg.Offerings {
			off := &r.cfg.Offerings[i]
			for _, t := range targetsOf(off.BackendType) {
				r.cluster(r.o.sourceFor(off, t))
			}
		}
	}
	return nil
}

// connect reaches every cluster, in parallel.
func (r *run) connect() {
	var wg sync.WaitGroup
	for _, c := range r.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.connect(r.o.QPS, r.o.Log, r.count)
			if c.err != nil {
				r.o.Log.Error("cluster unreachable", "cluster", c.name, "error", c.err.Error())
			} else {
				r.o.Log.Info("connected", "cluster", c.name)
			}
		}()
	}
	wg.Wait()
}

// mapKinds finds the API resource of every rendered object. A unit with an
// object of a kind its cluster does not serve, or on a cluster that cannot be
// reached, is skipped whole and reported.
func (r *run) mapKinds() {
	type missingKey struct {
		cl  *cluster
		gvk schema.GroupVersionKind
	}
	missing := map[missingKey][]string{}
	var order []missingKey
	unreachable := map[*cluster][]string{}
	for _, u := range r.units {
		var kinds []string
		why, cause := "", changeset.CauseApplyFailed
		for _, it := range u.items {
			if it.cl.err != nil {
				if !slices.Contains(unreachable[it.cl], it.tenant.Dir) {
					unreachable[it.cl] = append(unreachable[it.cl], it.tenant.Dir)
				}
				why, cause = "cluster unreachable: "+it.cl.err.Error(), changeset.CauseClusterUnreachable
				continue
			}
			gvk := schema.FromAPIVersionAndKind(it.obj.APIVersion(), it.obj.Kind())
			m, err := it.cl.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				k := missingKey{it.cl, gvk}
				if _, seen := missing[k]; !seen {
					order = append(order, k)
				}
				for _, d := range u.dirs {
					if !slices.Contains(missing[k], d) {
						missing[k] = append(missing[k], d)
					}
				}
				if !meta.IsNoMatchError(err) {
					why, cause = err.Error(), changeset.CauseApplyFailed
				} else if s := gvkString(gvk); !slices.Contains(kinds, s) {
					kinds = append(kinds, s)
				}
				continue
			}
			it.mapping = m
		}
		if len(kinds) > 0 {
			why, cause = "the cluster serves no "+strings.Join(kinds, ", ")+" (a CRD is missing)", changeset.CauseApplyFailed
		}
		if why == "" {
			continue
		}
		u.failed = true
		for _, it := range u.items {
			r.report(because(it.entry(changeset.Skip, "not applied: "+why), cause), nil)
		}
	}
	for _, k := range order {
		r.fail(&MissingKindError{Cluster: k.cl.name, GVK: k.gvk, Tenants: missing[k]})
	}
	for _, c := range r.clusters {
		switch dirs, ok := unreachable[c]; {
		case ok:
			r.fail(fmt.Errorf("%w; not applied: %s", c.err, strings.Join(dirs, ", ")))
		case c.err != nil:
			r.fail(fmt.Errorf("%w; nothing was pruned there", c.err))
		}
	}
}

// MissingKindError is a kind, usually a custom resource, that a cluster does not
// serve; the tenants needing it were not applied.
type MissingKindError struct {
	Cluster string
	GVK     schema.GroupVersionKind
	// Tenants are the directories of the tenants left alone.
	Tenants []string
}

func (e *MissingKindError) Error() string {
	return fmt.Sprintf("cluster %s serves no %s: %s; %d tenant(s) not applied: %s",
		e.Cluster, gvkString(e.GVK), crdHint(e.GVK), len(e.Tenants), strings.Join(e.Tenants, ", "))
}

func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.Kind + " (" + gvk.GroupVersion().String() + ")"
}

func crdHint(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" || !strings.Contains(gvk.Group, ".") {
		return "the API server does not serve this built-in version"
	}
	if crd := backend.CRDOf(gvk.GroupKind()); crd != "" {
		return "install the CustomResourceDefinition " + crd + " serving version " + gvk.Version
	}
	return "install the CustomResourceDefinition of " + gvk.Kind + " in group " + gvk.Group + " serving version " + gvk.Version
}

func (it *item) entry(a changeset.Action, reason string) changeset.Entry {
	e := changeset.Entry{Kind: it.key.kind, Subject: it.key.subject(), Action: a, Offering: it.unit.offering.Name,
		Resource: string(it.unit.resource), Reason: reason}
	for _, o := range it.tenant.Orders {
		e.Orders = append(e.Orders, string(o))
	}
	return e
}

// normUUID brings a UUID to the 32-hex form; a malformed one is kept as is.
func normUUID(s string) string {
	if u, err := waldur.ParseUUID(s); err == nil {
		return string(u)
	}
	return s
}

// takeInventory lists, on every reachable cluster, the managed objects of the
// kinds in play and keeps those of the configured offerings. A failed list
// fails the run: without the inventory neither the report nor pruning can be
// trusted.
func (r *run) takeInventory(ctx context.Context) error {
	type job struct {
		cl *cluster
		m  *meta.RESTMapping
	}
	var jobs []job
	for _, cl := range r.clusters {
		if cl.err != nil {
			continue
		}
		seen := map[schema.GroupVersionResource]bool{}
		add := func(m *meta.RESTMapping) {
			if !seen[m.Resource] {
				seen[m.Resource] = true
				jobs = append(jobs, job{cl, m})
			}
		}
		for _, u := range r.units {
			for _, it := range u.items {
				if it.cl == cl && it.mapping != nil {
					add(it.mapping)
				}
			}
		}
		if r.stage != StageApply {
			continue
		}
		for i := range r.cfg.Offerings {
			off := &r.cfg.Offerings[i]
			for target, kinds := range r.inventoryKinds(off) {
				if r.clusters[r.o.sourceFor(off, target)] != cl {
					continue
				}
				for _, gvk := range kinds {
					// A kind the cluster does not serve has nothing to prune.
					if m, err := cl.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
						add(m)
					}
				}
			}
		}
	}
	var failed []error
	parallel.For(len(jobs), r.o.Workers, func(i int) {
		j := jobs[i]
		items, err := j.cl.list(ctx, j.m, r.count)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			failed = append(failed, fmt.Errorf("cluster %s: list %s: %w", j.cl.name, j.m.Resource.String(), err))
			return
		}
		for k := range items {
			u := &items[k]
			if _, ours := r.byUUID[normUUID(u.GetAnnotations()[manifest.AnnotationOffering])]; !ours {
				continue // another offering's, or another installation's
			}
			j.cl.inventory[keyOfUnstructured(u)] = u
		}
	})
	if err := ctx.Err(); err != nil {
		failed = append(failed, err)
	}
	if len(failed) > 0 {
		r.fail(fmt.Errorf("reading what is in the cluster failed, nothing was changed: %w", errors.Join(failed...)))
		return errors.Join(failed...)
	}
	return nil
}

// candidate is an inventoried object that is no longer rendered.
type candidate struct {
	cl       *cluster
	obj      *unstructured.Unstructured
	key      objKey
	mapping  *meta.RESTMapping
	offering *config.Offering
	resource waldur.UUID
}

func (c *candidate) entry(a changeset.Action, reason string, orders []waldur.UUID) changeset.Entry {
	e := changeset.Entry{Kind: c.key.kind, Subject: c.key.subject(), Action: a, Offering: c.offering.Name,
		Resource: string(c.resource), Reason: reason}
	for _, o := range orders {
		e.Orders = append(e.Orders, string(o))
	}
	return e
}

// tenantKeyT is a tenant of the cluster inventory: an offering's resource.
type tenantKeyT struct {
	offering string
	resource waldur.UUID
}

// planPrune finds what pruning would delete and checks it against the
// mass-deletion guard, counting tenants: a tenant is removed when it has
// objects to prune and nothing rendered any more.
func (r *run) planPrune(ctx context.Context) ([]*candidate, error) {
	type tenantKey = tenantKeyT
	rendered := map[tenantKey]bool{}
	for _, u := range r.units {
		rendered[tenantKey{u.offering.Name, u.resource}] = true
	}
	scopes := map[tenantKey]map[string]bool{} // the offering and clusters of each tenant in place
	removed := map[tenantKey][]*candidate{}
	var out []*candidate
	for _, cl := range r.clusters {
		for key, obj := range cl.inventory {
			off := r.byUUID[normUUID(obj.GetAnnotations()[manifest.AnnotationOffering])]
			c := &candidate{cl: cl, obj: obj, key: key, offering: off, resource: waldur.UUID(normUUID(obj.GetLabels()[manifest.LabelResourceUUID]))}
			tk := tenantKey{off.Name, c.resource}
			if scopes[tk] == nil {
				scopes[tk] = map[string]bool{}
			}
			scopes[tk]["offering "+off.Name], scopes[tk]["cluster "+cl.name] = true, true
			switch {
			case cl.desired[key]:
				continue
			case obj.GetDeletionTimestamp() != nil:
				continue // already on its way out
			}
			if why, skipped := r.res.Skipped[c.resource]; skipped {
				r.report(because(c.entry(changeset.Skip, "kept: the renderer skipped its resource: "+why, nil), changeset.CauseRemovalKept), nil)
				continue
			}
			if why, kept := r.res.Kept[c.resource]; kept {
				r.report(because(c.entry(changeset.Unchanged, "kept as it is: "+why, nil), changeset.CauseKept), nil)
				continue
			}
			if why, unread := r.res.Unread[off.Name]; unread {
				r.report(because(c.entry(changeset.Unchanged, "kept as it is: offering "+off.Name+" was not read: "+why, nil), changeset.CauseOfferingUnread), nil)
				continue
			}
			gvk := obj.GroupVersionKind()
			m, err := cl.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				r.report(because(c.entry(changeset.Skip, "kept: "+err.Error(), nil), changeset.CauseRemovalKept), nil)
				continue
			}
			c.mapping = m
			out = append(out, c)
			if !rendered[tk] {
				removed[tk] = append(removed[tk], c)
			}
		}
	}
	explained := maps.Clone(r.o.Explained)
	if r.o.Confirm != nil {
		keep, sure := r.confirmRemovals(ctx, removed)
		if explained == nil {
			explained = map[string]string{}
		}
		maps.Copy(explained, sure)
		out = slices.DeleteFunc(out, func(c *candidate) bool {
			why, kept := keep[c.resource]
			if kept {
				r.report(because(c.entry(changeset.Skip, "kept: "+why, nil), changeset.CauseRemovalKept), nil)
				delete(removed, tenantKey{c.offering.Name, c.resource})
			}
			return kept
		})
	}
	if err := r.guardTenants(removed, scopes, explained); err != nil {
		return nil, err
	}
	if err := guard.CheckAccess(guard.Access, r.clusterGrants(), r.renderedGrants(), r.o.Guard); err != nil {
		return nil, err
	}
	return out, nil
}

// guardTenants asks the guard about the tenants pruning removes, counted in
// the site, and in each offering and cluster on its own: one offering
// answering an empty list cannot lose its tenants as a small share. scopes
// holds the offering and clusters of every tenant in place.
func (r *run) guardTenants(removed map[tenantKeyT][]*candidate, scopes map[tenantKeyT]map[string]bool, explained map[string]string) error {
	var tenants changeset.Set
	entryScopes := map[string][]string{}
	for tk, cs := range removed {
		e := changeset.Entry{Stage: r.stage, Kind: "Tenant", Action: changeset.Delete, Offering: tk.offering,
			Subject: tk.offering + "/" + tenantName(cs), Resource: string(tk.resource)}
		for _, o := range r.res.Terminations[tk.resource] {
			e.Orders = append(e.Orders, string(o))
		}
		tenants.Add(e)
		entryScopes[e.Subject] = slices.Sorted(maps.Keys(scopes[tk]))
	}
	tenants.Sort()
	in := guard.Site(len(scopes))
	for _, sc := range scopes {
		for s := range sc {
			in[s]++
		}
	}
	scopeOf := func(e changeset.Entry) []string { return entryScopes[e.Subject] }
	return guard.Check(guard.Tenants, guard.TenantRemovals(guard.Tenants, tenants, explained, scopeOf), in, r.o.Guard)
}

// renderedGrants is who the rendered objects give access to which tenant,
// each tenant rendered in place even when it grants nothing.
func (r *run) renderedGrants() guard.Grants {
	g := guard.Grants{}
	for _, u := range r.units {
		t := u.offering.Name + "/" + string(u.resource)
		g.Tenant(t)
		for _, it := range u.items {
			for _, s := range grants(schema.FromAPIVersionAndKind(it.obj.APIVersion(), it.obj.Kind()).GroupKind(), it.obj) {
				g.Add(t, s)
			}
		}
	}
	return g
}

// clusterGrants is who the objects in the clusters give access to which
// tenant.
func (r *run) clusterGrants() guard.Grants {
	g := guard.Grants{}
	for _, cl := range r.clusters {
		for _, obj := range cl.inventory {
			off := r.byUUID[normUUID(obj.GetAnnotations()[manifest.AnnotationOffering])]
			t := off.Name + "/" + normUUID(obj.GetLabels()[manifest.LabelResourceUUID])
			g.Tenant(t)
			for _, s := range grants(obj.GroupVersionKind().GroupKind(), obj.Object) {
				g.Add(t, s)
			}
		}
	}
	return g
}

// grants lists whom an object gives access, where the registration of the
// backend that describes its kind says (backend.Access): the subjects of a
// RoleBinding or ClusterRoleBinding (a user by name, others as kind:name),
// the users of a ManagedNamespace.
func grants(gk schema.GroupKind, obj map[string]any) []string {
	a := backend.AccessOf(gk)
	if a == nil {
		return nil
	}
	var out []string
	for _, path := range a.Subjects {
		subjects, _, _ := unstructured.NestedSlice(obj, path...)
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			k, _ := m["kind"].(string)
			n, _ := m["name"].(string)
			if k != "User" && k != "" {
				n = k + ":" + n
			}
			out = append(out, n)
		}
	}
	for _, path := range a.Users {
		users, _, _ := unstructured.NestedStringSlice(obj, path...)
		out = append(out, users...)
	}
	return out
}

// confirmRemovals asks Options.Confirm about every tenant pruning would
// remove although no Terminate order explains it, offering by offering:
// keep holds those to leave alone, explained those Waldur reports terminated.
func (r *run) confirmRemovals(ctx context.Context, removed map[tenantKeyT][]*candidate) (keep map[waldur.UUID]string, explained map[string]string) {
	byOffering := map[string][]waldur.UUID{}
	for tk := range removed {
		if len(r.res.Terminations[tk.resource]) == 0 {
			byOffering[tk.offering] = append(byOffering[tk.offering], tk.resource)
		}
	}
	keep, explained = map[waldur.UUID]string{}, map[string]string{}
	for _, off := range slices.Sorted(maps.Keys(byOffering)) {
		ids := byOffering[off]
		slices.Sort(ids)
		k, e := r.o.Confirm(ctx, off, ids)
		maps.Copy(keep, k)
		maps.Copy(explained, e)
	}
	return keep, explained
}

// tenantName names a removed tenant in messages: its Namespace, else the first
// of its objects.
func tenantName(cs []*candidate) string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.key.isNamespace() || c.key.kind == "ManagedNamespace" {
			return c.key.name
		}
		names = append(names, c.key.subject())
	}
	slices.Sort(names)
	return names[0]
}

// tier orders objects for applying: what others live in or refer to first.
func tier(it *item) int {
	switch {
	case it.key.isNamespace():
		return 0
	case it.mapping.Scope.Name() != meta.RESTScopeNameNamespace:
		return 1
	case it.key.group == "" && slices.Contains([]string{"ResourceQuota", "LimitRange", "ServiceAccount"}, it.key.kind),
		it.key.group == "rbac.authorization.k8s.io" && it.key.kind == "Role":
		return 2
	}
	return 3
}

// applyAll applies the items of every unit that is still whole, tier by tier;
// within a tier, in parallel. Objects in a namespace that neither exists nor
// is rendered come last: a controller creates such namespaces (Rancher makes a
// project's backing namespace once the Project exists), so they are waited for.
func (r *run) applyAll(ctx context.Context) {
	r.findMissingNamespaces(ctx)
	tiers := make([][]*item, 5)
	for _, u := range r.units {
		if u.failed {
			continue
		}
		for _, it := range u.items {
			t := tier(it)
			if it.obj.Namespace() != "" && it.cl.missing[it.obj.Namespace()] {
				it.deferred = true
				t = 4
			}
			tiers[t] = append(tiers[t], it)
		}
	}
	for _, items := range tiers {
		parallel.For(len(items), r.o.Workers, func(i int) { r.applyOne(ctx, items[i]) })
	}
	if err := ctx.Err(); err != nil {
		r.fail(err)
	}
}

// findMissingNamespaces checks which namespaces that objects live in, but this
// run does not render, are missing.
func (r *run) findMissingNamespaces(ctx context.Context) {
	type job struct {
		cl *cluster
		ns string
	}
	var jobs []job
	for _, u := range r.units {
		if u.failed {
			continue
		}
		for _, it := range u.items {
			ns := it.obj.Namespace()
			if ns == "" || it.cl.namespaces[ns] {
				continue
			}
			if _, seen := it.cl.missing[ns]; !seen {
				it.cl.missing[ns] = false
				jobs = append(jobs, job{it.cl, ns})
			}
		}
	}
	parallel.For(len(jobs), r.o.Workers, func(i int) {
		j := jobs[i]
		r.count("get")
		exists, err := j.cl.namespaceExists(ctx, j.ns)
		if err != nil {
			// Let the apply itself report what is wrong.
			r.o.Log.Warn("could not check a namespace", "cluster", j.cl.name, "namespace", j.ns, "error", err.Error())
			return
		}
		if !exists {
			r.mu.Lock()
			j.cl.missing[j.ns] = true
			r.mu.Unlock()
		}
	})
}

func (r *run) applyOne(ctx context.Context, it *item) {
	u := it.unit
	u.mu.Lock()
	failed := u.failed
	u.mu.Unlock()
	if failed && r.stage == StageApply {
		// Validation goes on, to report every object the server rejects.
		r.report(because(it.entry(changeset.Skip, "not applied: an earlier object of the tenant failed"), changeset.CauseApplyFailed), nil)
		return
	}
	if ctx.Err() != nil {
		r.report(because(it.entry(changeset.Skip, "not applied: "+ctx.Err().Error()), changeset.CauseApplyFailed), nil)
		return
	}
	ns := it.obj.Namespace()
	if it.deferred && !r.o.DryRun {
		if err := r.waitNamespace(ctx, it.cl, ns); err != nil {
			r.failItem(it, err)
			return
		}
	}
	before := it.cl.inventory[it.key]
	if r.stage == StageApply && before != nil && upToDate(it.obj, before, !strings.Contains(it.key.group, ".")) {
		r.report(it.entry(changeset.Unchanged, ""), nil)
		return
	}
	var code int
	var after *unstructured.Unstructured
	var err error
	if !it.deferred || !r.o.DryRun {
		r.count("apply")
		code, after, err = it.cl.serverApply(ctx, it.mapping, it.obj, r.o.DryRun, r.o.ForceConflicts)
	}
	if r.o.DryRun && ns != "" && (it.deferred || (err != nil && it.cl.namespaces[ns] && isNamespaceNotFound(err, ns))) {
		// The namespace does not exist yet, and a dry run cannot create it:
		// validate the object as a new one in a namespace that exists.
		r.count("create")
		_, _, err = it.cl.dryRunCreate(ctx, it.mapping, it.obj, SurrogateNamespace)
		if err == nil || apierrors.IsAlreadyExists(err) {
			// Valid (an object of that name in the surrogate namespace only
			// shows that validation passed before the store refused it).
			if it.deferred {
				r.o.Log.Warn("namespace does not exist yet: validated in "+SurrogateNamespace, "object", it.key.subject())
			}
			r.report(it.entry(changeset.Create, ""), nil)
			return
		}
	}
	if err != nil {
		r.failItem(it, err)
		return
	}
	switch {
	case code == 201:
		r.report(it.entry(changeset.Create, ""), nil)
	case before != nil && sameObject(before, after, r.o.DryRun):
		r.report(it.entry(changeset.Unchanged, ""), nil)
	default:
		r.report(it.entry(changeset.Update, ""), nil)
	}
}

// failItem reports an object the server refused and marks its unit failed.
func (r *run) failItem(it *item, err error) {
	it.unit.mu.Lock()
	it.unit.failed = true
	it.unit.mu.Unlock()
	oe := &ObjectError{Subject: it.key.subject(), Tenant: it.tenant.Dir, Cluster: it.cl.name, Conflict: apierrors.IsConflict(err), Err: err}
	r.report(because(it.entry(changeset.Skip, oe.reason()), oe.cause()), oe)
}

// waitNamespace waits, once per namespace and run, for a namespace that a
// controller is expected to create.
func (r *run) waitNamespace(ctx context.Context, cl *cluster, ns string) error {
	r.mu.Lock()
	w, ok := cl.waits[ns]
	if !ok {
		w = &nsWait{done: make(chan struct{})}
		cl.waits[ns] = w
	}
	r.mu.Unlock()
	if !ok {
		go func() {
			defer close(w.done)
			w.err = cl.waitNamespace(ctx, ns, r.o.NamespaceWait, r.count)
		}()
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isNamespaceNotFound reports whether err is the API server refusing an object
// because its namespace ns does not exist.
func isNamespaceNotFound(err error, ns string) bool {
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == ns
}

// ObjectError is an object the API server refused.
type ObjectError struct {
	Subject string
	Tenant  string
	Cluster string
	// Conflict is set when another field manager owns fields this object sets.
	Conflict bool
	Err      error
}

func (e *ObjectError) reason() string {
	if e.Conflict {
		return "field-manager conflict, not forced: " + apiMessage(e.Err) + " (rerun with --force-conflicts to take the fields over)"
	}
	var se apierrors.APIStatus
	if !errors.As(e.Err, &se) {
		return "not applied: " + e.Err.Error()
	}
	return "rejected: " + apiMessage(e.Err)
}

// cause is the cause of the skip entry reason writes.
func (e *ObjectError) cause() changeset.Cause {
	var se apierrors.APIStatus
	switch {
	case e.Conflict:
		return changeset.CauseFieldConflict
	case !errors.As(e.Err, &se):
		return changeset.CauseApplyFailed
	}
	return changeset.CauseRejected
}

// because sets the cause of e.
func because(e changeset.Entry, c changeset.Cause) changeset.Entry {
	e.Cause = c
	return e
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("%s (tenant %s, cluster %s): %s", e.Subject, e.Tenant, e.Cluster, e.reason())
}

func (e *ObjectError) Unwrap() error { return e.Err }

func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}

// sameObject reports whether an apply left the object as it was. Without a dry
// run the resource version tells: the API server writes nothing, and keeps the
// version, when an apply changes nothing. A dry run returns the object it would
// have stored, so its content is compared, leaving out what the server
// maintains (versions, managed fields, status).
func sameObject(before, after *unstructured.Unstructured, dryRun bool) bool {
	if after == nil {
		return false
	}
	if !dryRun {
		return before.GetResourceVersion() == after.GetResourceVersion()
	}
	return equalContent(before.Object, after.Object)
}

func equalContent(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		c := maps.Clone(m)
		delete(c, "status")
		if md, ok := c["metadata"].(map[string]any); ok {
			md = maps.Clone(md)
			for _, k := range []string{"resourceVersion", "generation", "managedFields"} {
				delete(md, k)
			}
			c["metadata"] = md
		}
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// prune deletes the candidates of units that did not fail: namespaced objects
// first, then cluster-scoped ones, Namespaces last.
func (r *run) prune(ctx context.Context, cands []*candidate) {
	failed := map[string]bool{}
	for _, u := range r.units {
		if u.failed {
			failed[u.offering.Name+"\x00"+string(u.resource)] = true
		}
	}
	phases := make([][]*candidate, 3)
	for _, c := range cands {
		if failed[c.offering.Name+"\x00"+string(c.resource)] {
			r.report(because(c.entry(changeset.Skip, "kept: the tenant failed to apply", nil), changeset.CauseRemovalKept), nil)
			continue
		}
		p := 0
		switch {
		case c.key.isNamespace():
			p = 2
		case c.mapping.Scope.Name() != meta.RESTScopeNameNamespace:
			p = 1
		}
		phases[p] = append(phases[p], c)
	}
	for _, cs := range phases {
		slices.SortFunc(cs, func(a, b *candidate) int { return cmp.Compare(a.key.subject(), b.key.subject()) })
		parallel.For(len(cs), r.o.Workers, func(i int) {
			c := cs[i]
			orders := r.res.Terminations[c.resource]
			if ctx.Err() != nil {
				r.report(because(c.entry(changeset.Skip, "not deleted: "+ctx.Err().Error(), orders), changeset.CauseApplyFailed), nil)
				return
			}
			r.count("delete")
			err := c.cl.remove(ctx, c.mapping, c.obj, r.o.DryRun)
			switch {
			case err == nil, apierrors.IsNotFound(err):
				r.report(c.entry(changeset.Delete, "", orders), nil)
			default:
				oe := &ObjectError{Subject: c.key.subject(), Tenant: c.offering.Name + " resource " + string(c.resource), Cluster: c.cl.name, Err: err}
				r.report(because(c.entry(changeset.Skip, "not deleted: "+apiMessage(err), orders), changeset.CauseApplyFailed), oe)
			}
		})
	}
}
