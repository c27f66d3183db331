package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/failure"
)

// OrderKind is the kind of the change-set entries of Waldur orders.
const OrderKind = "Order"

// CauseOther is the cause label of a waiting order whose entry carries a
// cause not in WaitingCauses.
const CauseOther = "other"

// WaitingCauses are the values of the cause label of the waiting-order
// metrics: why an order the last run saw is left as it is. Every value has
// a series from the start, so an alert sees 0 before the first wait.
var WaitingCauses = []string{
	string(changeset.CauseAwaitingApproval),
	string(changeset.CauseAwaitingReview),
	string(changeset.CauseQuotaHeld),
	string(changeset.CauseNotApplied),
	string(changeset.CauseCapacityExceeded),
	string(changeset.CauseCapacityUnknown),
	string(changeset.CauseUnsupportedOrder),
	string(changeset.CauseAPIFailure),
	CauseOther,
}

// unattended holds the metrics the example alerts and dashboard need beyond
// the run's own: leadership, failures in a row, the guard's refusals and the
// orders left waiting.
type unattended struct {
	mu          sync.Mutex
	now         func() time.Time
	failedInRow int
	waitingFrom map[string]time.Time // order UUID → first run that saw it waiting
	notLeader   bool

	leader       prometheus.Gauge
	transitions  prometheus.Counter
	interval     *prometheus.GaugeVec
	failed       prometheus.Gauge
	guardRefused prometheus.Gauge
	refusals     prometheus.Counter
	waiting      *prometheus.GaugeVec
	oldest       *prometheus.GaugeVec
}

func newUnattended(reg *prometheus.Registry) *unattended {
	name := func(n string) string { return Namespace + "_" + n }
	u := &unattended{
		now:         time.Now,
		waitingFrom: map[string]time.Time{},
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: name("leader"),
			Help: "1 while this process may run cycles (the leader, or the only replica), 0 while it stands by."}),
		transitions: prometheus.NewCounter(prometheus.CounterOpts{Name: name("leader_transitions_total"),
			Help: "Times this process became or stopped being the leader."}),
		interval: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("interval_seconds"),
			Help: "serve's --interval between the starts of two runs; absent for one-shot commands."}, nil),
		failed: prometheus.NewGauge(prometheus.GaugeOpts{Name: name("consecutive_failed_runs"),
			Help: "Runs in a row, up to the last, whose result was failed (0 after an ok or partial run)."}),
		guardRefused: prometheus.NewGauge(prometheus.GaugeOpts{Name: name("last_run_guard_refused"),
			Help: "1 when the deletion guard refused the last run (exit code 7), else 0."}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{Name: name("guard_refusals_total"),
			Help: "Runs the deletion guard refused."}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("orders_waiting"),
			Help: "Waldur orders the last run left waiting, by cause."}, []string{"cause"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name("order_oldest_waiting_seconds"),
			Help: "How long the longest-waiting order of each cause has been waiting, since its creation in Waldur (else since the first run of this process that saw it wait); 0 when none waits."}, []string{"cause"}),
	}
	u.leader.Set(1)
	for _, c := range WaitingCauses {
		u.waiting.WithLabelValues(c)
		u.oldest.WithLabelValues(c)
	}
	reg.MustRegister(u.leader, u.transitions, u.interval, u.failed, u.guardRefused, u.refusals, u.waiting, u.oldest)
	return u
}

// waitingCause is the cause label of a waiting order's entry.
func waitingCause(c changeset.Cause) string {
	if slices.Contains(WaitingCauses, string(c)) {
		return string(c)
	}
	return CauseOther
}

// observe takes in a finished run.
func (u *unattended) observe(run Run) {
	u.mu.Lock()
	defer u.mu.Unlock()
	rep := run.Report
	if run.Result == ResultFailed {
		u.failedInRow++
	} else {
		u.failedInRow = 0
	}
	u.failed.Set(float64(u.failedInRow))
	refused := 0.0
	if rep.ExitCode == failure.ExitGuard {
		refused = 1
		u.refusals.Inc()
	}
	u.guardRefused.Set(refused)

	now := u.now()
	count := map[string]int{}
	oldest := map[string]time.Time{}
	seen := map[string]bool{}
	for _, e := range rep.Changes {
		if e.Kind != OrderKind || e.Action != changeset.Skip || len(e.Orders) == 0 || seen[e.Orders[0]] {
			continue
		}
		id := e.Orders[0]
		seen[id] = true
		// The order's creation time when the entry has it (every run,
		// one-shot ones too, sees the same age), else the first run of
		// this process that saw it wait.
		from := e.Since
		if from.IsZero() {
			var ok bool
			if from, ok = u.waitingFrom[id]; !ok {
				from = now
			}
		}
		c := waitingCause(e.Cause)
		count[c]++
		if o, ok := oldest[c]; !ok || from.Before(o) {
			oldest[c] = from
		}
	}
	for id := range u.waitingFrom {
		if !seen[id] {
			delete(u.waitingFrom, id)
		}
	}
	for id := range seen {
		if _, ok := u.waitingFrom[id]; !ok {
			u.waitingFrom[id] = now
		}
	}
	for _, c := range WaitingCauses {
		u.waiting.WithLabelValues(c).Set(float64(count[c]))
		age := 0.0
		if o, ok := oldest[c]; ok {
			age = now.Sub(o).Seconds()
		}
		u.oldest.WithLabelValues(c).Set(age)
	}
}

// SetLeader records whether this process leads (serve's leader election;
// a process that does not elect is its own leader, the default). A change
// counts one transition.
func (r *Recorder) SetLeader(leader bool) {
	r.u.mu.Lock()
	defer r.u.mu.Unlock()
	if leader == r.u.notLeader {
		r.u.transitions.Inc()
	}
	r.u.notLeader = !leader
	v := 0.0
	if leader {
		v = 1
	}
	r.u.leader.Set(v)
}

// SetInterval records serve's interval between two runs.
func (r *Recorder) SetInterval(d time.Duration) {
	r.u.interval.WithLabelValues().Set(d.Seconds())
}

// SetClock replaces the clock the waiting orders' ages are read from (tests).
func (r *Recorder) SetClock(now func() time.Time) {
	r.u.mu.Lock()
	defer r.u.mu.Unlock()
	r.u.now = now
}
