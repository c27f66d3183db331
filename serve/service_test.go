package serve

import (
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/report"
)

// A run's result label follows its exit code; its log line sums the changes
// stage by stage in the order they first appear; its deadline is --timeout,
// else the interval when the config sets no run_timeout.
func TestServiceRunLabels(t *testing.T) {
	for code, want := range map[int]string{failure.ExitOK: metrics.ResultOK, failure.ExitPartial: metrics.ResultPartial, failure.ExitWaldur: metrics.ResultFailed} {
		if got := ResultOf(code); got != want {
			t.Errorf("exit %d: %s, want %s", code, got, want)
		}
	}
	rep := &report.Run{Changes: []changeset.Entry{
		{Stage: "render", Action: changeset.Create}, {Stage: "git", Action: changeset.Create}, {Stage: "render", Action: changeset.Unchanged},
	}}
	render := changeset.Set{Entries: []changeset.Entry{rep.Changes[0], rep.Changes[2]}}.Summary()
	git := changeset.Set{Entries: rep.Changes[1:2]}.Summary()
	if got, want := countsLine(rep), "render: "+render+", git: "+git; got != want {
		t.Errorf("counts %q, want %q", got, want)
	}
	cfg := &config.Loaded{Config: &config.Config{}}
	if got := (&Service{Interval: time.Minute}).timeout(cfg); got != time.Minute {
		t.Errorf("deadline %s, want the interval", got)
	}
	if got := (&Service{Timeout: time.Second, Interval: time.Minute}).timeout(cfg); got != time.Second {
		t.Errorf("deadline %s, want --timeout", got)
	}
}
