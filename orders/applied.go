package orders

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Cluster is what the applied check reads; *kube.Reader implements it.
type Cluster interface {
	Namespace(ctx context.Context, name string) (*kube.Namespace, error)
	Namespaces(ctx context.Context, selector string) ([]kube.Namespace, error)
	Quotas(ctx context.Context, namespace string) ([]kube.Quota, error)
}

var _ Cluster = (*kube.Reader)(nil)

// FluxCluster is a Cluster that also reads Flux Kustomizations;
// *kube.Reader implements it.
type FluxCluster interface {
	Cluster
	FluxApplied(ctx context.Context, namespace, name string) (revision string, found bool, err error)
}

var _ FluxCluster = (*kube.Reader)(nil)

// Flux makes the applied check wait for the consumer too: an order is done
// only once the Flux shard Kustomization of its tenant reports Revision as
// its status.lastAppliedRevision, besides the objects looking right.
type Flux struct {
	// Layout is the shard layout of the pushed tree (gitsync.LayoutFor).
	Layout gitsync.FluxLayout
	// Revision is the pushed tree's revision as Flux names it,
	// "<branch>@sha1:<commit>".
	Revision string
	// Revisions, in the OCI layout, maps each shard Kustomization to the
	// revision of its own artifact ("latest@sha256:…"), which it applies
	// instead of Revision.
	Revisions map[string]string
}

// FluxShard is one shard Kustomization an expectation waits for.
type FluxShard struct {
	Namespace, Name string
	// Revision is the revision it must have applied.
	Revision string
}

// Expectation is what the cluster shows once an order's effect is applied.
type Expectation struct {
	// Namespace is the tenant's namespace ("" when unknown: only for Gone).
	Namespace string
	// Resource is the Waldur resource; for Gone, no namespace may carry its
	// waldur.io/resource-uuid label either.
	Resource waldur.UUID
	// Gone: the namespace must not exist, or be terminating.
	Gone bool
	// Quotas must be in force in the namespace.
	Quotas []ExpectedQuota
	// Flux lists the shard Kustomizations (one per target of the tenant) that
	// must have applied the pushed revision; empty without Flux.
	Flux []FluxShard
	// Argo lists the tenant's directories whose Argo CD Application must be
	// Synced at the pushed commit and Healthy, or, in the per-shard form,
	// the shard branches whose Application must be Synced at their tip (for
	// Gone too); empty without Argo CD.
	Argo []Target

	tenant string   // the tenant's directory name
	dirs   []string // the tenant's directories (render.Tenant.Dir)
	argo   *ArgoCD  // where Argo's Applications are, for Argo
}

// ExpectedQuota is a rendered quota.
type ExpectedQuota struct {
	// Name of the ResourceQuota; "" for a quota handed to an operator (the
	// k8s-ut-namespace ManagedNamespace), which any ResourceQuota of the
	// namespace may carry, under the key as given or prefixed with requests.
	// or limits.
	Name string
	Hard map[string]string
}

// expectation derives the applied state of rendered tenants: their namespace
// and every ResourceQuota (or ManagedNamespace quota) rendered for them.
func expectation(ts []*render.Tenant) *Expectation {
	e := &Expectation{Namespace: ts[0].Name, Resource: ts[0].Resource, tenant: path.Base(ts[0].Dir)}
	for _, t := range ts {
		e.dirs = append(e.dirs, t.Dir)
		for _, obj := range t.Objects {
			switch obj.Kind() {
			case "ResourceQuota":
				e.Quotas = append(e.Quotas, ExpectedQuota{Name: obj.Name(), Hard: stringMap(obj, "spec", "hard")})
			case "ManagedNamespace":
				if q := stringMap(obj, "spec", "quota"); len(q) > 0 {
					e.Quotas = append(e.Quotas, ExpectedQuota{Hard: q})
				}
			}
		}
	}
	return e
}

func stringMap(obj manifest.Object, fields ...string) map[string]string {
	var cur any = map[string]any(obj)
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[f]
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// Applied reports whether the cluster shows the expectation; detail says what
// is missing when it does not.
func Applied(ctx context.Context, c Cluster, e *Expectation) (ok bool, detail string, err error) {
	return appliedIn(ctx, c, e, nil)
}

// appliedIn is Applied within a polling round whose Argo CD lists argo
// holds (nil: list for this call alone).
func appliedIn(ctx context.Context, c Cluster, e *Expectation, argo *argoLists) (ok bool, detail string, err error) {
	if e == nil {
		return true, "", nil
	}
	if e.Gone {
		if ok, detail, err := gone(ctx, c, e); !ok || err != nil {
			return ok, detail, err
		}
		return argoApplied(ctx, c, e, argo)
	}
	ns, err := c.Namespace(ctx, e.Namespace)
	switch {
	case err != nil:
		return false, "", err
	case ns == nil:
		return false, "namespace " + e.Namespace + " does not exist yet", nil
	case ns.Terminating:
		return false, "namespace " + e.Namespace + " is terminating", nil
	}
	if len(e.Quotas) == 0 {
		return true, "", nil
	}
	have, err := c.Quotas(ctx, e.Namespace)
	if err != nil {
		return false, "", err
	}
	for _, want := range e.Quotas {
		if miss := quotaMismatch(want, have); miss != "" {
			return false, "namespace " + e.Namespace + ": " + miss, nil
		}
	}
	if ok, detail, err := fluxApplied(ctx, c, e.Flux); !ok || err != nil {
		return ok, detail, err
	}
	return argoApplied(ctx, c, e, argo)
}

// argoApplied reports whether the tenant's Argo CD Applications show every
// target applied.
func argoApplied(ctx context.Context, c Cluster, e *Expectation, lists *argoLists) (bool, string, error) {
	if len(e.Argo) == 0 || e.argo == nil {
		return true, "", nil
	}
	apps, ok := c.(ArgoApplications)
	if !ok {
		return false, "the cluster reader cannot read Argo CD Applications", nil
	}
	if lists == nil {
		lists = listOnce(apps)
	}
	a := *e.argo
	a.Apps = lists
	for _, t := range e.Argo {
		if ok, detail, err := a.AppliedAt(ctx, t); !ok || err != nil {
			return ok, detail, err
		}
	}
	return true, "", nil
}

// fluxApplied reports whether every shard has applied its revision.
func fluxApplied(ctx context.Context, c Cluster, shards []FluxShard) (bool, string, error) {
	if len(shards) == 0 {
		return true, "", nil
	}
	fc, ok := c.(FluxCluster)
	if !ok {
		return false, "the cluster reader cannot read Flux Kustomizations", nil
	}
	for _, sh := range shards {
		rev, found, err := fc.FluxApplied(ctx, sh.Namespace, sh.Name)
		switch {
		case err != nil:
			return false, "", err
		case !found:
			return false, "Flux Kustomization " + sh.Namespace + "/" + sh.Name + " does not exist", nil
		case rev != sh.Revision:
			if rev == "" {
				rev = "nothing"
			}
			return false, "Flux Kustomization " + sh.Namespace + "/" + sh.Name + " has applied " + rev + ", not yet " + sh.Revision, nil
		}
	}
	return true, "", nil
}

// expectFlux adds to every Done order of an offering with order_done_on:
// applied (not a termination: the namespace being gone proves the prune) the
// shard Kustomizations of its tenant in the pushed tree (of its part, for a
// shard in parts), at the revision of the shard's source.
func (f *Flux) expect(plan []Executing, pushed render.Tree) {
	if f == nil || f.Layout.Shards <= 0 {
		return
	}
	placed := gitsync.Placement(pushed, f.Layout.Generation)
	parts := gitsync.PartsOf(pushed, f.Layout.Generation)
	ns := f.Layout.Namespace
	if ns == "" {
		ns = gitsync.DefaultFluxNamespace
	}
	for i := range plan {
		e := &plan[i]
		if e.Outcome != Done || e.Expect == nil || e.Expect.Gone || e.Offering.DoneOn != config.DoneOnApplied {
			continue
		}
		for _, tg := range f.Layout.Targets {
			if tg.Offering != e.Offering.Dir {
				continue
			}
			if shard, ok := placed[tg.Offering+"/"+tg.Target][e.Expect.tenant]; ok {
				// The part's Kustomization builds from its shard's source.
				name := f.Layout.PartName(tg, shard, gitsync.PartOf(e.Expect.tenant, parts), parts)
				rev := f.Revision
				if r, ok := f.Revisions[f.Layout.ShardName(tg, shard)]; ok {
					rev = r
				}
				e.Expect.Flux = append(e.Expect.Flux, FluxShard{Namespace: ns, Name: name, Revision: rev})
			}
		}
	}
}

func gone(ctx context.Context, c Cluster, e *Expectation) (bool, string, error) {
	if e.Namespace != "" {
		ns, err := c.Namespace(ctx, e.Namespace)
		if err != nil {
			return false, "", err
		}
		if ns != nil && !ns.Terminating {
			return false, "namespace " + e.Namespace + " still exists", nil
		}
	}
	list, err := c.Namespaces(ctx, manifest.LabelResourceUUID+"="+string(e.Resource))
	if err != nil {
		return false, "", err
	}
	for _, ns := range list {
		if !ns.Terminating {
			return false, "namespace " + ns.Name + " of the resource still exists", nil
		}
	}
	return true, "", nil
}

// quotaMismatch says how the quotas of a namespace miss a rendered one; "" when
// one of them holds it.
func quotaMismatch(want ExpectedQuota, have []kube.Quota) string {
	if want.Name != "" {
		i := slices.IndexFunc(have, func(q kube.Quota) bool { return q.Name == want.Name })
		if i < 0 {
			return "resourcequota " + want.Name + " does not exist yet"
		}
		if d := hardDiff(want.Hard, have[i].Hard, false); d != "" {
			return "resourcequota " + want.Name + ": " + d
		}
		return ""
	}
	best := "no resourcequota"
	for _, q := range have {
		d := hardDiff(want.Hard, q.Hard, true)
		if d == "" {
			return ""
		}
		best = "resourcequota " + q.Name + ": " + d
	}
	return best
}

// hardDiff compares rendered quota values with a quota's spec.hard by quantity;
// loose also accepts the key under a requests. or limits. prefix.
func hardDiff(want map[string]string, hard map[string]resource.Quantity, loose bool) string {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var diffs []string
	for _, k := range keys {
		w, err := resource.ParseQuantity(want[k])
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: rendered value %q is not a quantity", k, want[k]))
			continue
		}
		candidates := []string{k}
		if loose {
			candidates = append(candidates, "requests."+k, "limits."+k)
		}
		found := false
		for _, ck := range candidates {
			if got, ok := hard[ck]; ok && got.Cmp(w) == 0 {
				found = true
				break
			}
		}
		if !found {
			got := k + " is unset"
			for _, ck := range candidates {
				if q, ok := hard[ck]; ok {
					got = ck + " is " + q.String()
					break
				}
			}
			diffs = append(diffs, fmt.Sprintf("%s, want %s", got, want[k]))
		}
	}
	return strings.Join(diffs, ", ")
}
