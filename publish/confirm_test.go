package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/guard/confirm"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/waldur"
)

// gitEngine is an engine over the bundled example whose Source is answers
// and whose publisher commits to a new bare repository at dir.
func gitEngine(t *testing.T, g guard.Options) (*engine.Engine, *answers, string) {
	t.Helper()
	cfg, st, dir := exampleRepo(t, 0)
	src := &answers{st: st}
	return engineOver(t, cfg, src, nil, g), src, dir
}

// answers is a Source over the example state that can drop resources from
// its answer, and a Confirmer that answers from a table.
type answers struct {
	st      *waldur.State
	drop    map[waldur.UUID]bool
	direct  map[waldur.UUID]confirm.Gone // absent: the direct read finds the resource
	err     error
	offered []waldur.UUID
}

func (a *answers) Read(context.Context) (*waldur.State, error) {
	st := &waldur.State{}
	for _, o := range a.st.Offerings {
		o.Resources = append([]waldur.Resource(nil), o.Resources...)
		for i := 0; i < len(o.Resources); i++ {
			if a.drop[o.Resources[i].UUID] {
				o.Resources = append(o.Resources[:i], o.Resources[i+1:]...)
				i--
			}
		}
		st.Offerings = append(st.Offerings, o)
	}
	return st, nil
}

func (a *answers) Confirm(_ context.Context, _ string, ids []waldur.UUID) (map[waldur.UUID]confirm.Gone, error) {
	a.offered = append(a.offered, ids...)
	gone := map[waldur.UUID]confirm.Gone{}
	for _, id := range ids {
		if g, ok := a.direct[id]; ok {
			gone[id] = g
		}
	}
	return gone, a.err
}

// TestNeverDeleteOnDoubt: a tenant whose resource is missing from the
// listing leaves Git only when Waldur positively says so (a direct read
// answering 404, or Terminated); found alive, or unreadable, it is kept and
// reported, and the deletion guard counts a 404 but not a termination.
func TestNeverDeleteOnDoubt(t *testing.T) {
	// Tenants stay as long as any guard allows: a small site.
	e, src, dir := gitEngine(t, guard.Options{MaxFraction: 0.5, MinCount: 3})
	st := src.st
	ctx := context.Background()
	if out := e.Run(ctx, engine.Request{Command: "sync"}); out.Err != nil {
		t.Fatal(out.Err)
	}
	var plain []waldur.Resource
	for _, o := range st.Offerings {
		if o.Name == "Plain namespaces" {
			plain = o.Resources
		}
	}
	has := func(id waldur.UUID) bool {
		for path, data := range gittest.Files(t, dir, "main") {
			if strings.HasSuffix(path, "/kustomization.yaml") && strings.Contains(data, string(id)) {
				return true
			}
		}
		return false
	}
	alive, notFound := plain[0].UUID, plain[1].UUID

	for _, tc := range []struct {
		name     string
		direct   map[waldur.UUID]confirm.Gone
		err      error
		code     int
		kept     bool
		reported string
	}{
		{"found alive by a direct read", nil, nil, failure.ExitPartial, true, "a direct read finds it"},
		{"unreadable", nil, errors.New("waldur down"), failure.ExitPartial, true, "reading it failed"},
		{"terminated", map[waldur.UUID]confirm.Gone{alive: {Why: "Waldur reports it Terminated", Terminated: true}}, nil, failure.ExitOK, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !has(alive) {
				t.Fatal("the tenant is already gone")
			}
			src.drop, src.direct, src.err = map[waldur.UUID]bool{alive: true}, tc.direct, tc.err
			out := e.Run(ctx, engine.Request{Command: "sync"})
			if failure.ExitCode(out.Err) != tc.code || has(alive) != tc.kept {
				t.Fatalf("exit %d (%v), tenant in Git %v; want %d, %v", failure.ExitCode(out.Err), out.Err, has(alive), tc.code, tc.kept)
			}
			var reason string
			for _, en := range out.Report.Changes {
				if en.Kind == "Resource" && en.Resource == string(alive) && en.Stage == "git" {
					reason = en.Reason
				}
			}
			if tc.reported != "" && !strings.Contains(reason, tc.reported) {
				t.Errorf("the report says %q", reason)
			}
		})
	}

	// A 404 lets the tenant leave, but counts for the guard: several at once
	// (a wrong token answers 404 for everything) are refused.
	src.drop, src.direct, src.err = map[waldur.UUID]bool{}, map[waldur.UUID]confirm.Gone{}, nil
	for _, o := range st.Offerings {
		for _, r := range o.Resources {
			if r.UUID != alive {
				src.drop[r.UUID] = true
				src.direct[r.UUID] = confirm.Gone{Why: "Waldur answers 404 for it"}
			}
		}
	}
	if out := e.Run(ctx, engine.Request{Command: "sync"}); failure.ExitCode(out.Err) != failure.ExitGuard || !has(notFound) {
		t.Errorf("every resource answering 404: exit %d (%v), want the guard", failure.ExitCode(out.Err), out.Err)
	}
}
