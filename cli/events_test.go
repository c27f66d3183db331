package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/rabbittest"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// rmq is the RabbitMQ of the event tests, started by the first that needs it.
var rmq rabbittest.Shared

const plainOffering = waldur.UUID("66c0217f031fec833da0e057be1c007e")

// eventsSetup is the example config against a fake Waldur that publishes to
// a real broker, with the web-STOMP port of that broker, and a Git server.
func eventsSetup(t *testing.T, extra string) (*rabbittest.Broker, *waldurtest.Server, *gittest.Server, string, string) {
	t.Helper()
	b := rmq.Need(t)
	wsrv, waldurCfg := serveExample(t, waldurtest.WithEventBroker(b))
	gsrv, repo, url := gitRepo(t)
	cfg := withGit(t, waldurCfg, gsrv, url)
	text := string(mustRead(t, cfg))
	text = regexp.MustCompile(`(\n(\s*)waldur_offering_uuid: .*)`).ReplaceAllString(text, fmt.Sprintf("$1\n${2}stomp_ws_port: %d%s", b.Ports.WebSTOMP, extra))
	writeFile(t, cfg, text)
	return b, wsrv, gsrv, repo, cfg
}

// newPlainOrder creates, in Waldur, a resource of the plain namespace
// offering and its Create order.
func newPlainOrder(wsrv *waldurtest.Server, i int) (res, ord waldur.UUID) {
	res = waldur.UUID(fmt.Sprintf("e0e0000000004000800000000000%04x", i))
	lim := waldur.Limits{"cpu": waldur.Amount("2"), "ram": waldur.Amount("4"), "storage": waldur.Amount("10")}
	wsrv.AddResource(waldur.Resource{UUID: res, Name: fmt.Sprintf("Event portal %d", i), Slug: fmt.Sprintf("event-portal-%d", i),
		State: waldur.ResourceCreating, Limits: lim, OfferingUUID: plainOffering, PlanUUID: "14a1a3b9fb9aad3b09e11f87430cf8c5",
		ProjectUUID: "e28e8a742f1e7e07ad8b7dafb922cf59", ProjectName: "Genome Lab", ProjectSlug: "genome-lab",
		CustomerUUID: "b1a5d251fa4fe598cb947ffc42b9cbed", CustomerName: "University of Tartu", CustomerSlug: "ut", Created: time.Now().UTC()})
	ord = wsrv.AddOrder(plainOffering, waldur.Order{Type: waldur.OrderCreate, State: waldur.OrderPendingProvider,
		MarketplaceResourceUUID: res, Limits: lim, Created: time.Now().UTC()})
	return res, ord
}

// waitOrder waits until the order is done.
func waitOrder(t *testing.T, wsrv *waldurtest.Server, ord waldur.UUID, within time.Duration, log fmt.Stringer) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if o, ok := wsrv.Order(ord); ok && o.State == waldur.OrderDone {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	o, _ := wsrv.Order(ord)
	t.Fatalf("order %s is %q after %s:\n%s", ord, o.State, within, log.String())
	return 0
}

// waitSubscribed waits until every registered queue has a consumer.
func waitSubscribed(t *testing.T, b *rabbittest.Broker, wsrv *waldurtest.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		qs := wsrv.EventQueues()
		ok := len(qs) == n
		for _, q := range qs {
			info, err := b.Queue(context.Background(), q.VHost, q.Name)
			ok = ok && err == nil && info.Consumers > 0
		}
		if ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("not every queue has a consumer: %+v", wsrv.EventQueues())
}

// An order created in Waldur is committed and done within seconds, without
// waiting for the (hour-long) interval; the commit is on the remote and the
// metrics count the event and the sync it triggered.
func TestServeEventsOrderDoneWithoutInterval(t *testing.T) {
	b, wsrv, _, repo, cfg := eventsSetup(t, "")
	s := startServe(t, "--config", cfg, "--events", "--events-window", "200ms", "--interval", "1h")
	s.waitRun(time.Time{})
	waitSubscribed(t, b, wsrv, 4)
	before := len(gittest.Log(t, repo, "main"))
	res, ord := newPlainOrder(wsrv, 1)
	took := waitOrder(t, wsrv, ord, 15*time.Second, s.stderr)
	t.Logf("order done %s after it was created", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("the order took %s", took)
	}
	if after := len(gittest.Log(t, repo, "main")); after <= before {
		t.Errorf("no new commit: %d then %d", before, after)
	}
	files := gittest.Files(t, repo, "main")
	found := false
	for p := range files {
		found = found || strings.Contains(p, "event-portal-1")
	}
	if !found {
		t.Errorf("the tenant of %s is not in the pushed tree", res)
	}
	m := s.scrape()
	if v, _ := m.Value("waldur_gitops_events_received_total", map[string]string{"object_type": "order"}); v < 1 {
		t.Errorf("order events received = %v", v)
	}
	if v, _ := m.Value("waldur_gitops_events_syncs_total", nil); v < 1 {
		t.Errorf("event syncs = %v", v)
	}
	if v, _ := m.Value("waldur_gitops_events_consumer_connected", map[string]string{"offering": "Plain namespaces"}); v != 1 {
		t.Errorf("consumer connected = %v", v)
	}
	_, st := s.health()
	if st.Events == nil || !strings.Contains(fmt.Sprint(st.Events), "connected:true") {
		t.Errorf("/healthz events: %v", st.Events)
	}
	if !strings.Contains(s.stderr.String(), `"trigger":"events"`) {
		t.Errorf("no event-triggered run in the log")
	}
}

// A refused STOMP login is a clear error in the log and /healthz, and the
// interval's runs go on.
func TestServeEventsWrongPasscode(t *testing.T) {
	_, wsrv, _, _, cfg := eventsSetup(t, "")
	wsrv.SetEventPassword("something-else")
	s := startServe(t, "--config", cfg, "--events", "--interval", "300ms", "--jitter", "0")
	_, st := s.waitRun(time.Time{})
	_, st = s.waitRun(st.LastRun.Finished)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.stderr.String(), "STOMP login refused") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(s.stderr.String(), "STOMP login refused") {
		t.Fatalf("no clear error:\n%s", s.stderr.String())
	}
	code, st := s.health()
	if code != 200 || !strings.Contains(fmt.Sprint(st.Events), "STOMP login refused") {
		t.Errorf("/healthz %d, events %v", code, st.Events)
	}
	if strings.Contains(s.stderr.String(), "0123456789abcdef0123456789abcdef01234567") {
		t.Error("the token is in the log")
	}
	_, later := s.waitRun(st.LastRun.Finished)
	if later.LastRun.Result != "ok" {
		t.Errorf("interval run: %+v", later.LastRun)
	}
}

// An event storm: 500 orders created at once (1,000 events: each resource
// and each order) give a handful of runs, and every order is done.
func TestServeEventsStorm(t *testing.T) {
	b, wsrv, _, _, cfg := eventsSetup(t, "")
	s := startServe(t, "--config", cfg, "--events", "--events-window", "500ms", "--interval", "1h")
	s.waitRun(time.Time{})
	waitSubscribed(t, b, wsrv, 4)
	runsBefore := strings.Count(s.stderr.String(), `"trigger":"events"`)
	const n = 500
	var orders []waldur.UUID
	start := time.Now()
	for i := range n {
		_, ord := newPlainOrder(wsrv, 100+i)
		orders = append(orders, ord)
	}
	t.Logf("%d orders (%d events) created in %s", n, 2*n, time.Since(start).Round(time.Millisecond))
	for _, ord := range orders {
		waitOrder(t, wsrv, ord, 90*time.Second, s.stderr)
	}
	took := time.Since(start)
	// Let the run for the approvals' executing events end.
	time.Sleep(2 * time.Second)
	runs := strings.Count(s.stderr.String(), `"trigger":"events"`) - runsBefore
	t.Logf("every order done %s after the first was created, in %d event runs", took.Round(time.Millisecond), runs)
	if runs > 12 {
		t.Errorf("%d event runs for %d events: not coalesced", runs, 2*n)
	}
}
