package orders

import (
	"context"
	"path"
	"slices"
	"strings"

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
	// Branch, in the per-shard form of Argo CD (git.flux_shard_branches),
	// is the shard branch (gitsync.ShardBranch) of the shard that holds the
	// tenant, or held it for Gone; Dir is then unused and Commit is the
	// branch's tip, the shard commit cut from the order's commit or, when
	// the shard did not change since, from an earlier one. The Application
	// following the branch must be Synced at it.
	Branch string
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
//
// In the per-shard form (git.flux_shard_branches,
// examples/argocd/applicationset-shards.yaml) an Application follows a shard
// branch instead of reading a tenant's directory, and the wait is for the
// Application following the branch of each shard that holds the tenant to
// be Synced at the branch's tip, the shard commit cut from the order's
// commit (Site.Consumers sets it up); for a termination, every shard of
// the offering's targets, since one of them prunes the tenant.
type ArgoCD struct {
	Apps ArgoApplications
	// Namespace is where the Applications live ("" for every namespace).
	Namespace string
	// RepoURL is git.url; Path is git.path, the prefix of tenant directories.
	RepoURL, Path string

	// shards, set by Site.Consumers in the shard-branch layout, makes the
	// orders wait for the Applications of the per-shard form.
	shards *argoShards
}

var _ Consumer = (*ArgoCD)(nil)

// AppliedAt implements Consumer. When Apps comes from listOnce (the
// order_done_on: applied wait) its Applications are listed once per round.
func (a *ArgoCD) AppliedAt(ctx context.Context, t Target) (bool, string, error) {
	lists, ok := a.Apps.(*argoLists)
	if !ok {
		lists = listOnce(a.Apps)
	}
	if t.Branch != "" {
		return a.shardAppliedAt(ctx, lists, t)
	}
	dir := path.Join(a.Path, t.Dir)
	mine, err := lists.reading(ctx, a.Namespace, a.RepoURL, dir)
	if err != nil {
		return false, "", err
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
		return false, "argo cd applications " + appNames(mine) + " all read " + dir + ": want one", nil
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

// listOnce returns apps listing each namespace's Applications only once,
// and finding those that read a directory by look-up rather than by a scan:
// the order_done_on: applied wait makes one per offering and polling round,
// so a round costs one list whether one order waits or ten thousand. A failed
// list fails the round's every look-up in that namespace.
func listOnce(apps ArgoApplications) *argoLists {
	return &argoLists{apps: apps, byNS: map[string]*argoIndex{}}
}

type argoLists struct {
	apps ArgoApplications
	byNS map[string]*argoIndex
}

// argoIndex is one namespace's list: every Application, and the
// Applications by each source's repository and path (argoKey) and by each
// source's repository and target revision (branchKey).
type argoIndex struct {
	all      []kube.ArgoApplication
	byPath   map[string][]kube.ArgoApplication
	byBranch map[string][]kube.ArgoApplication
	err      error
}

func (l *argoLists) ArgoApplications(ctx context.Context, namespace string) ([]kube.ArgoApplication, error) {
	ix := l.list(ctx, namespace)
	return ix.all, ix.err
}

func (l *argoLists) list(ctx context.Context, namespace string) *argoIndex {
	if ix, ok := l.byNS[namespace]; ok {
		return ix
	}
	ix := &argoIndex{byPath: map[string][]kube.ArgoApplication{}, byBranch: map[string][]kube.ArgoApplication{}}
	ix.all, ix.err = l.apps.ArgoApplications(ctx, namespace)
	for _, app := range ix.all {
		seen := map[string]bool{}
		for _, s := range app.Sources {
			if k := argoKey(s.RepoURL, s.Path); !seen[k] {
				seen[k] = true
				ix.byPath[k] = append(ix.byPath[k], app)
			}
			if k := branchKey(s.RepoURL, s.TargetRevision); s.TargetRevision != "" && !seen[k] {
				seen[k] = true
				ix.byBranch[k] = append(ix.byBranch[k], app)
			}
		}
	}
	l.byNS[namespace] = ix
	return ix
}

// reading returns the Applications of namespace with a source reading dir
// of repo, in the order of the list.
func (l *argoLists) reading(ctx context.Context, namespace, repo, dir string) ([]kube.ArgoApplication, error) {
	ix := l.list(ctx, namespace)
	return ix.byPath[argoKey(repo, dir)], ix.err
}

// following returns the Applications of namespace with a source following
// branch of repo, in the order of the list.
func (l *argoLists) following(ctx context.Context, namespace, repo, branch string) ([]kube.ArgoApplication, error) {
	ix := l.list(ctx, namespace)
	return ix.byBranch[branchKey(repo, branch)], ix.err
}

// branchKey is a source's repository, as argoKey compares it, and the
// branch its target revision names, written bare or as refs/heads/<branch>.
func branchKey(repo, revision string) string {
	return argoKey(repo, "") + "\x01" + strings.TrimPrefix(revision, "refs/heads/")
}

// argoKey is a source's repository and path as compared: the repository the
// way people write it (with or without .git or a trailing slash, the host in
// any case), the path cleaned.
func argoKey(repo, dir string) string {
	u := strings.TrimSuffix(strings.TrimSuffix(repo, "/"), ".git")
	if scheme, rest, ok := strings.Cut(u, "://"); ok {
		host, p, _ := strings.Cut(rest, "/")
		u = strings.ToLower(scheme) + "://" + strings.ToLower(host) + "/" + p
	}
	return u + "\x00" + path.Clean(dir)
}

func appNames(apps []kube.ArgoApplication) string {
	names := make([]string, len(apps))
	for i, app := range apps {
		names[i] = app.Name
	}
	return strings.Join(names, ", ")
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
