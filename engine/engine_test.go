package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/engine/enginetest"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// fakes is one set of in-memory seams over the bundled example.
type fakes struct {
	log        *enginetest.Log
	source     *enginetest.Source
	orders     *enginetest.Orders
	validator  *enginetest.Validator
	quotas     *enginetest.Quotas
	publisher  *enginetest.Publisher
	identities *enginetest.Identities
	render     engine.Renderer
}

func newFakes(t *testing.T) *fakes {
	t.Helper()
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	l := &enginetest.Log{}
	return &fakes{
		log: l, source: &enginetest.Source{Log: l, State: st}, orders: &enginetest.Orders{Log: l},
		publisher: &enginetest.Publisher{Log: l}, identities: &enginetest.Identities{Log: l},
		render: render.New(cfg.Config, tpls).Render,
	}
}

func (f *fakes) engine() *engine.Engine {
	s := engine.Seams{Source: f.source, Orders: f.orders, Publisher: f.publisher, Identities: f.identities}
	if f.validator != nil {
		s.Validator = f.validator
	}
	if f.quotas != nil {
		s.Quotas = f.quotas
	}
	return engine.New(s, f.render, guard.DefaultOptions(), nil)
}

func stageNames(out *engine.Outcome) string {
	var names []string
	for _, st := range out.Report.Stages {
		names = append(names, st.Name)
	}
	return strings.Join(names, " ")
}

// TestStageOrder: the seams are called in the pipeline's order, and the
// report names the stages in that order.
func TestStageOrder(t *testing.T) {
	f := newFakes(t)
	f.validator = &enginetest.Validator{Log: f.log}
	f.quotas = &enginetest.Quotas{Log: f.log}
	out := f.engine().Run(context.Background(), engine.Request{Command: "sync"})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	want := "source.read → orders.approve → quotas.check → validate → publish → identities.reconcile → orders.finish"
	if got := f.log.String(); got != want {
		t.Errorf("calls: %s\nwant:  %s", got, want)
	}
	if got := stageNames(out); got != "waldur approve render quota validate fake keycloak orders" {
		t.Errorf("report stages: %s", got)
	}
	resources := map[waldur.UUID]bool{}
	for _, tn := range out.Result.Tenants {
		resources[tn.Resource] = true
	}
	if out.Report.Commit != "commit-1" || out.Report.ExitCode != 0 || len(f.orders.Finished) != len(resources) {
		t.Errorf("commit %q, exit %d, finished %d of %d", out.Report.Commit, out.Report.ExitCode, len(f.orders.Finished), len(resources))
	}
}

// TestOffboardingStages: the offboard stage runs before the render and
// gives the publish's guard the names of the users leaving; the proof stage
// runs after the Keycloak pass with what was published, and its records are
// the report's offboarding.
func TestOffboardingStages(t *testing.T) {
	f := newFakes(t)
	ob := &enginetest.Offboarding{Log: f.log, Leaving: map[string]string{"wim": "requested"},
		Records: []report.Offboard{{Offering: "UT namespaces", OfferingUser: "u1", State: waldur.OfferingUserDeleted}}}
	s := engine.Seams{Source: f.source, Orders: f.orders, Publisher: f.publisher, Identities: f.identities, Offboarding: ob}
	out := engine.New(s, f.render, guard.DefaultOptions(), nil).Run(context.Background(), engine.Request{Command: "sync"})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	want := "source.read → orders.approve → offboarding.claim → publish → identities.reconcile → offboarding.prove → orders.finish"
	if got := f.log.String(); got != want {
		t.Errorf("calls: %s\nwant:  %s", got, want)
	}
	if got := stageNames(out); got != "waldur approve offboard render fake keycloak proof orders" {
		t.Errorf("report stages: %s", got)
	}
	if f.publisher.Options.Guard.Offboarded["wim"] != "requested" {
		t.Errorf("the publish's guard knows no leaver: %+v", f.publisher.Options.Guard)
	}
	if ob.Proved != out.Published || len(out.Report.Offboarding) != 1 {
		t.Errorf("proof given %p (published %p), report offboarding %+v", ob.Proved, out.Published, out.Report.Offboarding)
	}
}

// TestDryRunChangesNothing: every seam is asked, none writes, and the exit
// code says whether anything would change.
func TestDryRunChangesNothing(t *testing.T) {
	f := newFakes(t)
	e := f.engine()
	out := e.Run(context.Background(), engine.Request{Command: "sync", DryRun: true})
	if f.publisher.Writes+f.orders.Writes+f.identities.Writes != 0 || f.publisher.Tree != nil {
		t.Errorf("a dry run wrote: publisher %d, orders %d, identities %d", f.publisher.Writes, f.orders.Writes, f.identities.Writes)
	}
	if got := failure.ExitCode(out.Err); got != failure.ExitDiff {
		t.Errorf("dry run on an empty destination: exit %d (%v), want %d", got, out.Err, failure.ExitDiff)
	}
	if !strings.Contains(f.log.String(), "publish dry-run") || out.Report.Commit != "" {
		t.Errorf("calls %s, commit %q", f.log, out.Report.Commit)
	}
	// Published for real, a dry run finds nothing to do; skipped identities
	// alone then give 3, and differences beat skips (1).
	e.Run(context.Background(), engine.Request{Command: "sync"})
	if out := e.Run(context.Background(), engine.Request{DryRun: true}); out.Err != nil {
		t.Errorf("dry run after the publish: %v", out.Err)
	}
	f.identities.Skips = 2
	if out := e.Run(context.Background(), engine.Request{DryRun: true}); failure.ExitCode(out.Err) != failure.ExitPartial {
		t.Errorf("dry run with skips only: %v", out.Err)
	}
	f.publisher.Tree = nil
	if out := e.Run(context.Background(), engine.Request{DryRun: true}); failure.ExitCode(out.Err) != failure.ExitDiff {
		t.Errorf("dry run with differences and skips: %v", out.Err)
	}
}

// TestFailureClasses: each stage's failure ends with the documented code,
// and the stages after it run only where the cycle says so.
func TestFailureClasses(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		break_ func(*fakes)
		code   int
		calls  string
	}{
		{"waldur", func(f *fakes) { f.source.Err = boom }, failure.ExitWaldur, "source.read"},
		{"waldur config", func(f *fakes) { f.source.Err = failure.Classify(failure.ClassConfig, boom) }, failure.ExitUsage, "source.read"},
		{"approve", func(f *fakes) { f.orders.ApproveErr = boom }, failure.ExitWaldur, "source.read → orders.approve"},
		{"render in the approval probe", func(f *fakes) { f.render = func(*waldur.State) (*render.Result, error) { return nil, boom } },
			failure.ExitUsage, "source.read → orders.approve"},
		{"validate", func(f *fakes) { f.validator = &enginetest.Validator{Log: f.log, Err: boom} }, failure.ExitApply, "source.read → orders.approve → validate"},
		{"quota", func(f *fakes) { f.quotas = &enginetest.Quotas{Log: f.log, Err: boom} }, failure.ExitCluster, "source.read → orders.approve → quotas.check"},
		{"publish", func(f *fakes) { f.publisher.Err = boom }, failure.ExitGit, "source.read → orders.approve → publish"},
		{"guard", func(f *fakes) { f.publisher.Err = &guard.Error{} }, failure.ExitGuard, "source.read → orders.approve → publish"},
		{"keycloak after a push", func(f *fakes) { f.identities.Err = boom }, failure.ExitKeycloak,
			"source.read → orders.approve → publish → identities.reconcile → orders.finish"},
		{"keycloak credentials after a push", func(f *fakes) { f.identities.Err = failure.Classify(failure.ClassConfig, boom) }, failure.ExitKeycloak,
			"source.read → orders.approve → publish → identities.reconcile → orders.finish"},
		{"orders", func(f *fakes) { f.orders.FinishErr = boom }, failure.ExitWaldur,
			"source.read → orders.approve → publish → identities.reconcile → orders.finish"},
		{"skipped identities", func(f *fakes) { f.identities.Skips = 1 }, failure.ExitPartial,
			"source.read → orders.approve → publish → identities.reconcile → orders.finish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakes(t)
			tc.break_(f)
			out := f.engine().Run(context.Background(), engine.Request{Command: "sync"})
			if got := failure.ExitCode(out.Err); got != tc.code || out.Report.ExitCode != tc.code {
				t.Errorf("exit %d (report %d), want %d: %v", got, out.Report.ExitCode, tc.code, out.Err)
			}
			if got := f.log.String(); got != tc.calls {
				t.Errorf("calls: %s\nwant:  %s", got, tc.calls)
			}
		})
	}
}

// TestKeycloakFailureAfterPush: the commit stays, the orders still finish,
// and the error says what was pushed instead of reading as a config problem.
func TestKeycloakFailureAfterPush(t *testing.T) {
	f := newFakes(t)
	f.identities.Err = failure.Classify(failure.ClassConfig, errors.New("keycloak_password_file: no such file"))
	out := f.engine().Run(context.Background(), engine.Request{Command: "sync"})
	if failure.ExitCode(out.Err) != failure.ExitKeycloak || !strings.Contains(out.Err.Error(), "commit commit-1 was pushed") {
		t.Errorf("error %v (exit %d)", out.Err, failure.ExitCode(out.Err))
	}
	if out.Report.Commit != "commit-1" || f.publisher.Writes != 1 {
		t.Errorf("commit %q, publishes %d", out.Report.Commit, f.publisher.Writes)
	}
	// The orders stage ran, but no tenant is usable without its groups.
	if !strings.HasSuffix(f.log.String(), "orders.finish") || len(f.orders.Finished) != 0 {
		t.Errorf("calls %s; orders finished %d, want none while Keycloak is failing", f.log, len(f.orders.Finished))
	}
	// Keycloak back: the next run finishes them.
	f.identities.Err = nil
	if out := f.engine().Run(context.Background(), engine.Request{Command: "sync"}); out.Err != nil || len(f.orders.Finished) == 0 {
		t.Errorf("after Keycloak recovered: %v, orders finished %d", out.Err, len(f.orders.Finished))
	}
}

// TestWaitingTenantsKeepTheirOrders: a tenant whose groups are not in place
// keeps its order executing; the others finish.
func TestWaitingTenantsKeepTheirOrders(t *testing.T) {
	f := newFakes(t)
	res, err := f.render(f.source.State)
	if err != nil {
		t.Fatal(err)
	}
	held := res.Tenants[0].Resource
	f.identities.Waiting = map[waldur.UUID]string{held: "group in conflict"}
	if out := f.engine().Run(context.Background(), engine.Request{Command: "sync"}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if len(f.orders.Finished) == 0 || slices.Contains(f.orders.Finished, held) {
		t.Errorf("finished %v, want all but %s", f.orders.Finished, held)
	}
}

// TestPartialWrite: a publisher that fails after writing part of the tree
// stops the cycle before Keycloak and the orders, with the publisher's code.
func TestPartialWrite(t *testing.T) {
	f := newFakes(t)
	f.publisher.Err, f.publisher.PartialWrite = errors.New("disk full"), true
	out := f.engine().Run(context.Background(), engine.Request{Command: "sync"})
	if failure.ExitCode(out.Err) != failure.ExitGit || len(f.orders.Finished) != 0 || f.identities.Writes != 0 {
		t.Errorf("exit %d, orders finished %d, identity runs %d", failure.ExitCode(out.Err), len(f.orders.Finished), f.identities.Writes)
	}
	if st := out.Report.Stages[len(out.Report.Stages)-1]; st.Name != "fake" || st.Error != "disk full" {
		t.Errorf("last stage %+v", st)
	}
}

// TestLastOutcomeKept: the engine keeps the last run's state and render.
func TestLastOutcomeKept(t *testing.T) {
	f := newFakes(t)
	e := f.engine()
	if e.Last() != nil {
		t.Fatal("an outcome before any run")
	}
	out := e.Run(context.Background(), engine.Request{Command: "serve"})
	if e.Last() != out || out.State == nil || out.Result == nil || out.Published == nil {
		t.Errorf("last %p, outcome %p: %+v", e.Last(), out, out)
	}
}

// refreshing is a Source that also refreshes, recording which it did.
type refreshing struct {
	*enginetest.Source
	refreshed [][]waldur.UUID
}

func (r *refreshing) Refresh(_ context.Context, last *waldur.State, ids []waldur.UUID) (*waldur.State, error) {
	r.refreshed = append(r.refreshed, ids)
	return last, nil
}

func (r *refreshing) RefreshUsers(context.Context, *waldur.State, []waldur.UUID) error { return nil }

// TestRunForSomeResources: a run asked to look at a few resources refreshes
// the last state instead of reading everything, but only once there is one.
func TestRunForSomeResources(t *testing.T) {
	f := newFakes(t)
	src := &refreshing{Source: f.source}
	e := engine.New(engine.Seams{Source: src, Publisher: f.publisher}, f.render, guard.DefaultOptions(), nil)
	ids := []waldur.UUID{"0123456789abcdef0123456789abcdef"}
	e.Run(context.Background(), engine.Request{Resources: ids}) // no last state yet: a full read
	out := e.Run(context.Background(), engine.Request{Resources: ids})
	if out.Err != nil || len(src.refreshed) != 1 || src.refreshed[0][0] != ids[0] {
		t.Fatalf("refreshed %v, err %v", src.refreshed, out.Err)
	}
	if got := f.log.String(); got != "source.read → publish → publish" {
		t.Errorf("calls %s", got)
	}
}

// TestProgressPerStage: a Progress hook hears of every stage as it ends, in
// order, with its changes.
func TestProgressPerStage(t *testing.T) {
	f := newFakes(t)
	e := f.engine()
	var seen []string
	e.Progress = func(st report.Stage, cs changeset.Set) {
		seen = append(seen, fmt.Sprintf("%s:%d", st.Name, len(cs.Entries)))
	}
	out := e.Run(context.Background(), engine.Request{Command: "sync"})
	if got := strings.Join(seen, " "); !strings.HasPrefix(got, "waldur:0 approve:0 render:0 fake:") || len(seen) != len(out.Report.Stages) {
		t.Errorf("progress %q for stages %d", got, len(out.Report.Stages))
	}
}
