// Package serve runs the sync cycle as a long-lived process: a Loop that
// starts one run at a time on a jittered interval and stops gracefully, the
// Election that lets one of several replicas lead on a Lease, the Health
// state that /healthz, /livez and /readyz report, and the HTTP handler that
// also serves the Prometheus metrics.
package serve

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Results of a run, as Outcome.Result holds them.
const (
	ResultOK      = "ok"
	ResultPartial = "partial"
	ResultFailed  = "failed"
)

// Outcome is the end of one run.
type Outcome struct {
	Started, Finished time.Time
	// ExitCode is the code sync would have exited with.
	ExitCode int
	// Result is ResultOK, ResultPartial or ResultFailed.
	Result string
}

// Health follows the runs of a Loop and judges them. A process is live while
// some run ended (or, before the first, the process started) less than
// StaleAfter ago; it is healthy when it is live and the last run that ended
// did not fail. It is safe for concurrent use.
type Health struct {
	mu         sync.Mutex
	since      time.Time
	staleAfter time.Duration
	now        func() time.Time

	running     bool
	runStarted  time.Time
	last        *Outcome
	lastSuccess time.Time
	events      func() any
	role        *Role
	stopping    bool
}

// Role is a replica's place in the leader election, as the status reports it.
type Role struct {
	// Identity is this replica's.
	Identity string `json:"identity"`
	// Leader is true while this replica leads.
	Leader bool `json:"leader"`
	// LeaderIdentity is the leader's identity, "" while none is known.
	LeaderIdentity string `json:"leader_identity,omitempty"`
	// Since is when this replica last became the leader or a standby.
	Since time.Time `json:"since"`
}

// Elect makes the status carry the election's role, starting as a standby
// named identity: /healthz then answers "standby" (200) until SetRole makes
// it the leader.
func (h *Health) Elect(identity string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.role = &Role{Identity: identity, Since: h.now()}
}

// SetRole records whether this replica leads and who does. A replica that
// becomes the leader counts its staleness from then, however long it stood
// by. Without Elect (and on a nil Health) it does nothing.
func (h *Health) SetRole(leader bool, leaderIdentity string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.role == nil {
		return
	}
	if h.role.Leader != leader {
		h.role.Since = h.now()
	}
	h.role.Leader, h.role.LeaderIdentity = leader, leaderIdentity
}

// Stopping records that the process is stopping: /readyz answers 503 from
// then on.
func (h *Health) Stopping() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopping = true
}

// ReportEvents makes the status carry f's answer as "events" (the event
// consumer's state); it does not change healthy or live, because the
// interval's runs go on without events.
func (h *Health) ReportEvents(f func() any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = f
}

// NewHealth starts following at since; staleAfter is how long the process may
// go without a run ending before it counts as stuck. now is the clock (nil:
// time.Now).
func NewHealth(since time.Time, staleAfter time.Duration, now func() time.Time) *Health {
	if now == nil {
		now = time.Now
	}
	return &Health{since: since, staleAfter: staleAfter, now: now}
}

// Begin records that a run started at t.
func (h *Health) Begin(t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running, h.runStarted = true, t
}

// End records a finished run.
func (h *Health) End(o Outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running = false
	h.last = &o
	if o.Result != ResultFailed {
		h.lastSuccess = o.Finished
	}
}

// Status is what /healthz, /livez and /readyz answer.
type Status struct {
	// Status is ok, starting (no run ended yet), failing (the last run
	// failed), stale (no run ended for longer than StaleAfterSeconds) or,
	// with leader election, standby (another replica leads).
	Status string `json:"status"`
	// Healthy decides /healthz: 200 when true, else 503.
	Healthy bool `json:"healthy"`
	// Live decides /livez: false only when stale.
	Live bool `json:"live"`
	// Ready decides /readyz: live and not stopping.
	Ready             bool       `json:"ready"`
	Since             time.Time  `json:"serving_since"`
	StaleAfterSeconds float64    `json:"stale_after_seconds"`
	Running           bool       `json:"running"`
	RunStarted        *time.Time `json:"run_started,omitempty"`
	LastRun           *LastRun   `json:"last_run,omitempty"`
	LastSuccess       *time.Time `json:"last_success,omitempty"`
	// Events is the event consumer's state, when serve consumes events.
	Events any `json:"events,omitempty"`
	// LeaderElection is this replica's role, with --leader-elect.
	LeaderElection *Role `json:"leader_election,omitempty"`
}

// LastRun describes the last run that ended.
type LastRun struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Result   string    `json:"result"`
	ExitCode int       `json:"exit_code"`
	// AgeSeconds is the time since it ended.
	AgeSeconds float64 `json:"age_seconds"`
}

// Check judges the runs so far.
func (h *Health) Check() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	s := Status{Since: h.since.UTC(), StaleAfterSeconds: h.staleAfter.Seconds(), Running: h.running}
	ref := h.since
	if h.running {
		t := h.runStarted.UTC()
		s.RunStarted = &t
	}
	if !h.lastSuccess.IsZero() {
		t := h.lastSuccess.UTC()
		s.LastSuccess = &t
	}
	if o := h.last; o != nil {
		ref = o.Finished
		s.LastRun = &LastRun{Started: o.Started.UTC(), Finished: o.Finished.UTC(), Result: o.Result, ExitCode: o.ExitCode,
			AgeSeconds: now.Sub(o.Finished).Seconds()}
	}
	if h.events != nil {
		s.Events = h.events()
	}
	standby := false
	if h.role != nil {
		r := *h.role
		r.Since = r.Since.UTC()
		s.LeaderElection = &r
		standby = !r.Leader
		if r.Since.After(ref) {
			ref = r.Since // a term's first run gets stale-after, as the first run after a start does
		}
	}
	s.Live = standby || now.Sub(ref) <= h.staleAfter
	s.Ready = s.Live && !h.stopping
	switch {
	case standby:
		s.Status, s.Healthy = "standby", true
	case !s.Live:
		s.Status = "stale"
	case h.last == nil:
		s.Status, s.Healthy = "starting", true
	case h.last.Result == ResultFailed:
		s.Status = "failing"
	default:
		s.Status, s.Healthy = "ok", true
	}
	return s
}

// Handler serves /healthz (200 when healthy, else 503), /livez (200 unless
// stale, else 503), /readyz (200 unless stale or stopping, else 503), all as
// JSON, and /metrics from g in the Prometheus text format. A standby
// replica is healthy, live and ready.
func Handler(h *Health, g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		s := h.Check()
		writeStatus(w, s, s.Healthy)
	})
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		s := h.Check()
		writeStatus(w, s, s.Live)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		s := h.Check()
		writeStatus(w, s, s.Ready)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return mux
}

func writeStatus(w http.ResponseWriter, s Status, good bool) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	code := http.StatusOK
	if !good {
		code = http.StatusServiceUnavailable
	}
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s) // the client went away: nothing to do
}
