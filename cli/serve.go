package cli

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/atomicfile"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/serve"
	"github.com/waldur/waldur-gitops/stop"
)

// serveFlags are the flags of serve.
type serveFlags struct {
	snapshot       string
	validateServer bool
	kubeconfig     string
	listen         string
	interval       time.Duration
	jitter         float64
	grace          time.Duration
	staleAfter     time.Duration
	events         bool
	eventsWindow   time.Duration
	timeout        time.Duration
	leaderElect    bool
}

// tuneServeLoop adjusts the loop runServe built before it starts; tests gate
// the runs with it.
var tuneServeLoop = func(*serve.Loop) {}

// httpShutdown bounds the wait for open HTTP requests once the loop stopped.
const httpShutdown = 3 * time.Second

func init() { register((*app).serveCommand) }

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --config C [--interval 15m] [--listen :9090] [--snapshot state.json]",
		Short: "Run sync on an interval and serve health and Prometheus metrics",
		Long: `Serve runs the sync cycle at once and then every --interval (each wait
jittered within ±--jitter of it), one run at a time: a run that takes longer
than the interval makes the next start when it ends. Every run writes the
config's report file and logs a summary line.

It serves /healthz and /livez (JSON, 200 or 503), /metrics (Prometheus) and
the status page (/, /runs/<id>, /status.json) on --listen. On SIGTERM or SIGINT it starts no new run, lets the run in progress
finish for up to --shutdown-grace, then cancels it (nothing half-pushed: the
push is atomic), stops the HTTP server and exits 0.

With --events (or stomp_enabled on an offering) it also consumes Waldur's
marketplace events over STOMP (RabbitMQ web-STOMP) and runs a sync of the
named resources within seconds of an order; the interval runs stay the
safety net.

With --leader-elect (or serve.leader_election.enabled) several replicas
share one installation: the one holding a coordination.k8s.io/v1 Lease runs
the cycles and consumes the events, the others stand by (healthy, live and
ready) and take over when it dies. A replica starts a write only while its
lease has at least the renew deadline left. See docs/serve.md.`,
		Example: `  # sync every 15 minutes, health and metrics on :9090
  waldur-gitops serve --config site.yaml

  # every 5 minutes, metrics on loopback only
  waldur-gitops serve --config site.yaml --interval 5m --listen 127.0.0.1:9090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runServe(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", ":9090", "address of the health and metrics endpoints")
	fl.DurationVar(&f.interval, "interval", 15*time.Minute, "time between the starts of two runs")
	fl.Float64Var(&f.jitter, "jitter", 0.1, "spread every wait randomly within ±this fraction of --interval (0 to below 1)")
	fl.DurationVar(&f.grace, "shutdown-grace", 25*time.Second, "on SIGTERM, how long the run in progress may go on before it is cancelled")
	fl.Var(stop.Deadline{D: &f.timeout}, "timeout", "each run's deadline: the stage in progress is cancelled and the run ends with exit 12 in its report (default: the config's run_timeout, else --interval)")
	fl.DurationVar(&f.staleAfter, "stale-after", 0, "health fails when no run ended for this long (default 2×interval×(1+jitter)+shutdown-grace)")
	fl.StringVar(&f.snapshot, "snapshot", "", "read Waldur state from this snapshot file instead of the API (tests, offline use)")
	fl.BoolVar(&f.validateServer, "validate-server", false, "server-side dry-run every rendered object before committing")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --validate-server and --leader-elect (default: $KUBECONFIG, ~/.kube/config, in a pod its service account)")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader on a Lease (serve.leader_election): only the leader runs, the other replicas stand by")
	fl.BoolVar(&f.events, "events", false, "consume Waldur's events (STOMP over WebSocket) for every offering and sync within seconds; offerings with stomp_enabled do without it (docs/serve.md)")
	fl.DurationVar(&f.eventsWindow, "events-window", events.DefaultWindow, "gather a burst of events this long into one sync")
	return cmd
}

func (a *app) runServe(ctx context.Context, f serveFlags) error {
	t := serve.Timing{Interval: f.interval, Jitter: f.jitter, Grace: f.grace, StaleAfter: f.staleAfter, EventsWindow: f.eventsWindow}
	if err := t.Check(); err != nil {
		return usageErr("%w", err)
	}
	if f.events && f.snapshot != "" {
		return usageErr("--events needs Waldur's API: it cannot be used with --snapshot")
	}
	// Fail at once on a config that cannot work; every run reads it again,
	// so an edited config (or a rotated secret file) needs no restart.
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if cfg.Report != "" {
		if err := atomicfile.Check(cfg.Report); err != nil {
			return failure.Classify(failure.ClassOutput, fmt.Errorf("the run report file (report): %w", err))
		}
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usageErr("--listen %s: %w", f.listen, err)
	}
	stale := t.Stale()
	rec := metrics.New(version.String())
	health := serve.NewHealth(time.Now(), stale, nil)
	context.AfterFunc(ctx, health.Stopping)
	log := a.log
	elect := f.leaderElect || cfg.Serve.LeaderElection.Enabled
	w := engine.Options{Snapshot: f.snapshot, Publish: engine.Git, Orders: true, Announce: true, Identities: true, ValidateServer: f.validateServer, Feedback: true}
	w.Apply.Kubeconfig = f.kubeconfig
	svc := a.serveService(w, rec, f.timeout, f.interval)
	newLoop := func() *serve.Loop {
		return &serve.Loop{Interval: f.interval, Jitter: f.jitter, Grace: f.grace, Health: health, Log: log, Run: svc.Run}
	}
	var run func(context.Context) error
	logArgs := []any{"listen", ln.Addr().String(), "interval", f.interval.String(), "jitter", f.jitter,
		"shutdown_grace", f.grace.String(), "stale_after", stale.String()}
	if elect {
		// The loop and the events run only while this replica leads.
		el, err := serve.NewElection(ctx, cfg.Serve.LeaderElection, f.kubeconfig, serve.AdvertisedURL(ln.Addr()), health, rec, log)
		if err != nil {
			return err
		}
		svc.Fence, svc.Leadership = el.Bind, el.Leadership
		run = func(ctx context.Context) error { return el.Run(ctx, a.leaderTerm(f, svc, newLoop, health)) }
		logArgs = append(logArgs, "leader_election", el.Lock.Describe(), "identity", el.Lock.Identity())
	} else {
		loop := newLoop()
		if f.snapshot == "" {
			stopEvents, err := svc.StartEvents(ctx, cfg, f.events, f.eventsWindow, loop, health)
			if err != nil {
				return err
			}
			defer stopEvents()
		}
		tuneServeLoop(loop)
		run = loop.Start
	}
	log.Info("serving", logArgs...)
	if err := serve.ServeWhile(ctx, ln, svc.WithStatusPage(serve.Handler(health, rec.Registry()), health, cfg), run, httpShutdown); err != nil {
		// The runs are over; an HTTP server slow to close changes nothing.
		log.Warn("stopping", "error", err.Error())
	}
	log.Info("stopped")
	return nil
}

// serveService is serve's driver for one process: its runs load the config
// with the app's loader, build the engine as every verb does, and write the
// run report quietly (logged, not printed).
func (a *app) serveService(o engine.Options, rec *metrics.Recorder, timeout, interval time.Duration) *serve.Service {
	return &serve.Service{
		Options: o, Load: a.loadConfig, Build: a.newEngine, Metrics: rec, Log: a.log, TuneWaldur: tuneWaldurClient,
		Timeout: timeout, Interval: interval,
		Finish: func(cfg *config.Loaded, out *engine.Outcome) error {
			return a.finish(cfg, out, verb{report: true, quiet: true})
		},
	}
}

// leaderTerm is what the leader runs: the loop of runs and, unless serve
// reads a snapshot, the consumer of Waldur's events, both until ctx ends
// (the lease lost or the process stopping). Standbys run neither.
func (a *app) leaderTerm(f serveFlags, svc *serve.Service, newLoop func() *serve.Loop, health *serve.Health) func(context.Context) {
	return func(ctx context.Context) {
		loop := newLoop()
		if f.snapshot == "" {
			if cfg, err := a.loadConfig(); err != nil {
				a.log.Error("leading: the config does not load; the runs will say why", "error", err.Error())
			} else if stop, err := svc.StartEvents(ctx, cfg, f.events, f.eventsWindow, loop, health); err != nil {
				a.log.Error("leading: waldur events not consumed; the interval's runs go on", "error", err.Error())
			} else {
				defer stop()
			}
		}
		tuneServeLoop(loop)
		start := time.Now()
		_ = loop.Start(ctx) // a Loop built here always starts
		a.log.Info("the term as leader ended", "led_for", time.Since(start).Round(time.Millisecond).String())
	}
}
