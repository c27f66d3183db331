// Package metrics holds the Prometheus metrics of waldur-gitops: a Recorder
// with its own registry, fed the report of every run, for the /metrics
// endpoint of serve and for the Pushgateway push of one-shot commands.
package metrics

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// Namespace prefixes every metric name.
const Namespace = "waldur_gitops"

// Results of a run, the values of the result label.
const (
	ResultOK      = "ok"      // exit code 0
	ResultPartial = "partial" // some resources were skipped, the rest went through
	ResultFailed  = "failed"  // any other exit code
)

// Results lists every result, in the order they are documented.
var Results = []string{ResultOK, ResultPartial, ResultFailed}

// APIs are the values of the api label.
const (
	APIWaldur   = "waldur"
	APIKeycloak = "keycloak"
)

// Run is what the Recorder needs to know of one finished run.
type Run struct {
	// Report is the finished run report: times, stages, changes, exit code.
	Report *report.Run
	// Result is ResultOK, ResultPartial or ResultFailed.
	Result string
	// Waldur is the Waldur API traffic of the run (all clients together).
	Waldur waldur.CallStats
}

// Recorder holds the collectors, registered on its own registry (never the
// global one). Its methods are safe for concurrent use.
type Recorder struct {
	reg *prometheus.Registry

	lastSuccess   *prometheus.GaugeVec
	lastRun       prometheus.Gauge
	lastStart     prometheus.Gauge
	lastExit      prometheus.Gauge
	lastDuration  prometheus.Gauge
	inProgress    prometheus.Gauge
	runs          *prometheus.CounterVec
	stageDuration *prometheus.GaugeVec
	stageFailed   *prometheus.GaugeVec
	lastChanges   *prometheus.GaugeVec
	changes       *prometheus.CounterVec
	skipped       *prometheus.GaugeVec
	apiRequests   *prometheus.CounterVec
	apiErrors     *prometheus.CounterVec
	kcWrites      *prometheus.CounterVec
	review        *prometheus.GaugeVec
	u             *unattended
	offboarded    *prometheus.HistogramVec
	offboarding   *prometheus.GaugeVec
	capacity      *capacity
}

// New builds a Recorder for a build of version and registers its collectors.
// Every result of runs_total starts at 0 so that rate() sees the first run.
func New(version string) *Recorder {
	name := func(n string) string { return Namespace + "_" + n }
	r := &Recorder{
		reg: prometheus.NewRegistry(),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("last_success_timestamp_seconds"),
			Help: "Unix time the last run with result ok or partial ended; absent until one has."}, nil),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: name("last_run_timestamp_seconds"),
			Help: "Unix time the last run ended, whatever its result; 0 before the first."}),
		lastStart: prometheus.NewGauge(prometheus.GaugeOpts{Name: name("last_run_start_timestamp_seconds"),
			Help: "Unix time the last finished run started; 0 before the first."}),
		lastExit: prometheus.NewGauge(prometheus.GaugeOpts{Name: name("last_run_exit_code"),
			Help: "Exit code of the last run (0 ok, 3 partial, see the README for the others)."}),
		lastDuration: prometheus.NewGauge(prometheus.GaugeOpts{Name: name("last_run_duration_seconds"),
			Help: "Wall time of the last run."}),
		inProgress: prometheus.NewGauge(prometheus.GaugeOpts{Name: name("run_in_progress"),
			Help: "1 while a run is going on (serve), else 0."}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("runs_total"),
			Help: "Runs finished, by result (ok, partial, failed)."}, []string{"result"}),
		stageDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("stage_duration_seconds"),
			Help: "Wall time of each stage of the last run; stages that did not run are absent."}, []string{"stage"}),
		stageFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("stage_failed"),
			Help: "1 for each stage of the last run that failed, 0 for those that succeeded."}, []string{"stage"}),
		lastChanges: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("last_run_objects"),
			Help: "Objects of the last run by stage, kind and action (unchanged and skip included)."}, []string{"stage", "kind", "action"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("objects_changed_total"),
			Help: "Objects created, updated or deleted, by stage, kind and action, summed over runs (skips are in last_run_skipped)."}, []string{"stage", "kind", "action"}),
		skipped: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("last_run_skipped"),
			Help: "Resources, orders and Keycloak items the last run skipped, by stage and reason class."}, []string{"stage", "class"}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("api_requests_total"),
			Help: "HTTP requests sent to Waldur and Keycloak by call kind, retries included."}, []string{"api", "call"}),
		apiErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("api_errors_total"),
			Help: "Waldur and Keycloak calls that finally failed (transport error or 4xx/5xx after retries), by call kind."}, []string{"api", "call"}),
		kcWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("keycloak_writes_total"),
			Help: "Keycloak writes that took effect, by call kind: each change once, however many attempts it took."}, []string{"call"}),
		review: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("review_branch_opened_timestamp_seconds"),
			Help: "Review branches open after the last run, by branch: when the branch's commit was made (0 when unknown)."}, []string{"branch"}),
		offboarded: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name("offboarding_seconds"),
			Help:    "Offering users set Deleted, by offering: from when the deletion request was first seen to when access ended (the removal proved plus the realm's token lifespan).",
			Buckets: []float64{60, 300, 600, 900, 1800, 3600, 7200, 21600, 86400}}, []string{"offering"}),
		offboarding: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("offboarding_users"),
			Help: "Offering users Waldur asked to delete that the last run worked on, by offering and the state it left them in (Deleting: in flight)."}, []string{"offering", "state"}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("build_info"),
		Help: "Always 1; the labels name the version and the Go release of the build."}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	for _, res := range Results {
		r.runs.WithLabelValues(res)
	}
	r.reg.MustRegister(build, r.lastSuccess, r.lastRun, r.lastStart, r.lastExit, r.lastDuration, r.inProgress, r.runs,
		r.stageDuration, r.stageFailed, r.lastChanges, r.changes, r.skipped, r.apiRequests, r.apiErrors, r.kcWrites, r.review,
		r.offboarded, r.offboarding)
	r.u = newUnattended(r.reg)
	r.capacity = newCapacity(r.reg)
	return r
}

// Registry is the registry the collectors are on, to serve or push.
func (r *Recorder) Registry() *prometheus.Registry { return r.reg }

// Started marks a run as going on.
func (r *Recorder) Started() { r.inProgress.Set(1) }

// Observe takes in a finished run: the last-run gauges are replaced by this
// run's values, the counters grow.
func (r *Recorder) Observe(run Run) {
	rep := run.Report
	r.inProgress.Set(0)
	r.runs.WithLabelValues(run.Result).Inc()
	end := rep.Finished
	r.lastRun.Set(unix(end))
	r.lastStart.Set(unix(rep.Started))
	r.lastExit.Set(float64(rep.ExitCode))
	r.lastDuration.Set(end.Sub(rep.Started).Seconds())
	if run.Result == ResultOK || run.Result == ResultPartial {
		r.lastSuccess.WithLabelValues().Set(unix(end))
	}

	r.stageDuration.Reset()
	r.stageFailed.Reset()
	for _, st := range rep.Stages {
		r.stageDuration.WithLabelValues(st.Name).Set(st.DurationSeconds)
		failed := 0.0
		if st.Error != "" {
			failed = 1
		}
		r.stageFailed.WithLabelValues(st.Name).Set(failed)
	}

	r.lastChanges.Reset()
	r.skipped.Reset()
	for _, e := range rep.Changes {
		r.lastChanges.WithLabelValues(e.Stage, e.Kind, string(e.Action)).Inc()
		switch e.Action {
		case changeset.Unchanged:
		case changeset.Skip:
			r.skipped.WithLabelValues(e.Stage, SkipClass(e)).Inc()
		default:
			r.changes.WithLabelValues(e.Stage, e.Kind, string(e.Action)).Inc()
		}
	}

	r.u.observe(run)
	r.capacity.observe(rep)
	r.review.Reset()
	for _, b := range rep.ReviewBranches {
		r.review.WithLabelValues(b.Name).Set(unix(b.Opened))
	}

	r.observeOffboarding(rep)

	for kind, n := range run.Waldur.Requests {
		r.apiRequests.WithLabelValues(APIWaldur, kind).Add(float64(n))
	}
	for kind, n := range run.Waldur.Errors {
		r.apiErrors.WithLabelValues(APIWaldur, kind).Add(float64(n))
	}
	for _, st := range rep.Stages {
		if st.Name != keycloak.Stage {
			continue
		}
		for kind, n := range keycloak.Requests(st.Calls) {
			r.apiRequests.WithLabelValues(APIKeycloak, kind).Add(float64(n))
		}
		for kind, n := range keycloak.Errors(st.Calls) {
			r.apiErrors.WithLabelValues(APIKeycloak, kind).Add(float64(n))
		}
		for kind, n := range keycloak.WritesByKind(st.Calls) {
			r.kcWrites.WithLabelValues(kind).Add(float64(n))
		}
	}
}

// observeOffboarding takes in the run's offboarding records: the users it
// left in each state, and, for those a run that wrote set Deleted, the time
// from the request to the end of access.
func (r *Recorder) observeOffboarding(rep *report.Run) {
	r.offboarding.Reset()
	for _, o := range rep.Offboarding {
		r.offboarding.WithLabelValues(o.Offering, o.State).Inc()
		if !rep.DryRun && o.State == waldur.OfferingUserDeleted && !o.RequestedAt.IsZero() && !o.AccessEndedAt.IsZero() {
			r.offboarded.WithLabelValues(o.Offering).Observe(o.AccessEndedAt.Sub(o.RequestedAt).Seconds())
		}
	}
}

// unix is t as Prometheus timestamps go: seconds since the epoch, 0 for the
// zero time.
func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMilli()) / 1000
}
