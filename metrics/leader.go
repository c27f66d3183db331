package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// leadership is serve's leader election in the metrics: whether this
// process leads, and how often that changed.
type leadership struct {
	mu        sync.Mutex
	notLeader bool

	leader      prometheus.Gauge
	transitions prometheus.Counter
}

// newLeadership registers the leadership metrics on reg. A process starts
// as its own leader: one that does not elect always is.
func newLeadership(reg prometheus.Registerer) *leadership {
	l := &leadership{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: Namespace + "_leader",
			Help: "1 while this process may run cycles (the leader, or the only replica), 0 while it stands by."}),
		transitions: prometheus.NewCounter(prometheus.CounterOpts{Name: Namespace + "_leader_transitions_total",
			Help: "Times this process became or stopped being the leader."}),
	}
	l.leader.Set(1)
	reg.MustRegister(l.leader, l.transitions)
	return l
}

// SetLeader records whether this process leads (serve's leader election;
// a process that does not elect is its own leader, the default). A change
// counts one transition, so a replica that starts as a standby counts one.
func (r *Recorder) SetLeader(leader bool) {
	l := r.lead
	l.mu.Lock()
	defer l.mu.Unlock()
	if leader == l.notLeader {
		l.transitions.Inc()
	}
	l.notLeader = !leader
	v := 0.0
	if leader {
		v = 1
	}
	l.leader.Set(v)
}
