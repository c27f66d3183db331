package metrics_test

import (
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/report"
)

// capacityRun is a run that reached the capacity stage (or not) with the
// given pools.
func capacityRun(start time.Time, reached bool, pools ...report.PoolLine) metrics.Run {
	rep := report.New("serve", "test", false, start)
	if reached {
		rep.Stages = append(rep.Stages, report.Stage{Name: metrics.CapacityStage})
	}
	rep.Capacity = pools
	rep.Finish(0, start.Add(time.Second))
	return metrics.Run{Report: rep, Result: metrics.ResultOK}
}

// The capacity gauges follow the last run that reached the capacity stage:
// a pool's account per resource, an unreadable pool flagged, a pool gone
// from the config gone from the series.
func TestCapacityMetrics(t *testing.T) {
	r := metrics.New("test")
	gpu := map[string]string{"pool": "gpu-east", "resource": "nvidia.com/gpu"}
	steps := []struct {
		name    string
		reached bool
		pools   []report.PoolLine
		want    []sample
	}{
		{"a pool's account", true, []report.PoolLine{{Pool: "gpu-east", Resource: "nvidia.com/gpu", Allocatable: 16, Overcommit: 1, Committed: 12, Waiting: 8, Free: 4}}, []sample{
			{name: "waldur_gitops_capacity_allocatable", labels: gpu, want: 16},
			{name: "waldur_gitops_capacity_overcommit_ratio", labels: gpu, want: 1},
			{name: "waldur_gitops_capacity_committed", labels: gpu, want: 12},
			{name: "waldur_gitops_capacity_requested_waiting", labels: gpu, want: 8},
			{name: "waldur_gitops_capacity_free", labels: gpu, want: 4},
			{name: "waldur_gitops_capacity_unreadable", labels: map[string]string{"pool": "gpu-east"}, want: 0},
		}},
		{"a run that did not reach the stage keeps them", false, nil, []sample{
			{name: "waldur_gitops_capacity_committed", labels: gpu, want: 12},
		}},
		{"an unreadable pool", true, []report.PoolLine{{Pool: "gpu-east", Error: "list nodes: forbidden"}}, []sample{
			{name: "waldur_gitops_capacity_unreadable", labels: map[string]string{"pool": "gpu-east"}, want: 1},
			{name: "waldur_gitops_capacity_committed", labels: gpu, absent: true},
		}},
	}
	now := t0
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			now = now.Add(time.Minute)
			r.Observe(capacityRun(now, s.reached, s.pools...))
			check(t, families(t, r.Registry()), s.want)
		})
	}
}
