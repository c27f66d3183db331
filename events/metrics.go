package events

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the consumer's Prometheus collectors.
type Metrics struct {
	// Received counts decoded events by object_type.
	Received *prometheus.CounterVec
	// Ignored counts events acked without a sync, by reason.
	Ignored *prometheus.CounterVec
	// Syncs counts the runs events started.
	Syncs prometheus.Counter
	// Latency is the time from a burst's first event to the end of its run.
	Latency prometheus.Histogram
	// Connected is 1 while an offering's consumer is subscribed.
	Connected *prometheus.GaugeVec
	// Reconnects counts an offering's connections after its first.
	Reconnects *prometheus.CounterVec
}

// NewMetrics makes the collectors, named below namespace, and registers
// them on reg (when not nil).
func NewMetrics(namespace string, reg prometheus.Registerer) *Metrics {
	n := func(s string) string { return namespace + "_events_" + s }
	m := &Metrics{
		Received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: n("received_total"),
			Help: "Waldur events received, by object type."}, []string{"object_type"}),
		Ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: n("ignored_total"),
			Help: "Waldur events acked without a sync, by reason (malformed, other_offering, not_actionable)."}, []string{"reason"}),
		Syncs: prometheus.NewCounter(prometheus.CounterOpts{Name: n("syncs_total"),
			Help: "Syncs triggered by events."}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: n("commit_latency_seconds"),
			Help:    "From the first event of a burst to the end of the sync it triggered (the commit pushed).",
			Buckets: []float64{0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 30, 60, 120}}),
		Connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: n("consumer_connected"),
			Help: "1 while the offering's event consumer is subscribed, else 0."}, []string{"offering"}),
		Reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: n("reconnects_total"),
			Help: "Reconnections of the event consumer after a lost or failed connection, by offering."}, []string{"offering"}),
	}
	if reg != nil {
		reg.MustRegister(m.Received, m.Ignored, m.Syncs, m.Latency, m.Connected, m.Reconnects)
	}
	return m
}

// SyncDone records a sync that a trigger started, ended at end.
func (m *Metrics) SyncDone(t Trigger, end time.Time) {
	if m == nil {
		return
	}
	m.Syncs.Inc()
	if !t.First.IsZero() {
		m.Latency.Observe(end.Sub(t.First).Seconds())
	}
}
