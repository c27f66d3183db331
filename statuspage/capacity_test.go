package statuspage_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/status"
	"github.com/waldur/waldur-gitops/statuspage"
)

// The page shows the orders that wait for capacity, with their cause, and
// every pool's account: how much of what it may sell is sold, and an
// unreadable pool as unknown.
func TestPageShowsCapacity(t *testing.T) {
	rep := report.New("serve", "test", false, t0)
	rep.Stages = []report.Stage{{Name: "approve"}, {Name: "render"}, {Name: "capacity"}}
	rep.Capacity = []report.PoolLine{
		{Pool: "gpu-east", Resource: "nvidia.com/gpu", Allocatable: 16, Overcommit: 1, Committed: 12, Waiting: 8, Free: 4},
		{Pool: "gpu-east", Resource: "memory", Allocatable: 128 << 30, Overcommit: 1, Committed: 64 << 30, Free: 64 << 30},
		{Pool: "west", Error: "cluster /k/west.yaml: list nodes: forbidden"},
	}
	rep.Add(changeset.Set{Entries: []changeset.Entry{
		{Stage: "approve", Kind: "Order", Subject: "0d5e Create hpc/cluster/waldur-a", Orders: []string{"0d5e"}, Action: changeset.Skip,
			Reason: "pending: would oversell pool gpu-east: nvidia.com/gpu requested 8, 4 free of 16", Cause: changeset.CauseCapacityExceeded, Since: t0.Add(-time.Hour)},
	}})
	rep.Finish(0, t0.Add(time.Second))
	h := status.NewHistory(0)
	h.Add(status.Record{Report: rep})
	p := &statuspage.Page{Runs: h, Now: func() time.Time { return t0.Add(time.Minute) },
		State: func() (status.Serving, []events.OfferingState) { return status.Serving{Health: "ok", Since: t0}, nil }}
	_, body := get(t, p.Handler(), "/", "")
	for _, want := range []string{`id="capacity"`, "capacity_exceeded", "0d5e Create hpc/cluster/waldur-a", "nvidia.com/gpu", ">75%<", ">16<", ">8<", ">4<", "64Gi", "unknown: cluster /k/west.yaml: list nodes: forbidden"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	var text strings.Builder
	if err := status.WriteText(&text, status.Build(h.Records(), status.Options{Now: t0})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "gpu-east nvidia.com/gpu: 75% sold; allocatable 16 × overcommit 1, committed 12, requested by waiting orders 8, free 4") {
		t.Errorf("the text does not show the pool:\n%s", text.String())
	}
}
