package orders_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

const (
	offering = waldur.UUID("0ff0000000004000800000000000000a")
	project  = waldur.UUID("b0b00000000040008000000000000001")
	customer = waldur.UUID("c0500000000040008000000000000001")
)

// harness is the sync pipeline reduced to what the order steps touch: Waldur
// (the test server), the real renderer, and the tree on the remote branch,
// which only a successful "push" replaces.
type harness struct {
	t      *testing.T
	srv    *waldurtest.Server
	client *waldur.Client
	cfg    *config.Config
	rdr    *render.Renderer
	stage  *orders.Stage
	remote render.Tree
	// layout, when set, adds the Flux shards to every pushed tree.
	layout *gitsync.FluxLayout

	mu     sync.Mutex
	posted []string
}

// newHarness builds a namespace-profile offering against a fresh Waldur test
// server; extra is appended to the offering's config.
func newHarness(t *testing.T, extra string) *harness {
	t.Helper()
	srv := waldurtest.New(t)
	text := fmt.Sprintf(`offerings:
- name: Plain
  waldur_api_url: %s
  waldur_offering_uuid: %s
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
    ram: {accounting_type: limit}
%s`, srv.URL(), offering, extra)
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := render.LoadTemplates(l.Config)
	if err != nil {
		t.Fatal(err)
	}
	opts := waldur.DefaultClientOptions()
	opts.BaseURL, opts.Token = srv.URL(), srv.Token()
	opts.RetryWaitMin, opts.RetryWaitMax = time.Millisecond, 2*time.Millisecond
	c, err := waldur.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, client: c, cfg: l.Config, rdr: render.New(l.Config, tpls)}
	srv.OnRequest(func(r *http.Request, _ []byte) {
		if r.Method == http.MethodPost {
			h.mu.Lock()
			h.posted = append(h.posted, r.URL.Path)
			h.mu.Unlock()
		}
	})
	h.stage = &orders.Stage{Offerings: []*orders.Offering{orders.OfferingFromConfig(&l.Offerings[0], c, nil)}}
	return h
}

// resource seeds a resource of the offering.
func (h *harness) resource(slug, state string, limits waldur.Limits) waldur.UUID {
	return h.srv.AddResource(waldur.Resource{
		OfferingUUID: offering, Name: "Res " + slug, Slug: slug, State: state, Limits: limits,
		ProjectUUID: project, ProjectSlug: "proj", CustomerUUID: customer, CustomerSlug: "cust",
	})
}

// order seeds an order of the offering.
func (h *harness) order(typ, state string, res waldur.UUID, limits waldur.Limits) waldur.UUID {
	return h.srv.AddOrder(offering, waldur.Order{Type: typ, State: state, MarketplaceResourceUUID: res, Limits: limits})
}

func (h *harness) read() *waldur.State {
	h.t.Helper()
	ost, err := h.client.ReadOffering(context.Background(), "Plain", offering)
	if err != nil {
		h.t.Fatal(err)
	}
	return &waldur.State{Offerings: []waldur.OfferingState{*ost}}
}

func (h *harness) render(st *waldur.State) *render.Result {
	h.t.Helper()
	res, err := h.rdr.Render(st)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// cycleResult is what one pipeline run produced.
type cycleResult struct {
	state    *waldur.State
	result   *render.Result
	approve  changeset.Set
	finish   changeset.Set
	finishEr error
}

// cycle runs read → approve → render → push (when push is true) → order
// feedback (when feedback is true, and only after a successful push, as sync
// does).
func (h *harness) cycle(push, feedback bool) cycleResult {
	h.t.Helper()
	ctx := context.Background()
	var c cycleResult
	c.state = h.read()
	cs, _, err := changeset.Apart(h.stage.Approve(ctx, c.state, func(st *waldur.State) (*render.Result, error) { return h.rdr.Render(st) }))
	if err != nil {
		h.t.Fatal(err)
	}
	c.approve = cs
	c.result = h.render(c.state)
	next := c.result.Tree(h.remote)
	if h.layout != nil {
		l := *h.layout
		l.Previous = h.remote
		next = l.Apply(next)
	}
	if !push {
		return c
	}
	h.remote = next
	if feedback {
		c.finish, _, c.finishEr = changeset.Apart(h.stage.Finish(ctx, c.state, c.result, h.remote))
	}
	return c
}

func (h *harness) orderState(id waldur.UUID) string {
	h.t.Helper()
	o, ok := h.srv.Order(id)
	if !ok {
		h.t.Fatalf("order %s unknown", id)
	}
	return o.State
}

func limits(kv ...string) waldur.Limits {
	l := waldur.Limits{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = waldur.Amount(kv[i+1])
	}
	return l
}

// entry finds the entry of an order.
func entry(t *testing.T, cs changeset.Set, order waldur.UUID) changeset.Entry {
	t.Helper()
	for _, e := range cs.Entries {
		if strings.HasPrefix(e.Subject, string(order)+" ") {
			if (e.Stage != orders.ApproveStage && e.Stage != orders.FinishStage) || e.Kind != orders.EntryKind {
				t.Errorf("entry %+v: stage/kind", e)
			}
			return e
		}
	}
	t.Fatalf("no entry for order %s in %v", order, cs.Entries)
	return changeset.Entry{}
}

// writes returns the write requests (POST paths) the server received so far.
func (h *harness) writes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.posted...)
}
