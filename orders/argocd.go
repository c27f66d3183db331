package orders

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/kube"
)

// Consumer decides whether a GitOps consumer (Argo CD, Flux) has applied a
// pushed commit for one tenant: the applied check of orders.complete_when:
// applied asked of the consumer instead of the cluster's objects.
type Consumer interface {
	// AppliedAt reports whether the consumer shows target applied; detail
	// says what is missing when it does not.
	AppliedAt(ctx context.Context, target Target) (ok bool, detail string, err error)
}

// Target is what an order waits for in the consumer.
type Target struct {
	// Dir is the tenant's directory relative to git.path
	// (render.Tenant.Dir: <offering>/<target>/<name>).
	Dir string
	// Commit is the commit that holds the order's effect: the one the run
	// pushed, else the branch tip it planned on.
	Commit string
	// Gone: the tenant's directory was removed (a termination), and the
	// consumer must have deleted what it applied from it.
	Gone bool
}

// ArgoApplications lists Argo CD Applications; *kube.Reader implements it.
type ArgoApplications interface {
	ArgoApplications(ctx context.Context, namespace string) ([]kube.ArgoApplication, error)
}

var _ ArgoApplications = (*kube.Reader)(nil)

// ArgoCD is the Consumer for Argo CD with one Application per tenant
// directory (examples/argocd): a tenant is applied when the Application whose
// source is the tenant's directory of RepoURL reports Synced at the commit and
// Healthy; a removed tenant when no such Application is left (the
// ApplicationSet deleted it and its resources finalizer deleted the tenant's
// objects).
//
// With Stage.Argo set, order_done_on: applied waits for it after the
// cluster shows the tenant's objects: Target.Dir is each rendered directory
// of the tenant (a Rancher tenant has two, one Application each) and
// Target.Commit the run's commit. Terminations keep the cluster check: the
// resources finalizer deletes the namespace before the Application goes.
// Apps is left nil there; each offering's cluster reader fills it.
type ArgoCD struct {
	Apps ArgoApplications
	// Namespace is where the Applications live ("" for every namespace).
	Namespace string
	// RepoURL is git.url; Path is git.path, the prefix of tenant directories.
	RepoURL, Path string
}

var _ Consumer = (*ArgoCD)(nil)

// AppliedAt implements Consumer.
func (a *ArgoCD) AppliedAt(ctx context.Context, t Target) (bool, string, error) {
	apps, err := a.Apps.ArgoApplications(ctx, a.Namespace)
	if err != nil {
		return false, "", err
	}
	dir := path.Join(a.Path, t.Dir)
	var mine []kube.ArgoApplication
	for _, app := range apps {
		if slices.ContainsFunc(app.Sources, func(s kube.ArgoSource) bool {
			return sameRepo(s.RepoURL, a.RepoURL) && path.Clean(s.Path) == dir
		}) {
			mine = append(mine, app)
		}
	}
	if t.Gone {
		if len(mine) > 0 {
			state := "still exists"
			if mine[0].Deleting {
				state = "is being deleted"
			}
			return false, "argo cd application " + mine[0].Name + " of " + dir + " " + state, nil
		}
		return true, "", nil
	}
	switch len(mine) {
	case 0:
		return false, "no argo cd application reads " + dir + " yet", nil
	case 1:
	default:
		names := make([]string, len(mine))
		for i, app := range mine {
			names[i] = app.Name
		}
		return false, "argo cd applications " + strings.Join(names, ", ") + " all read " + dir + ": want one", nil
	}
	app := mine[0]
	switch {
	case app.Deleting:
		return false, "argo cd application " + app.Name + " is being deleted", nil
	case app.SyncStatus != "Synced" || !slices.Contains(app.SyncRevisions, t.Commit):
		return false, "argo cd application " + app.Name + " is " + orUnknown(app.SyncStatus) + " at " + short(app.SyncRevisions) + ", want Synced at " + shortRev(t.Commit), nil
	case app.Health != "Healthy":
		return false, "argo cd application " + app.Name + " is Synced but " + orUnknown(app.Health), nil
	}
	return true, "", nil
}

// sameRepo compares repository URLs the way people write them: with or
// without .git or a trailing slash, the host in any case.
func sameRepo(a, b string) bool {
	norm := func(u string) string {
		u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
		if scheme, rest, ok := strings.Cut(u, "://"); ok {
			host, p, _ := strings.Cut(rest, "/")
			u = strings.ToLower(scheme) + "://" + strings.ToLower(host) + "/" + p
		}
		return u
	}
	return norm(a) == norm(b)
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

func short(revs []string) string {
	if len(revs) == 0 {
		return "no revision"
	}
	out := make([]string, len(revs))
	for i, r := range revs {
		out[i] = shortRev(r)
	}
	return strings.Join(out, ",")
}

func shortRev(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

// expect adds to every Done order of an offering with order_done_on: applied
// (not a termination) the tenant's directories, to be applied at commit.
func (a *ArgoCD) expect(plan []Executing, commit string) {
	if a == nil || commit == "" {
		return
	}
	for i := range plan {
		e := &plan[i]
		if e.Outcome != Done || e.Expect == nil || e.Expect.Gone || e.Offering.DoneOn != config.DoneOnApplied {
			continue
		}
		e.Expect.argo = a
		for _, d := range e.Expect.dirs {
			e.Expect.Argo = append(e.Expect.Argo, Target{Dir: d, Commit: commit})
		}
	}
}
