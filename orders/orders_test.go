package orders_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// A pending Create is approved before the render, so the same run commits its
// tenant; after the push the resource gets its backend id (the namespace) and
// the order is done.
func TestCreateIsApprovedRenderedAndDoneWithBackendID(t *testing.T) {
	h := newHarness(t, "")
	res := h.resource("alpha", waldur.ResourceCreating, limits("cpu", "2", "ram", "4"))
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, res, nil)

	c := h.cycle(true, true)
	if c.finishEr != nil {
		t.Fatal(c.finishEr)
	}
	if e := entry(t, c.approve, ord); e.Action != changeset.Update || e.Reason != "approved" || !strings.Contains(e.Subject, "Create plain/waldur-alpha") {
		t.Errorf("approve entry %+v", e)
	}
	if _, ok := h.remote["plain/cluster/waldur-alpha/resourcequota-waldur-quota.yaml"]; !ok {
		t.Fatalf("the approved tenant is not in the pushed tree: %v", keys(h.remote))
	}
	if e := entry(t, c.finish, ord); e.Action != changeset.Update || e.Reason != "done (backend id waldur-alpha)" {
		t.Errorf("finish entry %+v", e)
	}
	if got := h.orderState(ord); got != waldur.OrderDone {
		t.Errorf("order %s, want done", got)
	}
	r, _ := h.srv.Resource(res)
	if r.BackendID != "waldur-alpha" || r.State != waldur.ResourceOK {
		t.Errorf("resource backend id %q state %s", r.BackendID, r.State)
	}
	// The backend id is set before the order is done.
	w := h.writes()
	if len(w) != 3 || !strings.HasSuffix(w[1], "/set_backend_id/") || !strings.HasSuffix(w[2], "/set_state_done/") {
		t.Errorf("writes %v", w)
	}
	if v := h.srv.Violations(); len(v) > 0 {
		t.Errorf("contract violations: %v", v)
	}
}

// An Update order's new limits reach the pushed quota, and only then is the
// order done; Waldur then holds the new limits.
func TestUpdateLimitsDoneAfterQuotaIsPushed(t *testing.T) {
	h := newHarness(t, "")
	res := h.resource("beta", waldur.ResourceOK, limits("cpu", "2", "ram", "4"))
	h.cycle(true, true)
	quota := "plain/cluster/waldur-beta/resourcequota-waldur-quota.yaml"
	if !strings.Contains(string(h.remote[quota]), "limits.cpu: \"2\"") {
		t.Fatalf("initial quota:\n%s", h.remote[quota])
	}
	ord := h.order(waldur.OrderUpdate, waldur.OrderPendingProvider, res, limits("cpu", "6", "ram", "4"))
	c := h.cycle(true, true)
	if !strings.Contains(string(h.remote[quota]), "limits.cpu: \"6\"") {
		t.Errorf("pushed quota lacks the new limit:\n%s", h.remote[quota])
	}
	if e := entry(t, c.finish, ord); e.Action != changeset.Update || e.Reason != "done" {
		t.Errorf("finish entry %+v", e)
	}
	r, _ := h.srv.Resource(res)
	if h.orderState(ord) != waldur.OrderDone || r.Limits["cpu"] != "6" || r.State != waldur.ResourceOK {
		t.Errorf("order %s, resource %s limits %v", h.orderState(ord), r.State, r.Limits)
	}
}

// A Terminate order is done once the tenant is gone from the pushed tree.
func TestTerminateDoneAfterTenantRemoval(t *testing.T) {
	h := newHarness(t, "")
	res := h.resource("gamma", waldur.ResourceOK, limits("cpu", "1", "ram", "1"))
	h.cycle(true, true)
	if _, ok := h.remote["plain/cluster/waldur-gamma/kustomization.yaml"]; !ok {
		t.Fatal("tenant not created")
	}
	ord := h.order(waldur.OrderTerminate, waldur.OrderPendingProvider, res, nil)
	c := h.cycle(true, true)
	for p := range h.remote {
		if strings.Contains(p, "waldur-gamma") {
			t.Fatalf("%s still pushed", p)
		}
	}
	if e := entry(t, c.finish, ord); e.Action != changeset.Update || e.Reason != "done" || !strings.Contains(e.Subject, "Terminate") {
		t.Errorf("finish entry %+v", e)
	}
	r, _ := h.srv.Resource(res)
	if h.orderState(ord) != waldur.OrderDone || r.State != waldur.ResourceTerminated {
		t.Errorf("order %s resource %s", h.orderState(ord), r.State)
	}
}

// A pending Create whose slug cannot name a namespace is rejected with a
// comment naming the slug and the rule; nothing is rendered for it.
func TestInvalidSlugPendingIsRejected(t *testing.T) {
	h := newHarness(t, "")
	res := h.resource("Bad_Slug", waldur.ResourceCreating, limits("cpu", "1"))
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, res, nil)
	c := h.cycle(true, true)
	e := entry(t, c.approve, ord)
	if e.Action != changeset.Update || !strings.HasPrefix(e.Reason, "rejected: ") {
		t.Fatalf("entry %+v", e)
	}
	raw := h.srv.RawOrder(ord)
	comment, _ := raw["provider_rejection_comment"].(string)
	if raw["state"] != "rejected" || !strings.Contains(comment, "Bad_Slug") || !strings.Contains(comment, "RFC 1123") {
		t.Errorf("order %v, comment %q", raw["state"], comment)
	}
	for p := range h.remote {
		if strings.Contains(strings.ToLower(p), "bad") {
			t.Errorf("%s rendered for a rejected order", p)
		}
	}
	if len(c.finish.Entries) != 0 {
		t.Errorf("finish touched a rejected order: %v", c.finish.Entries)
	}
}

// An order that arrives already executing for a resource that fails validation
// is set erred, with a message and a traceback naming the slug and the rule.
func TestInvalidSlugExecutingIsErred(t *testing.T) {
	h := newHarness(t, "")
	res := h.resource("Bad_Slug", waldur.ResourceCreating, limits("cpu", "1"))
	ord := h.order(waldur.OrderCreate, waldur.OrderExecuting, res, nil)
	c := h.cycle(true, true)
	if c.finishEr != nil {
		t.Fatal(c.finishEr)
	}
	e := entry(t, c.finish, ord)
	if e.Action != changeset.Update || !strings.HasPrefix(e.Reason, "erred: ") {
		t.Fatalf("entry %+v", e)
	}
	raw := h.srv.RawOrder(ord)
	msg, _ := raw["error_message"].(string)
	tb, _ := raw["error_traceback"].(string)
	if raw["state"] != waldur.OrderErred {
		t.Errorf("order %v", raw["state"])
	}
	for _, text := range []string{msg, tb} {
		if !strings.Contains(text, `"Bad_Slug"`) || !strings.Contains(text, "RFC 1123 label") {
			t.Errorf("erred text does not name the slug and the rule: %q", text)
		}
	}
	if r, _ := h.srv.Resource(res); r.State != waldur.ResourceErred {
		t.Errorf("resource %s", r.State)
	}
}

// When the push fails nothing is marked done, and Finish itself refuses to
// mark an order done whose manifests are not in the tree it is given.
func TestPushFailureMarksNothingDone(t *testing.T) {
	h := newHarness(t, "")
	res := h.resource("delta", waldur.ResourceCreating, limits("cpu", "1"))
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, res, nil)
	c := h.cycle(false, true) // the push fails: sync stops before the feedback
	if h.orderState(ord) != waldur.OrderExecuting {
		t.Fatalf("order %s, want executing (approved, not done)", h.orderState(ord))
	}
	// Even if feedback ran on the remote tree as it still is, nothing moves.
	cs, _, err := changeset.Apart(h.stage.Finish(context.Background(), c.state, c.result, h.remote))
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, cs, ord); e.Action != changeset.Skip || !strings.Contains(e.Reason, "not in the pushed tree") {
		t.Errorf("entry %+v", e)
	}
	if h.orderState(ord) != waldur.OrderExecuting {
		t.Errorf("order %s after feedback on the old tree", h.orderState(ord))
	}
	if r, _ := h.srv.Resource(res); r.BackendID != "" {
		t.Errorf("backend id %q set without a push", r.BackendID)
	}
}

// A run that dies between the push and the order feedback leaves the order
// executing; the next run renders the same tree (no new commit) and finishes it.
func TestCrashBetweenPushAndFeedbackIsFinishedNextRun(t *testing.T) {
	h := newHarness(t, "")
	res := h.resource("eps", waldur.ResourceCreating, limits("cpu", "1"))
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, res, nil)
	h.cycle(true, false) // pushed, then the process died
	if h.orderState(ord) != waldur.OrderExecuting {
		t.Fatalf("order %s", h.orderState(ord))
	}
	before := h.remote
	c := h.cycle(true, true)
	if len(c.approve.Entries) != 0 {
		t.Errorf("second run approved again: %v", c.approve.Entries)
	}
	if !sameTree(before, h.remote) {
		t.Error("the second run changed the pushed tree")
	}
	if h.orderState(ord) != waldur.OrderDone {
		t.Errorf("order %s, want done", h.orderState(ord))
	}
	if r, _ := h.srv.Resource(res); r.BackendID != "waldur-eps" {
		t.Errorf("backend id %q", r.BackendID)
	}
}

// Finishing the same orders twice is harmless: the second pass finds them done.
func TestDoneTwiceIsHarmless(t *testing.T) {
	h := newHarness(t, "")
	res := h.resource("zeta", waldur.ResourceCreating, limits("cpu", "1"))
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, res, nil)
	c := h.cycle(true, true)
	cs, _, err := changeset.Apart(h.stage.Finish(context.Background(), c.state, c.result, h.remote))
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, cs, ord); e.Action != changeset.Unchanged || e.Reason != "already done" {
		t.Errorf("entry %+v", e)
	}
}

// With auto_approve off pending orders are only reported, with the render
// problem when there is one.
func TestAutoApproveOffLeavesOrdersPending(t *testing.T) {
	h := newHarness(t, "  auto_approve: false\n")
	good := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("fine", waldur.ResourceCreating, limits("cpu", "1")), nil)
	bad := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("Not_OK", waldur.ResourceCreating, limits("cpu", "1")), nil)
	c := h.cycle(true, true)
	if e := entry(t, c.approve, good); e.Action != changeset.Skip || e.Reason != "pending provider approval: auto_approve is off" {
		t.Errorf("entry %+v", e)
	}
	if e := entry(t, c.approve, bad); !strings.Contains(e.Reason, "cannot be rendered") || !strings.Contains(e.Reason, "Not_OK") {
		t.Errorf("entry %+v", e)
	}
	if len(h.writes()) != 0 || h.orderState(good) != waldur.OrderPendingProvider {
		t.Errorf("writes %v, order %s", h.writes(), h.orderState(good))
	}
	for p := range h.remote {
		if strings.Contains(p, "fine") {
			t.Errorf("%s rendered for a pending order", p)
		}
	}
}

// Transient Waldur errors are retried by the client: the run still approves
// and finishes.
func TestTransientErrorsAreRetried(t *testing.T) {
	h := newHarness(t, "")
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("eta", waldur.ResourceCreating, limits("cpu", "1")), nil)
	h.srv.InjectFault(waldurtest.Fault{Count: 2, PathPrefix: "/api/marketplace-orders/" + string(ord) + "/approve_by_provider/", Status: http.StatusServiceUnavailable})
	h.srv.InjectFault(waldurtest.Fault{Count: 1, PathPrefix: "/api/marketplace-orders/" + string(ord) + "/set_state_done/", Drop: true})
	c := h.cycle(true, true)
	if c.finishEr != nil {
		t.Fatal(c.finishEr)
	}
	if h.orderState(ord) != waldur.OrderDone {
		t.Errorf("order %s", h.orderState(ord))
	}
}

// Waldur down during the feedback: a clear error, the orders stay executing,
// and the next run finishes them.
func TestWaldurDownDuringFeedback(t *testing.T) {
	h := newHarness(t, "")
	ord := h.order(waldur.OrderCreate, waldur.OrderExecuting, h.resource("theta", waldur.ResourceCreating, limits("cpu", "1")), nil)
	st := h.read()
	res := h.render(st)
	h.remote = res.Tree(nil)
	h.srv.InjectFault(waldurtest.Fault{Count: 1000, PathPrefix: "/api/", Status: http.StatusBadGateway})
	cs, _, err := changeset.Apart(h.stage.Finish(context.Background(), st, res, h.remote))
	if err == nil || !strings.Contains(err.Error(), "1 order(s) could not be moved") || !strings.Contains(err.Error(), "502") {
		t.Fatalf("error %v", err)
	}
	if e := entry(t, cs, ord); e.Action != changeset.Skip || !strings.HasPrefix(e.Reason, "failed to re-read the order") {
		t.Errorf("entry %+v", e)
	}
	h.srv.ClearFaults()
	if h.orderState(ord) != waldur.OrderExecuting {
		t.Errorf("order %s while Waldur was down", h.orderState(ord))
	}
	if len(h.writes()) != 0 {
		t.Errorf("writes while Waldur was down: %v", h.writes())
	}
	// Waldur is back: the next run finishes the order.
	c := h.cycle(true, true)
	if c.finishEr != nil || h.orderState(ord) != waldur.OrderDone {
		t.Errorf("next run: %v, order %s", c.finishEr, h.orderState(ord))
	}
}

// A dry run approves nothing in Waldur but shows the approved tenant in the
// render, and reports what the feedback would do.
func TestDryRunChangesNothing(t *testing.T) {
	h := newHarness(t, "")
	h.stage.DryRun = true
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("iota", waldur.ResourceCreating, limits("cpu", "1")), nil)
	c := h.cycle(true, true)
	if e := entry(t, c.approve, ord); e.Reason != "would approve" {
		t.Errorf("approve entry %+v", e)
	}
	if _, ok := h.remote["plain/cluster/waldur-iota/kustomization.yaml"]; !ok {
		t.Error("the dry-run render lacks the tenant that would be approved")
	}
	if e := entry(t, c.finish, ord); e.Reason != "would set done (backend id waldur-iota)" {
		t.Errorf("finish entry %+v", e)
	}
	if len(h.writes()) != 0 || h.orderState(ord) != waldur.OrderPendingProvider {
		t.Errorf("writes %v, order %s", h.writes(), h.orderState(ord))
	}
}

// Two pending Creates that want the same namespace: the first created wins and
// is approved, the second is rejected naming the collision.
func TestNameCollisionRejectsTheLaterOrder(t *testing.T) {
	h := newHarness(t, "")
	first := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("same", waldur.ResourceCreating, limits("cpu", "1")), nil)
	second := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("same", waldur.ResourceCreating, limits("cpu", "1")), nil)
	h.cycle(true, true)
	if h.orderState(first) != waldur.OrderDone || h.orderState(second) != "rejected" {
		t.Errorf("first %s second %s", h.orderState(first), h.orderState(second))
	}
	comment, _ := h.srv.RawOrder(second)["provider_rejection_comment"].(string)
	if !strings.Contains(comment, "already used by resource") {
		t.Errorf("comment %q", comment)
	}
}

// A 409 on approve (someone approved meanwhile) is not a failure.
func TestApproveConflictIsSettled(t *testing.T) {
	h := newHarness(t, "")
	ord := h.order(waldur.OrderCreate, waldur.OrderPendingProvider, h.resource("kappa", waldur.ResourceCreating, limits("cpu", "1")), nil)
	st := h.read()
	if err := h.client.ApproveOrder(context.Background(), ord); err != nil { // another actor
		t.Fatal(err)
	}
	cs, _, err := changeset.Apart(h.stage.Approve(context.Background(), st, func(s *waldur.State) (*render.Result, error) { return h.rdr.Render(s) }))
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, cs, ord); e.Action != changeset.Unchanged || !strings.Contains(e.Reason, "already executing") {
		t.Errorf("entry %+v", e)
	}
	if ost, _ := st.Offering("Plain"); ost.Orders[0].State != waldur.OrderExecuting {
		t.Errorf("state not refreshed: %s", ost.Orders[0].State)
	}
}

func keys(t render.Tree) []string {
	var out []string
	for k := range t {
		out = append(out, k)
	}
	return out
}

func sameTree(a, b render.Tree) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if string(b[k]) != string(v) {
			return false
		}
	}
	return true
}

// An Update order without limits (a plan switch) is rendered with its plan's
// quotas and done once they are pushed, as the site agent does; when its
// plan's quotas cannot be known it stays executing with the reason, and the
// quota keeps the old limits.
func TestUpdateWithoutLimitsUsesPlanQuotas(t *testing.T) {
	tests := []struct {
		name      string
		quotas    waldur.Limits // nil: the plan does not exist
		wantCPU   string
		wantState string
		wantWhy   string
	}{
		{name: "plan quotas", quotas: limits("cpu", "8", "ram", "16"), wantCPU: `limits.cpu: "8"`, wantState: waldur.OrderDone, wantWhy: "done"},
		{name: "missing plan", wantCPU: `limits.cpu: "2"`, wantState: waldur.OrderExecuting, wantWhy: "were not read"},
		{name: "plan without quotas", quotas: waldur.Limits{}, wantCPU: `limits.cpu: "2"`, wantState: waldur.OrderExecuting, wantWhy: "has no quotas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "")
			res := h.resource("beta", waldur.ResourceOK, limits("cpu", "2", "ram", "4"))
			h.cycle(true, true)
			plan := waldur.UUID("9a000000000040008000000000000001")
			if tt.quotas != nil {
				h.srv.AddPlan(waldur.Plan{UUID: plan, Name: "large", Quotas: tt.quotas})
			}
			ord := h.srv.AddOrder(offering, waldur.Order{Type: waldur.OrderUpdate, State: waldur.OrderPendingProvider, MarketplaceResourceUUID: res, PlanUUID: plan})
			h.cycle(true, true)
			c := h.cycle(true, true) // a second run must not finish a held order either
			quota := "plain/cluster/waldur-beta/resourcequota-waldur-quota.yaml"
			if !strings.Contains(string(h.remote[quota]), tt.wantCPU) {
				t.Errorf("pushed quota, want %s:\n%s", tt.wantCPU, h.remote[quota])
			}
			if got := h.orderState(ord); got != tt.wantState {
				t.Errorf("order %s, want %s", got, tt.wantState)
			}
			r, _ := h.srv.Resource(res)
			if tt.wantState == waldur.OrderDone && (r.Limits["cpu"] != tt.quotas["cpu"] || r.Limits["ram"] != tt.quotas["ram"] || r.PlanUUID != plan) {
				t.Errorf("resource limits %v plan %s, want the plan's quotas %v and plan %s", r.Limits, r.PlanUUID, tt.quotas, plan)
			}
			if tt.wantState == waldur.OrderExecuting && r.Limits["cpu"] != "2" {
				t.Errorf("resource limits %v changed while the order is held", r.Limits)
			}
			if tt.wantState == waldur.OrderExecuting {
				if e := entry(t, c.finish, ord); !strings.Contains(e.Reason, tt.wantWhy) {
					t.Errorf("finish entry %+v, want a reason mentioning %q", e, tt.wantWhy)
				}
			}
			if v := h.srv.Violations(); len(v) > 0 {
				t.Errorf("contract violations: %v", v)
			}
		})
	}
}
