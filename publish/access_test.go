package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestAccessGuard: every team answering empty would strip every binding and
// ManagedNamespace user in one commit: refused like a mass deletion, allowed
// with AllowMassPrune; one member leaving passes.
func TestAccessGuard(t *testing.T) {
	e, src, dir := gitEngine(t, guard.DefaultOptions())
	st := src.st
	ctx := context.Background()
	if out := e.Run(ctx, engine.Request{Command: "sync"}); out.Err != nil {
		t.Fatal(out.Err)
	}
	// One member leaves one team: a small change, it goes through.
	full := st.Offerings
	one := cloneTeams(full)
	for i := range one {
		if one[i].Name == "OKD projects" {
			for p, team := range one[i].Teams {
				one[i].Teams[p] = team[1:]
				break
			}
		}
	}
	src.st = &waldur.State{Offerings: one}
	if out := e.Run(ctx, engine.Request{Command: "sync"}); out.Err != nil || out.Report.Commit == "" {
		t.Fatalf("one member leaving: %v, commit %q", out.Err, out.Report.Commit)
	}
	head := gittest.Head(t, dir, "main")

	empty := cloneTeams(full)
	for i := range empty {
		for p := range empty[i].Teams {
			empty[i].Teams[p] = nil
		}
	}
	src.st = &waldur.State{Offerings: empty}
	out := e.Run(ctx, engine.Request{Command: "sync"})
	var ae *guard.AccessError
	if failure.ExitCode(out.Err) != failure.ExitGuard || !errors.As(out.Err, &ae) || gittest.Head(t, dir, "main") != head {
		t.Fatalf("every team empty: exit %d (%v), want the guard and no commit", failure.ExitCode(out.Err), out.Err)
	}
	if !strings.Contains(out.Err.Error(), "--allow-mass-prune") || ae.Removed == 0 || ae.Removed > ae.Existing {
		t.Errorf("refusal: %v", out.Err)
	}
	if out := e.Run(ctx, engine.Request{Command: "sync", AllowMassPrune: true}); out.Err != nil || out.Report.Commit == "" {
		t.Errorf("with AllowMassPrune: %v, commit %q", out.Err, out.Report.Commit)
	}
}

// cloneTeams copies the offerings with their own team maps.
func cloneTeams(in []waldur.OfferingState) []waldur.OfferingState {
	out := make([]waldur.OfferingState, len(in))
	for i, o := range in {
		teams := map[waldur.UUID][]waldur.TeamMember{}
		for p, team := range o.Teams {
			teams[p] = append([]waldur.TeamMember(nil), team...)
		}
		o.Teams = teams
		out[i] = o
	}
	return out
}
