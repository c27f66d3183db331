package metrics_test

import (
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/report"
)

// orderRun is a run at start whose orders wait for the given causes (order
// UUID → cause), ending with code.
func orderRun(start time.Time, code int, waiting map[string]changeset.Cause) metrics.Run {
	rep := report.New("serve", "test", false, start)
	var cs changeset.Set
	for id, c := range waiting {
		// The approve and orders stages may both list an order: it counts once.
		for _, st := range []string{"approve", "orders"} {
			e := changeset.Entry{Stage: st, Kind: metrics.OrderKind, Subject: id + " Create a/cluster/x", Action: changeset.Skip, Orders: []string{id}, Cause: c}
			if id == "created-2h-ago" {
				e.Since = start.Add(-2 * time.Hour)
			}
			cs.Add(e)
		}
	}
	rep.Add(cs)
	rep.Finish(code, start.Add(time.Second))
	res := metrics.ResultOK
	switch code {
	case 0:
	case 3:
		res = metrics.ResultPartial
	default:
		res = metrics.ResultFailed
	}
	return metrics.Run{Report: rep, Result: res}
}

// TestUnattendedMetrics follows the series the example alerts read over a
// sequence of runs: every labelled series from the start, failures in a
// row, the guard's refusals, the waiting orders and their age, leadership.
func TestUnattendedMetrics(t *testing.T) {
	r := metrics.New("test")
	now := t0
	r.SetClock(func() time.Time { return now })
	start := []sample{
		{name: "waldur_gitops_leader", want: 1},
		{name: "waldur_gitops_leader_transitions_total", want: 0},
		{name: "waldur_gitops_consecutive_failed_runs", want: 0},
		{name: "waldur_gitops_last_run_guard_refused", want: 0},
		{name: "waldur_gitops_guard_refusals_total", want: 0},
		{name: "waldur_gitops_interval_seconds", absent: true},
	}
	for _, c := range metrics.WaitingCauses {
		start = append(start,
			sample{name: "waldur_gitops_orders_waiting", labels: map[string]string{"cause": c}, want: 0},
			sample{name: "waldur_gitops_order_oldest_waiting_seconds", labels: map[string]string{"cause": c}, want: 0})
	}
	check(t, families(t, r.Registry()), start)

	steps := []struct {
		name    string
		code    int
		waiting map[string]changeset.Cause
		after   time.Duration
		want    []sample
	}{
		{name: "two orders start waiting", code: 3, waiting: map[string]changeset.Cause{"o1": changeset.CauseAwaitingApproval, "o2": changeset.CauseAwaitingReview},
			want: []sample{
				{name: "waldur_gitops_orders_waiting", labels: map[string]string{"cause": "awaiting_approval"}, want: 1},
				{name: "waldur_gitops_orders_waiting", labels: map[string]string{"cause": "awaiting_review"}, want: 1},
				{name: "waldur_gitops_order_oldest_waiting_seconds", labels: map[string]string{"cause": "awaiting_review"}, want: 0},
			}},
		{name: "one still waits after 90 minutes, a new one with an unknown cause", code: 6, after: 90 * time.Minute,
			waiting: map[string]changeset.Cause{"o2": changeset.CauseAwaitingReview, "o3": changeset.CauseTemplate},
			want: []sample{
				{name: "waldur_gitops_orders_waiting", labels: map[string]string{"cause": "awaiting_approval"}, want: 0},
				{name: "waldur_gitops_order_oldest_waiting_seconds", labels: map[string]string{"cause": "awaiting_review"}, want: 5400},
				{name: "waldur_gitops_orders_waiting", labels: map[string]string{"cause": "other"}, want: 1},
				{name: "waldur_gitops_consecutive_failed_runs", want: 1},
			}},
		{name: "the guard refuses", code: 7, after: time.Minute, want: []sample{
			{name: "waldur_gitops_consecutive_failed_runs", want: 2},
			{name: "waldur_gitops_last_run_guard_refused", want: 1},
			{name: "waldur_gitops_guard_refusals_total", want: 1},
			{name: "waldur_gitops_order_oldest_waiting_seconds", labels: map[string]string{"cause": "awaiting_review"}, want: 0},
		}},
		{name: "refused again", code: 7, after: time.Minute, want: []sample{
			{name: "waldur_gitops_consecutive_failed_runs", want: 3},
			{name: "waldur_gitops_guard_refusals_total", want: 2},
		}},
		{name: "an order that says when it was created ages from then", code: 3, after: time.Minute,
			waiting: map[string]changeset.Cause{"created-2h-ago": changeset.CauseNotApplied}, want: []sample{
				{name: "waldur_gitops_order_oldest_waiting_seconds", labels: map[string]string{"cause": "not_applied"}, want: 7200},
				{name: "waldur_gitops_consecutive_failed_runs", want: 0},
			}},
		{name: "an ok run ends the row", code: 0, after: time.Minute, want: []sample{
			{name: "waldur_gitops_consecutive_failed_runs", want: 0},
			{name: "waldur_gitops_last_run_guard_refused", want: 0},
			{name: "waldur_gitops_guard_refusals_total", want: 2},
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			now = now.Add(s.after)
			r.Observe(orderRun(now, s.code, s.waiting))
			check(t, families(t, r.Registry()), s.want)
		})
	}

	r.SetInterval(5 * time.Minute)
	r.SetLeader(false)
	r.SetLeader(false)
	check(t, families(t, r.Registry()), []sample{
		{name: "waldur_gitops_interval_seconds", want: 300},
		{name: "waldur_gitops_leader", want: 0},
		{name: "waldur_gitops_leader_transitions_total", want: 1},
	})
	r.SetLeader(true)
	check(t, families(t, r.Registry()), []sample{
		{name: "waldur_gitops_leader", want: 1},
		{name: "waldur_gitops_leader_transitions_total", want: 2},
	})
}
