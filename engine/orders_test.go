package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// offeringUUID is the offering the tests add their resources to.
const offeringUUID = "0ff00000000040008000000000000042"

// TestOrderStageAgainstWaldur: the order seam over the in-repo Waldur, as the
// cycle runs it: read, approve (the pending Create), render, publish (here:
// the render is what the destination holds), finish — once with the tenant
// waiting for its identities, once with its shard's artifact not pushed
// (Published.Held), then for real.
func TestOrderStageAgainstWaldur(t *testing.T) {
	srv := waldurtest.New(t)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	res := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "alpha", State: waldur.ResourceCreating, Limits: waldur.Limits{"cpu": "2"}})
	ord := srv.AddOrder(offeringUUID, waldur.Order{Type: waldur.OrderCreate, MarketplaceResourceUUID: res})
	l, err := config.Parse([]byte(`offerings:
- name: Plain
  waldur_api_url: `+srv.URL()+`
  waldur_offering_uuid: `+offeringUUID+`
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
`), t.TempDir()+"/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &source.API{Offerings: l.Offerings}
	stage := &engine.OrderStage{Site: &orders.Site{Source: src, Offerings: l.Offerings}}
	tpls, err := render.LoadTemplates(l.Config)
	if err != nil {
		t.Fatal(err)
	}
	rdr := render.New(l.Config, tpls).Render
	ctx := context.Background()
	st, err := src.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs, calls, err := changeset.Apart(stage.Approve(ctx, st, rdr, false))
	if err != nil || len(cs.Entries) != 1 || cs.Entries[0].Reason != "approved" || cs.Entries[0].Stage != orders.ApproveStage || calls[waldur.KindOrderApprove] != 1 {
		t.Fatalf("approve: %v %v %v", err, cs.Entries, calls)
	}
	result, err := rdr(st)
	if err != nil {
		t.Fatal(err)
	}
	pub := &publish.Published{After: result.Tree(nil)}

	cs, _, err = changeset.Apart(stage.Finish(ctx, st, result, pub, map[waldur.UUID]string{res: "Keycloak realm hpc failed"}, false))
	if err != nil || len(cs.Entries) != 1 || cs.Entries[0].Action != changeset.Skip {
		t.Fatalf("finish while waiting: %v %v", err, cs.Entries)
	}
	if o, _ := srv.Order(ord); o.State != waldur.OrderExecuting {
		t.Errorf("order %s while its tenant waits", o.State)
	}

	// The OCI layout: committed, but the shard's artifact not pushed yet.
	held := &publish.Published{After: pub.After, Held: map[waldur.UUID]string{res: "its Flux shard artifact waldur-plain-cluster-00 is not pushed yet: DENIED"}}
	cs, _, err = changeset.Apart(stage.Finish(ctx, st, result, held, nil, false))
	if err != nil || len(cs.Entries) != 1 || cs.Entries[0].Action != changeset.Skip || !strings.Contains(cs.Entries[0].Reason, held.Held[res]) {
		t.Fatalf("finish while its artifact is not pushed: %v %v", err, cs.Entries)
	}
	if o, _ := srv.Order(ord); o.State != waldur.OrderExecuting {
		t.Errorf("order %s while its shard artifact is not pushed", o.State)
	}

	cs, calls, err = changeset.Apart(stage.Finish(ctx, st, result, pub, nil, false))
	if err != nil {
		t.Fatal(err)
	}
	want := changeset.Entry{Stage: orders.FinishStage, Kind: orders.EntryKind, Subject: string(ord) + " Create plain/waldur-alpha",
		Action: changeset.Update, Offering: "Plain", Resource: string(res), Orders: []string{string(ord)}, Reason: "done (backend id waldur-alpha)"}
	if len(cs.Entries) != 1 || cs.Entries[0].String() != want.String() || cs.Entries[0].Stage != want.Stage || cs.Entries[0].Resource != want.Resource {
		t.Errorf("finish: %v", cs.Entries)
	}
	if calls[waldur.KindOrderDone] != 1 || calls[waldur.KindResourceBackendID] != 1 {
		t.Errorf("calls %v", calls)
	}
	if o, _ := srv.Order(ord); o.State != waldur.OrderDone {
		t.Errorf("order %s", o.State)
	}
}
