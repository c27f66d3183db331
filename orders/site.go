package orders

import (
	"log/slog"
	"time"

	"github.com/waldur/waldur-gitops/capacity"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
)

// Clients opens the Waldur client of an offering (source.API, whose clients
// the run shares).
type Clients interface {
	Client(o *config.Offering) (*waldur.Client, error)
}

// Site is what the order stage of every run is built from: the configured
// offerings with the run's Waldur clients, the apply timeout, and what
// consumes the pushed repository.
type Site struct {
	Source    Clients
	Offerings []config.Offering
	// ApplyTimeout is orders.apply_timeout (0: never err a waiting order).
	ApplyTimeout time.Duration
	// Flux, set when Flux consumes the pushed repository (git.flux_shards),
	// makes order_done_on: applied also wait for the tenant's shard
	// Kustomization to report the pushed commit applied; Branch is git.branch.
	Flux   *gitsync.FluxLayout
	Branch string
	// Argo, set when Argo CD consumes the pushed repository
	// (git.argocd_namespace), makes order_done_on: applied also wait for the
	// tenant's Applications to be Synced at the pushed commit and Healthy
	// or, in the shard-branch layout, for the Applications of its shards to
	// be Synced at their branches' tips (Consumers).
	Argo *ArgoCD
	// Capacity, when some offering has a capacity section, decides the
	// orders that would oversell their pool before approval.
	Capacity *capacity.Site
	Log      *slog.Logger
}

// Stage builds the Stage of one step. clusters opens a reader of the

// GitConsumers sets the consumers a site that publishes to Git waits on
// for orders.complete_when: applied: the Flux shard Kustomizations
// (git.flux_shards) and the Argo CD Applications (git.argocd_namespace).
func (s *Site) GitConsumers(cfg *config.Config) {
	if cfg.Git.FluxShards > 0 {
		l := gitsync.LayoutFor(cfg)
		s.Flux, s.Branch = &l, cfg.Git.Branch
	}
	if cfg.Git.ArgoCDNamespace != "" {
		s.Argo = &ArgoCD{Namespace: cfg.Git.ArgoCDNamespace, RepoURL: cfg.Git.URL, Path: cfg.Git.Path}
	}
}

// cluster of every offering with order_done_on: applied.
func (s *Site) Stage(dryRun, clusters bool) (*Stage, error) {
	st := &Stage{DryRun: dryRun, Log: s.Log, Capacity: s.Capacity}
	for i := range s.Offerings {
		o := &s.Offerings[i]
		c, err := s.Source.Client(o)
		if err != nil {
			return nil, err
		}
		var cluster Cluster
		if clusters && o.OrderDoneOn == config.DoneOnApplied {
			cs := o.Settings.Common()
			r, err := kube.Open(kube.Source{Path: cs.KubeconfigPath, Context: cs.KubeconfigContext})
			if err != nil {
				// Its orders wait, saying no cluster is configured; the others go on.
				if s.Log != nil {
					s.Log.Warn("cannot read the cluster: orders that wait for it stay executing", "offering", o.Name, "error", err.Error())
				}
			} else {
				cluster = r
			}
		}
		of := OfferingFromConfig(o, c, cluster)
		of.ApplyTimeout = s.ApplyTimeout
		st.Offerings = append(st.Offerings, of)
	}
	return st, nil
}

// Consumers makes st's Finish wait for the consumers of the pushed
// repository at ref (the commit pushed, else the branch tip the publish was
// planned on): Flux's shard Kustomizations (revisions: the revision of each
// shard's own source, by shard, in the OCI and shard-branch layouts) and
// Argo CD's Applications, one per tenant directory at ref. In the
// shard-branch layout Argo CD, when set, is taken to run the per-shard form
// (examples/argocd/applicationset-shards.yaml): its Applications follow the
// shard branches, each waited for at its branch's tip as revisions name it,
// and the shard Kustomizations, which nothing applies then, are not waited
// for. An empty ref waits for neither.
func (s *Site) Consumers(st *Stage, ref string, revisions map[string]string) {
	if ref == "" {
		return
	}
	perShard := s.Argo != nil && s.Flux != nil && s.Flux.Branches
	if s.Flux != nil && !perShard {
		st.Flux = &Flux{Layout: *s.Flux, Revision: s.Branch + "@sha1:" + ref, Revisions: revisions}
	}
	if s.Argo != nil {
		a := *s.Argo
		if perShard {
			a.shards = &argoShards{layout: *s.Flux, tips: shardTips(revisions)}
		}
		st.Argo, st.ArgoCommit = &a, ref
	}
}
