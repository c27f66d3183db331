package serve

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/unreachable"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/status"
	"github.com/waldur/waldur-gitops/stop"
	"github.com/waldur/waldur-gitops/waldur"
)

// Service is serve's driver: it owns the one engine of the config (kept
// between runs with its opened repository, last state and render, and built
// anew when the config file changes), the consumer of Waldur's events whose
// triggers become runs, and the metrics of every run. Its Run is a Loop's Run.
type Service struct {
	// Options are the engine's options (the stages of a serve run).
	Options engine.Options
	// Load reads the config; every run reads it again, so an edited config
	// (or a rotated secret file) needs no restart.
	Load func() (*config.Loaded, error)
	// Build wires the engine of a config.
	Build func(*config.Loaded, engine.Options) (*engine.Engine, error)
	// Finish writes the run report of an outcome and returns the run's error.
	Finish func(*config.Loaded, *engine.Outcome) error
	// Timeout is every run's deadline (--timeout); 0: the config's
	// run_timeout, else Interval.
	Timeout, Interval time.Duration
	// Metrics records every run.
	Metrics *metrics.Recorder
	// Runs, when set, keeps every finished run for the status page.
	Runs *status.History
	// Leadership says whether this replica leads, for the status page (nil:
	// a single replica, its own leader). Leader election sets it, and
	// tells Metrics.SetLeader of every change.
	Leadership func() status.Leadership
	// TuneWaldur adjusts the Waldur clients of the event consumer (tests).
	TuneWaldur func(*waldur.ClientOptions)
	// Fence, when set, bounds every run by the write permit
	// (Election.Bind): the run is stopped the moment it may no longer write.
	Fence func(context.Context) (context.Context, context.CancelFunc)
	Log   *slog.Logger

	eng  *engine.Engine
	hash [sha256.Size]byte // of the config file eng was built from
	ev   *events.Metrics
}

// Engine returns the engine for cfg, building it when the config file changed.
func (s *Service) Engine(cfg *config.Loaded) (*engine.Engine, error) {
	b, err := os.ReadFile(cfg.Path)
	if err != nil {
		return nil, failure.Errorf(failure.ClassConfig, "read %s: %w", cfg.Path, err)
	}
	if h := sha256.Sum256(b); s.eng == nil || h != s.hash {
		if s.eng != nil {
			s.log().Info("config changed: building the engine anew", "file", cfg.Path)
		}
		// serve starts a run every Interval: that, not orders.run_interval,
		// is what refresh_last_sync is budgeted by.
		cfg.Orders.SetEvery(s.Interval)
		if s.eng, err = s.Build(cfg, s.Options); err != nil {
			return nil, err
		}
		s.hash = h
	}
	return s.eng, nil
}

// Run is one cycle of serve: a sync whose report, result and Waldur traffic
// go to the metrics and a log line.
func (s *Service) Run(ctx context.Context) Outcome {
	return s.runRequest(ctx, engine.Request{Command: "serve"}, "interval", 0)
}

// StartEvents starts the event consumer when all (--events) or an
// offering's stomp_enabled asks for it: its triggers, gathered for window,
// become runs on loop.Wake, and health reports its state. The returned
// function stops it and waits for it.
func (s *Service) StartEvents(ctx context.Context, cfg *config.Loaded, all bool, window time.Duration, loop *Loop, health *Health) (func(), error) {
	offs, err := events.FromConfig(cfg.Offerings, all, s.log(), s.TuneWaldur)
	if err != nil || len(offs) == 0 {
		return func() {}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	sink := &events.Coalescer{Window: window}
	if s.ev == nil { // a leader's second term starts the consumer again
		s.ev = events.NewMetrics(metrics.Namespace, s.Metrics.Registry())
	}
	consumer := &events.Consumer{Offerings: offs, Sink: sink, Metrics: s.ev, Log: s.log()}
	health.ReportEvents(func() any { return consumer.State() })
	wake := make(chan func(context.Context) Outcome)
	loop.Wake = wake
	done := make(chan struct{}, 2)
	go func() { _ = consumer.Run(ctx); done <- struct{}{} }()
	go func() {
		defer func() { done <- struct{}{} }()
		for t := range sink.Channel(ctx) {
			select {
			case wake <- s.eventRun(t):
			case <-ctx.Done():
				return
			}
		}
	}()
	names := make([]string, len(offs))
	for i, o := range offs {
		names[i] = o.Name
	}
	s.log().Info("consuming waldur events", "offerings", strings.Join(names, ","), "window", window.String())
	return func() { cancel(); <-done; <-done }, nil
}

// eventRun is the run a trigger asks for.
func (s *Service) eventRun(t events.Trigger) func(context.Context) Outcome {
	return func(ctx context.Context) Outcome {
		var last *engine.Outcome
		if s.eng != nil {
			last = s.eng.Last()
		}
		req, ok := engine.EventRequest(t, last)
		if !ok {
			s.log().Debug("waldur events name nothing this tool serves: no run", "events", t.Count())
			now := time.Now()
			return Outcome{Started: now, Finished: now, Result: ResultOK}
		}
		o := s.runRequest(ctx, req, "events", t.Count())
		s.ev.SyncDone(t, o.Finished)
		return o
	}
}

// timeout is the deadline of a run under cfg.
func (s *Service) timeout(cfg *config.Loaded) time.Duration {
	switch {
	case s.Timeout > 0:
		return s.Timeout
	case cfg.RunDeadline() > 0:
		return cfg.RunDeadline()
	}
	return s.Interval
}

// runRequest runs req; trigger (interval or events) and the number of events
// go to the log line.
func (s *Service) runRequest(ctx context.Context, req engine.Request, trigger string, nEvents int) Outcome {
	s.Metrics.Started()
	start := time.Now()
	if s.Fence != nil {
		var unfence context.CancelFunc
		ctx, unfence = s.Fence(ctx)
		defer unfence()
	}
	ctx, tally := waldur.WithTally(ctx)
	var rep *report.Run
	cfg, err := s.Load()
	var eng *engine.Engine
	if err == nil {
		eng, err = s.Engine(cfg)
	}
	if err == nil {
		// One dead endpoint costs one stage of the run (internal/unreachable).
		// The deadline's context is a child of the fence's: a lost lease is
		// the stop the run reports.
		runCtx, cancel := stop.WithDeadline(unreachable.Track(ctx), s.timeout(cfg))
		out := eng.Run(runCtx, req)
		cancel()
		err, rep = s.Finish(cfg, out), out.Report
	} else {
		// The config or the templates could not be loaded: a failed run without stages.
		rep = report.New("serve", version.String(), false, start)
		rep.Finish(failure.ExitCode(err), time.Now())
	}
	result := ResultOf(rep.ExitCode)
	s.Metrics.Observe(metrics.Run{Report: rep, Result: result, Waldur: tally.Stats()})
	s.keep(rep, cfg)
	s.logRun(rep, result, err, trigger, nEvents, len(req.Resources))
	return Outcome{Started: rep.Started, Finished: rep.Finished, ExitCode: rep.ExitCode, Result: result}
}

// logRun writes the line that ends a run.
func (s *Service) logRun(rep *report.Run, result string, err error, trigger string, nEvents, nResources int) {
	args := []any{"result", result, "exit_code", rep.ExitCode, "duration", rep.Finished.Sub(rep.Started).Round(time.Millisecond).String(),
		"changes", countsLine(rep), "trigger", trigger}
	if trigger == "events" {
		args = append(args, "events", nEvents, "resources", nResources)
	}
	if rep.Commit != "" {
		args = append(args, "commit", rep.Commit)
	}
	switch {
	case result == metrics.ResultFailed:
		s.log().Error("run finished", append(args, "error", errorText(err))...)
	case result == metrics.ResultPartial:
		s.log().Warn("run finished", append(args, "warning", errorText(err))...)
	default:
		s.log().Info("run finished", args...)
	}
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// countsLine sums the changes of a report up on one line, stage by stage in
// the order they first appear: "render: +1 =14, waldur: ~2, git: +1".
func countsLine(rep *report.Run) string {
	var stages []string
	by := map[string][]changeset.Entry{}
	for _, e := range rep.Changes {
		if _, seen := by[e.Stage]; !seen {
			stages = append(stages, e.Stage)
		}
		by[e.Stage] = append(by[e.Stage], e)
	}
	parts := make([]string, 0, len(stages))
	for _, st := range stages {
		parts = append(parts, st+": "+changeset.Set{Entries: by[st]}.Summary())
	}
	return strings.Join(parts, ", ")
}

// ResultOf is the result label of an exit code (metrics.ResultOK, …).
func ResultOf(code int) string {
	switch code {
	case failure.ExitOK:
		return metrics.ResultOK
	case failure.ExitPartial:
		return metrics.ResultPartial
	}
	return metrics.ResultFailed
}
