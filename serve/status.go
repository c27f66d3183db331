package serve

import (
	"net/http"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/status"
	"github.com/waldur/waldur-gitops/statuspage"
)

// StatusState is serve's state as the status page shows it: the health
// word, whether a run is going on, and the event consumers' states.
func (h *Health) StatusState() (status.Serving, []events.OfferingState) {
	c := h.Check()
	sv := status.Serving{Health: c.Status, Since: c.Since, Running: c.Running, RunStarted: c.RunStarted, LastSuccess: c.LastSuccess}
	ev, _ := c.Events.([]events.OfferingState)
	return sv, ev
}

// WithStatus serves the status page's paths from page and every other path
// (/healthz, /livez, /metrics, …) from h, on the one --listen port.
func WithStatus(h, page http.Handler) http.Handler {
	mux := http.NewServeMux()
	for _, p := range statuspage.Paths {
		mux.Handle(p, page)
	}
	mux.Handle("/", h)
	return mux
}

// WithStatusPage keeps the service's runs and serves the status page
// beside h (/healthz, /livez, /metrics): its commit links come from each
// run's config, its token from cfg's serve.status_token_file (read at every
// request). It also sets the interval the alerts compare the last success
// with.
func (s *Service) WithStatusPage(h http.Handler, health *Health, cfg *config.Loaded) http.Handler {
	s.Runs = status.NewHistory(status.Kept)
	s.Metrics.SetInterval(s.Interval)
	page := &statuspage.Page{Runs: s.Runs, State: health.StatusState, Token: cfg.Serve.StatusToken, Leadership: s.Leadership, Log: s.Log}
	return WithStatus(h, page.Handler())
}

// keep adds a finished run to the runs the status page shows; cfg is nil
// when the config could not be loaded.
func (s *Service) keep(rep *report.Run, cfg *config.Loaded) {
	if s.Runs == nil {
		return
	}
	rec := status.Record{Report: rep}
	if cfg != nil {
		rec.Backends = map[string]string{}
		for _, o := range cfg.Offerings {
			rec.Backends[o.DirName()] = o.BackendType
		}
		rec.CommitURL = cfg.Serve.CommitURL
	}
	s.Runs.Add(rec)
}
