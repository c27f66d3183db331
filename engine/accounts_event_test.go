package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestAccountEventRunMatchesFull: the run an account event starts reads
// the resources of the event's project (not the whole site) and the
// accounts again, and renders the tree a full read renders: the new
// service account reaches its project's tenants.
func TestAccountEventRunMatchesFull(t *testing.T) {
	opts := synth.Options{Tenants: 40, Seed: 11, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	srv := waldurtest.New(t)
	st := synth.Generate(opts)
	srv.Seed(st)
	text := string(synth.ConfigYAML(opts))
	text = strings.ReplaceAll(text, "waldur_api_url: https://waldur.example.org/api/", "waldur_api_url: "+srv.URL())
	text = strings.ReplaceAll(text, "waldur_api_token: synthetic-token", "waldur_api_token: "+srv.Token())
	loaded, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wire := engine.Options{Publish: engine.Directory, Dir: filepath.Join(t.TempDir(), "events")}
	e, err := engine.FromConfig(loaded.Config, wire)
	if err != nil {
		t.Fatal(err)
	}
	if out := e.Run(context.Background(), engine.Request{Command: "serve"}); out.Err != nil {
		t.Fatal(out.Err)
	}

	o := st.Offerings[0]
	project := o.Resources[0].ProjectUUID
	srv.AddServiceAccount(o.OfferingUUID, waldur.ServiceAccount{ProjectUUID: project, Username: "robot-new", State: waldur.AccountOK})
	var ids []waldur.UUID // what the event's trigger reaches: its project's resources
	for _, r := range o.Resources {
		if r.ProjectUUID == project {
			ids = append(ids, r.UUID)
		}
	}
	ctx, tally := waldur.WithTally(context.Background())
	got := e.Run(ctx, engine.Request{Command: "serve", Resources: ids})
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if calls := tally.Stats().Requests; calls[waldur.KindResourcesList] != 0 || calls[waldur.KindServiceAccounts] != 1 {
		t.Errorf("the event run made the calls %v, want one service account listing and no resource listing", calls)
	}
	wire.Dir = filepath.Join(t.TempDir(), "full")
	fresh, err := engine.FromConfig(loaded.Config, wire)
	if err != nil {
		t.Fatal(err)
	}
	want := fresh.Run(context.Background(), engine.Request{Command: "serve"})
	if want.Err != nil {
		t.Fatal(want.Err)
	}
	if !got.Result.Tree(nil).Equal(want.Result.Tree(nil)) {
		t.Fatal("the account event's run renders another tree than a full read")
	}
	found := false
	for _, data := range want.Result.Tree(nil) {
		found = found || strings.Contains(string(data), "robot-new")
	}
	if !found {
		t.Fatal("no file names the new service account: the test shows nothing")
	}
}
