package cli

import (
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestSyncWholeCycle runs sync with every stage against real and in-repo
// components at once: the Waldur test server (orders to approve and finish),
// a smart-HTTP git server, and the Keycloak fake. The first run approves,
// commits, creates the groups and finishes the orders; the second changes
// nothing anywhere; with Keycloak down the commit and the orders still go
// through and the run exits with the Keycloak code.
func TestSyncWholeCycle(t *testing.T) {
	wsrv, waldurCfg := serveExample(t)
	kc := kctest.NewServer()
	defer kc.Close()
	gsrv, repo, url := gitRepo(t)
	cfg := withGit(t, keycloakConfigFrom(t, waldurCfg, kc.URL, "", true), gsrv, url)
	addExampleUsers(t, kc, cfg)

	// The example's orders: a pending Create, and an executing Create, Update
	// and Terminate.
	ids := []string{"54a6292c9df2281797c20a09d7c0590f", "197045b243082fbd3d6674b86f764e99", "94fbd109e4e61a77ebcde57fd576f006", "b27725411f259df9ed8303ba8c6910ed"}
	orderStates := func() map[string]string {
		out := map[string]string{}
		for _, id := range ids {
			if o, ok := wsrv.Order(waldur.UUID(id)); ok {
				out[id] = o.State
			}
		}
		return out
	}
	before := orderStates()

	code, stdout, stderr := run(t, "sync", "--config", cfg, "--output", "json")
	if code != ExitOK {
		t.Fatalf("first sync: exit %d\n%s\n%s", code, stdout, stderr)
	}
	rep := readReport(t, []byte(stdout))
	head := gittest.Head(t, repo, "main")
	if rep.Commit != head || rep.Counts["keycloak"]["create"] == 0 || rep.Counts["orders"]["update"] == 0 {
		t.Errorf("first sync report: commit %q (head %s), counts %v", rep.Commit, head, rep.Counts)
	}
	if len(kc.Paths("hpc")) == 0 {
		t.Error("no Keycloak groups created")
	}
	after := orderStates()
	if len(after) != len(ids) {
		t.Fatalf("orders found: %v", after)
	}
	for id, st := range after {
		if st != waldur.OrderDone {
			t.Errorf("order %s: %s before, %s after the sync, want done", id, before[id], st)
		}
	}

	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Offerings[0].Resources {
		if r.Slug == "variant-calling" {
			if got, _ := wsrv.Resource(r.UUID); got.BackendID != "waldur-variant-calling" || got.State != waldur.ResourceOK {
				t.Errorf("created resource: backend id %q, state %s", got.BackendID, got.State)
			}
		}
	}

	kc.ResetCounts()
	code, stdout, stderr = run(t, "sync", "--config", cfg, "--output", "json")
	rep = readReport(t, []byte(stdout))
	if code != ExitOK || gittest.Head(t, repo, "main") != head || kc.Writes() != 0 || rep.Commit != "" {
		t.Errorf("second sync: exit %d, new head %v, %d Keycloak writes, commit %q\n%s", code, gittest.Head(t, repo, "main") != head, kc.Writes(), rep.Commit, stderr)
	}

	// Keycloak down: the Git side and the orders are not held back.
	kc.Close()
	code, stdout, stderr = run(t, "sync", "--config", cfg, "--output", "json")
	rep = readReport(t, []byte(stdout))
	var kcErr, ordersRan bool
	for _, st := range rep.Stages {
		kcErr = kcErr || (st.Name == "keycloak" && st.Error != "")
		ordersRan = ordersRan || (st.Name == "orders" && st.Error == "")
	}
	if code != ExitKeycloak || !kcErr || !ordersRan || !strings.Contains(stderr, "keycloak") {
		t.Errorf("Keycloak down: exit %d, keycloak failed %v, orders ran %v\n%s", code, kcErr, ordersRan, stderr)
	}
}

// TestOrderWaitsForKeycloak: a Create order is not done while Keycloak is
// down, although its tenant is pushed: the run says why it waits, and the
// first run with Keycloak back finishes it.
func TestOrderWaitsForKeycloak(t *testing.T) {
	wsrv, waldurCfg := serveExample(t)
	gsrv, repo, url := gitRepo(t)
	down := kctest.NewServer()
	down.Close()
	cfg := withGit(t, keycloakConfigFrom(t, waldurCfg, down.URL, "", true), gsrv, url)

	code, stdout, stderr := run(t, "sync", "--config", cfg, "--output", "json")
	if code != ExitKeycloak || gittest.Head(t, repo, "main") == "" {
		t.Fatalf("sync with Keycloak down: exit %d\n%s", code, stderr)
	}
	if st := orderState(t, wsrv, orderCreate); st != waldur.OrderExecuting {
		t.Errorf("order %s is %s with Keycloak down, want executing", orderCreate, st)
	}
	rep := readReport(t, []byte(stdout))
	var why string
	for _, e := range rep.Changes {
		if e.Stage == "orders" && e.Kind == "Order" && strings.HasPrefix(e.Subject, orderCreate) {
			why = e.Reason
		}
	}
	if !strings.Contains(why, "not usable yet") || !strings.Contains(why, "Keycloak") {
		t.Errorf("the report says of the waiting order: %q", why)
	}

	up := kctest.NewServer()
	defer up.Close()
	cfg = withGit(t, keycloakConfigFrom(t, waldurCfg, up.URL, "", true), gsrv, url)
	addExampleUsers(t, up, cfg)
	if code, _, stderr := run(t, "sync", "--config", cfg); code != ExitOK {
		t.Fatalf("sync with Keycloak back: exit %d\n%s", code, stderr)
	}
	if st := orderState(t, wsrv, orderCreate); st != waldur.OrderDone {
		t.Errorf("order %s is %s once Keycloak is back, want done", orderCreate, st)
	}
}
