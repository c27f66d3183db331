package cli

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/exampletest"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// The order steps as sync wires them: read, approveOrders, render, push (here:
// the tree becomes the remote's), finishOrders.
func TestOrderStepsAsSyncWiresThem(t *testing.T) {
	srv := waldurtest.New(t)
	res := srv.AddResource(waldur.Resource{OfferingUUID: usageOffering, Slug: "alpha", State: waldur.ResourceCreating, Limits: waldur.Limits{"cpu": "2"}})
	ord := srv.AddOrder(usageOffering, waldur.Order{Type: waldur.OrderCreate, MarketplaceResourceUUID: res})
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, `offerings:
- name: Plain
  waldur_api_url: `+srv.URL()+`
  waldur_offering_uuid: `+usageOffering+`
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
`)
	a := &app{configPath: path, stdout: &strings.Builder{}, stderr: &strings.Builder{}}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	st, err := readState(ctx, cfg.Config, "", log)
	if err != nil {
		t.Fatal(err)
	}
	cs, calls, err := approveOrders(ctx, cfg.Config, log, st, false)
	if err != nil || len(cs.Entries) != 1 || cs.Entries[0].Reason != "approved" || calls[waldur.KindOrderApprove] != 1 {
		t.Fatalf("approve: %v %v %v", err, cs.Entries, calls)
	}
	result := exampletest.Render(t, cfg.Config, st)
	pushed := result.Tree(nil)
	cs, calls, err = finishOrders(ctx, cfg.Config, log, st, result, pushed, false)
	if err != nil {
		t.Fatal(err)
	}
	want := changeset.Entry{Stage: orders.EntryStage, Kind: orders.EntryKind, Subject: string(ord) + " Create plain/waldur-alpha",
		Action: changeset.Update, Offering: "Plain", Resource: string(res), Orders: []string{string(ord)}, Reason: "done (backend id waldur-alpha)"}
	if len(cs.Entries) != 1 || cs.Entries[0].String() != want.String() || cs.Entries[0].Resource != want.Resource {
		t.Errorf("finish: %v", cs.Entries)
	}
	if calls[waldur.KindOrderDone] != 1 || calls[waldur.KindResourceBackendID] != 1 || calls[waldur.KindOrderGet] != 1 {
		t.Errorf("calls %v", calls)
	}
	if o, _ := srv.Order(ord); o.State != waldur.OrderDone {
		t.Errorf("order %s", o.State)
	}
}
