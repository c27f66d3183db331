package apply_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/waldur"
)

// Edits of the example state the scenarios combine.
type edit func(t testing.TB, st *waldur.State)

// setCPU sets a resource's cpu limit.
func setCPU(name string, cpu waldur.Amount) edit {
	return func(t testing.TB, st *waldur.State) {
		_, r := resourceNamed(t, st, name)
		r.Limits["cpu"] = cpu
	}
}

// terminate puts a resource into Terminating with an executing Terminate order.
func terminate(name string, order waldur.UUID) edit {
	return func(t testing.TB, st *waldur.State) {
		o, r := resourceNamed(t, st, name)
		r.State = waldur.ResourceTerminating
		o.Orders = append(o.Orders, waldur.Order{UUID: order, Type: waldur.OrderTerminate, State: waldur.OrderExecuting,
			MarketplaceResourceUUID: r.UUID, Created: time.Date(2026, 11, 20, 5, 0, 0, 0, time.UTC)})
	}
}

// remove drops a resource from the state, as a partial Waldur answer would.
func remove(name string) edit {
	return func(t testing.TB, st *waldur.State) {
		o, r := resourceNamed(t, st, name)
		o.Resources = slices.DeleteFunc(o.Resources, func(x waldur.Resource) bool { return x.UUID == r.UUID })
	}
}

const terminateOrder = waldur.UUID("7e57000000000000000000000000000a")

// The life of the example tenants in one cluster, step by step: every step
// renders the example state with its edits and applies it (the cluster keeps
// what the steps before did).
func TestApplyLifecycle(t *testing.T) {
	c := startCluster(t, []string{crdManagedNamespace, crdRancher})
	cfg, st := loadExample(t)
	c.prepareNamespaces(renderState(t, cfg.Config, st))
	admin := c.KubeconfigPath(kubetest.Admin)
	const (
		genomeQuota = "ResourceQuota/tenant-genome-portal/waldur-quota"
		mlQuota     = "ResourceQuota/tenant-ml-inference/waldur-quota"
	)
	genomeObjects := []string{
		"Namespace/tenant-genome-portal", genomeQuota,
		"LimitRange/tenant-genome-portal/waldur-container-defaults",
		"NetworkPolicy/tenant-genome-portal/default-deny-ingress",
		"RoleBinding/tenant-genome-portal/waldur-admin",
		"RoleBinding/tenant-genome-portal/waldur-readonly",
		"RoleBinding/tenant-genome-portal/waldur-readwrite",
	}
	allOf := func(a changeset.Action, subjects ...string) map[string]changeset.Action {
		m := map[string]changeset.Action{}
		for _, s := range subjects {
			m[s] = a
		}
		return m
	}
	var quotaRV string

	steps := []struct {
		name    string
		edits   []edit
		before  func(t *testing.T)
		opts    apply.Options
		want    map[string]changeset.Action
		others  changeset.Action // the action of every entry not in want
		wantErr func(t *testing.T, err error)
		check   func(t *testing.T, res *apply.Result)
	}{
		{
			name:   "first apply creates every object",
			others: changeset.Create,
			check: func(t *testing.T, res *apply.Result) {
				ns := c.get(gvrNamespace, "", "tenant-genome-portal")
				if ns == nil || ns.GetLabels()["app.kubernetes.io/managed-by"] != "waldur-gitops" {
					t.Fatalf("namespace missing or unlabelled: %v", ns)
				}
				if mf := ns.GetManagedFields(); len(mf) == 0 || mf[0].Manager != apply.FieldManager || mf[0].Operation != "Apply" {
					t.Errorf("managed fields %+v, want an Apply by %s", mf, apply.FieldManager)
				}
				if c.get(gvrManagedNS, "waldur-system", "waldur-genomics-pipeline") == nil || c.get(gvrProject, "c-m-4xk2p9q7", "p-7hd2k") == nil {
					t.Error("custom resources missing")
				}
				if res.Calls["apply"] != len(res.Changes.Entries) {
					t.Errorf("%d apply calls for %d objects", res.Calls["apply"], len(res.Changes.Entries))
				}
			},
		},
		{
			name:   "re-apply reports everything unchanged",
			others: changeset.Unchanged,
			check: func(t *testing.T, res *apply.Result) {
				if res.Calls["delete"] != 0 || res.Calls["create"] != 0 {
					t.Errorf("calls %v", res.Calls)
				}
			},
		},
		{
			name:   "a quota update configures the one quota",
			edits:  []edit{setCPU("Genome portal", "6")},
			want:   allOf(changeset.Update, genomeQuota),
			others: changeset.Unchanged,
			check: func(t *testing.T, _ *apply.Result) {
				q := c.get(gvrQuota, "tenant-genome-portal", "waldur-quota")
				if got, _, _ := unstructured.NestedString(q.Object, "spec", "hard", "limits.cpu"); got != "6" {
					t.Errorf("limits.cpu = %q, want 6", got)
				}
				quotaRV = q.GetResourceVersion()
			},
		},
		{
			name:   "a server dry run reports the change and stores nothing",
			edits:  []edit{setCPU("Genome portal", "12")},
			opts:   apply.Options{DryRun: true},
			want:   allOf(changeset.Update, genomeQuota),
			others: changeset.Unchanged,
			check: func(t *testing.T, _ *apply.Result) {
				q := c.get(gvrQuota, "tenant-genome-portal", "waldur-quota")
				got, _, _ := unstructured.NestedString(q.Object, "spec", "hard", "limits.cpu")
				if got != "6" || q.GetResourceVersion() != quotaRV {
					t.Errorf("the dry run changed the quota: limits.cpu %q, version %s (was %s)", got, q.GetResourceVersion(), quotaRV)
				}
			},
		},
		{
			name:  "a field another manager owns is a conflict, reported and not forced",
			edits: []edit{setCPU("Genome portal", "6")},
			before: func(t *testing.T) {
				c.ssa(gvrQuota, "someone-else", map[string]any{
					"apiVersion": "v1", "kind": "ResourceQuota",
					"metadata": map[string]any{"name": "waldur-quota", "namespace": "tenant-ml-inference"},
					"spec":     map[string]any{"hard": map[string]any{"limits.cpu": "99"}},
				})
			},
			want: map[string]changeset.Action{
				mlQuota: changeset.Skip,
				// The tenant's later objects wait for the conflict to be resolved.
				"RoleBinding/tenant-ml-inference/waldur-admin":           changeset.Skip,
				"RoleBinding/tenant-ml-inference/waldur-readonly":        changeset.Skip,
				"RoleBinding/tenant-ml-inference/waldur-readwrite":       changeset.Skip,
				"NetworkPolicy/tenant-ml-inference/default-deny-ingress": changeset.Skip,
			},
			others: changeset.Unchanged,
			wantErr: func(t *testing.T, err error) {
				var oe *apply.ObjectError
				if !errors.As(err, &oe) || !oe.Conflict || oe.Subject != mlQuota {
					t.Fatalf("want a conflict on %s, got %v", mlQuota, err)
				}
				if msg := err.Error(); !strings.Contains(msg, `conflict with "someone-else"`) || !strings.Contains(msg, "--force-conflicts") {
					t.Errorf("message lacks the API server's reason or the hint: %s", msg)
				}
			},
			check: func(t *testing.T, _ *apply.Result) {
				q := c.get(gvrQuota, "tenant-ml-inference", "waldur-quota")
				if got, _, _ := unstructured.NestedString(q.Object, "spec", "hard", "limits.cpu"); got != "99" {
					t.Errorf("the conflict was forced: limits.cpu = %q", got)
				}
			},
		},
		{
			name:   "--force-conflicts takes the field back",
			edits:  []edit{setCPU("Genome portal", "6")},
			opts:   apply.Options{ForceConflicts: true},
			want:   allOf(changeset.Update, mlQuota),
			others: changeset.Unchanged,
			check: func(t *testing.T, _ *apply.Result) {
				q := c.get(gvrQuota, "tenant-ml-inference", "waldur-quota")
				if got, _, _ := unstructured.NestedString(q.Object, "spec", "hard", "limits.cpu"); got != "8" {
					t.Errorf("limits.cpu = %q, want 8", got)
				}
			},
		},
		{
			name:  "a resource the renderer skips keeps its objects",
			edits: []edit{setCPU("Genome portal", "6"), setCPU("Restricted staging", "lots")},
			want: allOf(changeset.Skip,
				"Namespace/tenant-restricted-staging", "ResourceQuota/tenant-restricted-staging/waldur-quota",
				"LimitRange/tenant-restricted-staging/waldur-container-defaults",
				"NetworkPolicy/tenant-restricted-staging/default-deny-ingress",
				"RoleBinding/tenant-restricted-staging/waldur-admin", "RoleBinding/tenant-restricted-staging/waldur-readonly",
				"RoleBinding/tenant-restricted-staging/waldur-readwrite"),
			others: changeset.Unchanged,
			check: func(t *testing.T, res *apply.Result) {
				for _, e := range res.Changes.ByAction(changeset.Skip) {
					if !strings.HasPrefix(e.Reason, "kept: the renderer skipped") {
						t.Errorf("%s: reason %q", e.Subject, e.Reason)
					}
				}
				if c.get(gvrQuota, "tenant-restricted-staging", "waldur-quota") == nil {
					t.Error("the skipped resource's quota was deleted")
				}
			},
		},
		{
			name:  "a terminated tenant is pruned; unmanaged objects stay",
			edits: []edit{setCPU("Genome portal", "6"), terminate("Genome portal", terminateOrder)},
			before: func(t *testing.T) {
				// Neither labelled nor annotated: never ours.
				c.create(gvrNamespace, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-scratch"}})
				c.create(gvrConfigMap, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "notes", "namespace": "tenant-ml-inference"}, "data": map[string]any{"a": "b"}})
				c.create(gvrBinding, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
					"metadata": map[string]any{"name": "hand-made", "namespace": "tenant-ml-inference"},
					"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
					"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "someone"}}})
				// Labelled, but for an offering this config does not have.
				c.create(gvrNamespace, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{
					"name":        "other-installation",
					"labels":      map[string]any{"app.kubernetes.io/managed-by": "waldur-gitops", "waldur.io/resource-uuid": "0123456789abcdef0123456789abcdef"},
					"annotations": map[string]any{"waldur.io/offering-uuid": "fedcba9876543210fedcba9876543210"},
				}})
			},
			want:   allOf(changeset.Delete, genomeObjects...),
			others: changeset.Unchanged,
			check: func(t *testing.T, res *apply.Result) {
				for _, e := range res.Changes.ByAction(changeset.Delete) {
					if !slices.Equal(e.Orders, []string{string(terminateOrder)}) {
						t.Errorf("%s: orders %v, want the Terminate order", e.Subject, e.Orders)
					}
				}
				if c.get(gvrQuota, "tenant-genome-portal", "waldur-quota") != nil || c.get(gvrBinding, "tenant-genome-portal", "waldur-admin") != nil {
					t.Error("namespaced objects of the pruned tenant remain")
				}
				// No controller manager runs, so the namespace stays Terminating.
				if ns := c.get(gvrNamespace, "", "tenant-genome-portal"); ns != nil && ns.GetDeletionTimestamp() == nil {
					t.Error("the pruned tenant's namespace is not being deleted")
				}
				for _, o := range []struct{ ns, name string }{{"", "team-scratch"}, {"", "other-installation"}} {
					if c.get(gvrNamespace, o.ns, o.name) == nil {
						t.Errorf("unmanaged namespace %s was deleted", o.name)
					}
				}
				if c.get(gvrConfigMap, "tenant-ml-inference", "notes") == nil || c.get(gvrBinding, "tenant-ml-inference", "hand-made") == nil {
					t.Error("unmanaged objects in a managed namespace were deleted")
				}
			},
		},
		{
			name:   "after the prune a re-apply changes nothing",
			edits:  []edit{setCPU("Genome portal", "6"), terminate("Genome portal", terminateOrder)},
			others: changeset.Unchanged,
		},
	}
	for _, step := range steps {
		ok := t.Run(step.name, func(t *testing.T) {
			cfg, st := loadExample(t)
			for _, e := range step.edits {
				e(t, st)
			}
			res := renderState(t, cfg.Config, st)
			if step.before != nil {
				step.before(t)
			}
			opts := step.opts
			opts.Kubeconfig, opts.Guard = admin, guard.DefaultOptions()
			got, err := apply.Apply(context.Background(), cfg.Config, res, opts)
			switch {
			case step.wantErr != nil:
				step.wantErr(t, err)
			case err != nil:
				t.Fatalf("apply: %v", err)
			}
			if len(got.Changes.Entries) == 0 {
				t.Fatal("no entries")
			}
			for _, e := range got.Changes.Entries {
				if e.Stage != apply.StageApply || e.Offering == "" || e.Resource == "" || e.Kind == "" {
					t.Errorf("incomplete entry %+v", e)
				}
			}
			checkActions(t, got.Changes, step.want, step.others)
			if step.check != nil {
				step.check(t, got)
			}
		})
		if !ok {
			t.FailNow() // later steps build on this one
		}
	}
}

// The guard counts tenants that would vanish without a Terminate order: a
// partial Waldur answer is refused and nothing is deleted; --allow-mass-prune
// lets it through.
func TestPruneUnderGuard(t *testing.T) {
	c := startCluster(t, []string{crdManagedNamespace, crdRancher})
	cfg, st := loadExample(t)
	c.prepareNamespaces(renderState(t, cfg.Config, st))
	opts := apply.Options{Kubeconfig: c.KubeconfigPath(kubetest.Admin), Guard: guard.DefaultOptions()}
	full := renderState(t, cfg.Config, st)
	if _, err := apply.Apply(context.Background(), cfg.Config, full, opts); err != nil {
		t.Fatal(err)
	}
	// Five of the twelve resources are missing, none with a Terminate order.
	for _, name := range []string{"Genome portal", "ML inference", "Restricted staging", "Climate dashboards", "Teaching JupyterHub"} {
		remove(name)(t, st)
	}
	partial := renderState(t, cfg.Config, st)
	gone := objectCount(full) - objectCount(partial)

	cases := []struct {
		name      string
		allow     bool
		refused   bool
		deletions int
	}{
		{name: "refused", refused: true},
		{name: "allowed", allow: true, deletions: gone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.Guard.Allow = tc.allow
			res, err := apply.Apply(context.Background(), cfg.Config, partial, o)
			var ge *guard.Error
			if got := errors.As(err, &ge); got != tc.refused {
				t.Fatalf("refused = %v, want %v (%v)", got, tc.refused, err)
			}
			if tc.refused {
				if len(ge.Unexplained) != 5 || ge.Existing != 12 {
					t.Errorf("guard counted %d of %d tenants, want 5 of 12", len(ge.Unexplained), ge.Existing)
				}
				if res.Calls["apply"] != 0 || len(res.Changes.ByAction(changeset.Delete)) != 0 {
					t.Errorf("a refused run changed something: %v", res.Calls)
				}
				if c.get(gvrNamespace, "", "tenant-genome-portal").GetDeletionTimestamp() != nil {
					t.Error("a refused run deleted a namespace")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Changes.ByAction(changeset.Delete)); n != tc.deletions {
				t.Errorf("%d deletions, want %d: %v", n, tc.deletions, subjects(res.Changes, changeset.Delete))
			}
		})
	}
}

// A cluster without the Rancher CRDs: the Rancher tenants are named in one
// error per missing kind and left alone entirely, downstream part included;
// every other tenant is applied.
func TestMissingCRD(t *testing.T) {
	c := startCluster(t, []string{crdManagedNamespace})
	cfg, st := loadExample(t)
	res := renderState(t, cfg.Config, st)
	c.prepareNamespaces(res)
	got, err := apply.Apply(context.Background(), cfg.Config, res, apply.Options{Kubeconfig: c.KubeconfigPath(kubetest.Admin), Guard: guard.DefaultOptions()})
	var missing []*apply.MissingKindError
	for _, e := range unjoin(err) {
		var mk *apply.MissingKindError
		if !errors.As(e, &mk) {
			t.Errorf("unexpected error: %v", e)
			continue
		}
		missing = append(missing, mk)
	}
	if len(missing) != 2 {
		t.Fatalf("want one error for Project and one for ProjectRoleTemplateBinding, got %v", err)
	}
	for _, mk := range missing {
		msg := mk.Error()
		crd := strings.ToLower(mk.GVK.Kind) + "s.management.cattle.io"
		if !strings.Contains(msg, crd) {
			t.Errorf("message does not name the CRD %s: %s", crd, msg)
		}
		for _, tenant := range []string{"rancher-gpu/management/gpu-llm-finetune", "rancher-gpu/downstream/gpu-llm-finetune", "rancher-gpu/management/gpu-vision-models"} {
			if !slices.Contains(mk.Tenants, tenant) || !strings.Contains(msg, tenant) {
				t.Errorf("%s: tenant %s not named: %s", mk.GVK.Kind, tenant, msg)
			}
		}
	}
	for _, e := range got.Changes.Entries {
		rancher := e.Offering == "Rancher GPU"
		switch {
		case rancher && (e.Action != changeset.Skip || !strings.Contains(e.Reason, "serves no")):
			t.Errorf("%s: %s %q, want skipped for the missing kind", e.Subject, e.Action, e.Reason)
		case !rancher && e.Action != changeset.Create:
			t.Errorf("%s: %s %q, want created", e.Subject, e.Action, e.Reason)
		}
	}
	for _, ns := range []string{"gpu-llm-finetune", "gpu-vision-models", "gpu-protein-folding"} {
		if c.get(gvrNamespace, "", ns) != nil {
			t.Errorf("half-applied: the downstream namespace %s of a Rancher tenant exists", ns)
		}
	}
	if c.get(gvrNamespace, "", "tenant-genome-portal") == nil {
		t.Error("a tenant of another offering was not applied")
	}
}

// unjoin splits an errors.Join result.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
