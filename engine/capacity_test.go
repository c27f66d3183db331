package engine_test

import (
	"context"
	"testing"

	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/engine/enginetest"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/report"
)

// The capacity stage runs after the render and fills the report's pools; a
// pool whose cluster cannot be read (a contained cluster failure) lets the
// later stages run and the run exits with the cluster failure's code.
func TestCapacityStage(t *testing.T) {
	lines := []report.PoolLine{{Pool: "gpu", Resource: "nvidia.com/gpu", Allocatable: 8, Overcommit: 1, Committed: 6, Free: 2}}
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"pools reported", nil, failure.ExitOK},
		{"a pool unreadable", failure.Contained(failure.Errorf(failure.ClassCluster, "capacity pool gpu: list nodes: forbidden")), failure.ExitCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakes(t)
			c := &enginetest.Capacity{Log: f.log, Lines: lines, Err: tc.err}
			s := engine.Seams{Source: f.source, Orders: f.orders, Capacity: c, Publisher: f.publisher, Identities: f.identities}
			out := engine.New(s, f.render, guard.DefaultOptions(), nil).Run(context.Background(), engine.Request{Command: "sync"})
			if got := failure.ExitCode(out.Err); got != tc.code {
				t.Errorf("exit %d, want %d: %v", got, tc.code, out.Err)
			}
			if got, want := f.log.String(), "source.read → orders.approve → capacity.report → publish → identities.reconcile → orders.finish"; got != want {
				t.Errorf("calls: %s\nwant:  %s", got, want)
			}
			if got := stageNames(out); got != "waldur approve render capacity fake keycloak orders" {
				t.Errorf("report stages: %s", got)
			}
			if len(out.Report.Capacity) != 1 || out.Report.Capacity[0].Free != 2 {
				t.Errorf("report pools: %+v", out.Report.Capacity)
			}
		})
	}
}
