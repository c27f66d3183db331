package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waldur/waldur-gitops/report"
)

// CapacityStage is the name of the stage that reports the capacity pools.
const CapacityStage = "capacity"

// capacity holds the gauges of every capacity pool's account, by pool and
// resource, as the last run that reached the capacity stage left them.
type capacity struct {
	allocatable, overcommit, committed, waiting, free *prometheus.GaugeVec
	unreadable                                        *prometheus.GaugeVec
}

func newCapacity(reg *prometheus.Registry) *capacity {
	gauge := func(n, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: Namespace + "_capacity_" + n, Help: help}, labels)
	}
	c := &capacity{
		allocatable: gauge("allocatable", "Total of a resource in a capacity pool: its counted Nodes' allocatable, or capacity.fixed (cores, bytes, devices).", "pool", "resource"),
		overcommit:  gauge("overcommit_ratio", "The ratio of a pool's total that may be sold (capacity.overcommit).", "pool", "resource"),
		committed:   gauge("committed", "What the rendered quotas of a pool's tenants reserve of a resource.", "pool", "resource"),
		waiting:     gauge("requested_waiting", "What the orders a pool left waiting would add of a resource.", "pool", "resource"),
		free:        gauge("free", "What a pool may still sell of a resource: allocatable × overcommit − committed, at least 0.", "pool", "resource"),
		unreadable:  gauge("unreadable", "1 for a pool whose cluster the last run could not read (its orders wait), else 0.", "pool"),
	}
	reg.MustRegister(c.allocatable, c.overcommit, c.committed, c.waiting, c.free, c.unreadable)
	return c
}

// observe replaces the gauges with a run's pools, when the run reached the
// capacity stage.
func (c *capacity) observe(rep *report.Run) {
	reached := false
	for _, st := range rep.Stages {
		reached = reached || st.Name == CapacityStage
	}
	if !reached {
		return
	}
	for _, g := range []*prometheus.GaugeVec{c.allocatable, c.overcommit, c.committed, c.waiting, c.free, c.unreadable} {
		g.Reset()
	}
	for _, l := range rep.Capacity {
		if l.Error != "" {
			c.unreadable.WithLabelValues(l.Pool).Set(1)
			continue
		}
		c.unreadable.WithLabelValues(l.Pool).Set(0)
		c.allocatable.WithLabelValues(l.Pool, l.Resource).Set(l.Allocatable)
		c.overcommit.WithLabelValues(l.Pool, l.Resource).Set(l.Overcommit)
		c.committed.WithLabelValues(l.Pool, l.Resource).Set(l.Committed)
		c.waiting.WithLabelValues(l.Pool, l.Resource).Set(l.Waiting)
		c.free.WithLabelValues(l.Pool, l.Resource).Set(l.Free)
	}
}
