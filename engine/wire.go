package engine

import (
	"log/slog"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/capacity"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/offboard"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/quotasafe"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/usage"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
	"github.com/waldur/waldur-gitops/waldur/writeback"
)

// Destination is where a run publishes the render.
type Destination int

// The destinations.
const (
	// Nowhere: the render is only shown (render to stdout, keycloak).
	Nowhere Destination = iota
	// Git: a commit in the GitOps repository (sync, serve, render --dry-run).
	Git
	// Cluster: server-side apply into the clusters (apply).
	Cluster
	// Directory: a local directory (render --out).
	Directory
)

// Options choose the seams FromConfig wires for a verb.
type Options struct {
	// Snapshot reads the state from this file instead of the API; the order
	// stage never runs then.
	Snapshot string
	Publish  Destination
	// Dir is the directory of Publish: Directory.
	Dir string
	// Orders runs the order stage (approve before the render, finish after
	// the publish) when the state comes from the API.
	Orders bool
	// Announce registers the tool as the site agent of every offering in
	// Waldur (identity, the service of the run's command, a processor) as the
	// first stage, when the state comes from the API.
	Announce bool
	// Identities reconciles Keycloak for the offerings with keycloak_enabled.
	Identities bool
	// ValidateServer dry-runs every object on the API server before the publish.
	ValidateServer bool
	// Feedback reports back to Waldur what the run found out about its
	// resources (state, where they live, last sync, membership statuses);
	// only with the API source and a publisher.
	Feedback bool
	// Apply are the options of the cluster publisher and the validator
	// (kubeconfig, conflicts, rate); DryRun and Guard are set per run.
	Apply apply.Options
	Log   *slog.Logger
	// DryRun says the verb's runs change nothing: the config check
	// (preflight) then lets a Keycloak realm without credentials pass, as
	// the dry run leaves it out.
	DryRun bool
	// TuneWaldur adjusts every Waldur client's options (tests).
	TuneWaldur func(*waldur.ClientOptions)
	// Usage, when set, wires the usage report (report) with this reporter:
	// the Source, the agent registration (Announce) and the usage stage
	// (UsageStage), nothing else.
	Usage *usage.Reporter
}

// FromConfig builds the engine a verb runs: the templates are loaded once,
// one Waldur client per offering serves reading and the orders, and each seam
// is the package that implements it. A config the templates cannot work
// with, or that lacks a key or credential the verb needs (preflight), is a
// config error, returned before any request is sent.
func FromConfig(cfg *config.Config, o Options) (*Engine, error) {
	tpls, err := render.LoadTemplates(cfg)
	if err != nil {
		return nil, failure.Classify(failure.ClassConfig, err)
	}
	var s Seams
	var api *source.API
	if o.Snapshot != "" {
		s.Source = &source.Snapshot{Path: o.Snapshot, Log: o.Log}
	} else {
		src := &source.API{Offerings: cfg.Offerings, Log: o.Log, Tune: o.TuneWaldur, Writers: cfg.Orders.Writers()}
		s.Source, api = src, src
		if o.Announce {
			s.Announcer = &writeback.AgentAnnouncer{Source: src, Offerings: cfg.Offerings, Log: o.Log}
		}
		if o.Orders && o.Publish != Nowhere {
			ost := &orders.Site{Source: src, Offerings: cfg.Offerings, ApplyTimeout: cfg.Orders.Timeout(), Log: o.Log}
			if o.Publish == Git {
				ost.GitConsumers(cfg)
			}
			if cs := capacity.FromConfig(cfg.Offerings, o.Apply.Kubeconfig, o.Log); cs != nil {
				ost.Capacity, s.Capacity = cs, cs
			}
			s.Orders = &OrderStage{ost}
		}
	}
	var previous func() render.Tree
	var holds func(inputs string) bool // whether the destination holds what inputs render to
	switch o.Publish {
	case Git:
		gp := &publish.Git{Config: cfg, Log: o.Log}
		s.Publisher, previous, holds = gp, gp.Previous, gp.Holds
	case Cluster:
		opts := o.Apply
		opts.Log = o.Log
		s.Publisher = &publish.Cluster{Config: cfg, Options: opts}
	case Directory:
		s.Publisher = &publish.Dir{Dir: o.Dir}
	}
	if o.Publish != Nowhere {
		s.Quotas = &quotasafe.Stage{Offerings: cfg.Offerings, Kubeconfig: o.Apply.Kubeconfig, CanReview: o.Publish == Git, Log: o.Log}
	}
	if o.ValidateServer {
		opts := o.Apply
		opts.Log = o.Log
		s.Validator = &publish.ServerValidator{Config: cfg, Options: opts}
	}
	if o.Identities && len(keycloak.Targets(cfg)) > 0 {
		s.Identities = &KeycloakStage{&keycloak.Identities{Config: cfg, Log: o.Log, Memory: publish.KeycloakMemory(cfg, s.Publisher, o.DryRun)}}
	}
	g := guard.Options{MaxFraction: *cfg.DeletionGuard.MaxFraction, MinCount: *cfg.DeletionGuard.MinCount}
	if o.Feedback && api != nil && s.Publisher != nil {
		fb := &writeback.ResourceFeedback{Source: api, Offerings: cfg.Offerings, LastSyncInterval: cfg.Orders.LastSync(),
			RunInterval: cfg.Orders.Every(), Writers: cfg.Orders.Writers(), Log: o.Log}
		if k, ok := s.Identities.(*KeycloakStage); ok {
			fb.Missing, fb.Failed = k.MissingUsers, k.FailedUsers
		}
		s.Feedback = feedbackStage{fb}
	}
	s.Offboarding = offboarding(cfg, o, api, s.Identities)
	// Serve keeps the engine: its renders take what did not change from the
	// last one (render.Memory); a verb's two renders (approve, render) too.
	r := render.New(cfg, tpls).Remembering(render.NewMemory(o.Log))
	if filesOnly(o) {
		r = r.WithoutObjects()
		if holds != nil && !o.DryRun {
			r = r.HollowWhen(holds)
		}
	}
	if previous != nil {
		r = r.SharingWith(previous)
	}
	if o.Usage != nil {
		// The usage report posts only usage: no order, publish or identity stage.
		s = Seams{Source: s.Source, Announcer: s.Announcer, Usage: &UsageStage{Reporter: o.Usage}}
	} else if err := preflight(cfg, o, api); err != nil {
		return nil, err
	}
	s.Renderer = ConfigRendering(cfg, r)
	return New(s, r.Render, g, o.Log), nil
}

// filesOnly reports whether a run wired with o uses only the rendered files:
// it publishes them to Git or a directory and validates nothing on a server.
// Its render then drops the generic objects of every tenant that fulfils no
// order (render.Renderer.WithoutObjects), which is most of a render's
// memory; the order stage still finds the objects of the tenants it reads.
// Render to stdout prints the objects and apply and --validate-server send
// them, so those keep every object.
func filesOnly(o Options) bool {
	return (o.Publish == Git || o.Publish == Directory) && !o.ValidateServer
}

// New builds an engine from its seams, the renderer (templates loaded once,
// render.New(cfg, tpls).Render) and the deletion policy.
func New(s Seams, r Renderer, g guard.Options, log *slog.Logger) *Engine {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if s.Renderer == nil {
		s.Renderer = funcRendering(r)
	}
	return &Engine{seams: s, guard: g, log: log}
}

// Last is the outcome of the latest run, nil before the first.
func (e *Engine) Last() *Outcome { return e.last }

// Seams returns the stages the engine runs (tests, and verbs that print what
// a stage found).
func (e *Engine) Seams() Seams { return e.seams }

// offboarding wires the deletion workflow into the runs that move orders
// and publish (sync, serve, apply, render --dry-run); nil for the others,
// whose render leaves out the users Waldur asked to delete without
// claiming them.
func offboarding(cfg *config.Config, o Options, api *source.API, ids Identities) Offboarding {
	if api == nil || !o.Orders || o.Publish == Nowhere {
		return nil
	}
	w := &offboard.Workflow{Config: cfg, Log: o.Log, Source: api}
	if o.Publish == Git {
		w.Cluster = &offboard.KubeCluster{}
	}
	if k, ok := ids.(*KeycloakStage); ok {
		w.Refused, w.Keycloak = k.RefusedUsers, &keycloak.Options{ClientOptions: keycloak.ClientOptions{UserAgent: version.UserAgent()}, Connect: k.Connect}
	}
	return offboardStage{Workflow: w, applied: o.Publish == Cluster}
}
