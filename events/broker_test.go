package events_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/internal/testenv/rabbittest"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

var rmq rabbittest.Shared

func TestMain(m *testing.M) { os.Exit(rabbittest.Main(m, &rmq)) }

const offeringUUID = waldur.UUID("0ff0000000004000800000000000000a")

// rig is a fake Waldur publishing through the real broker and a consumer of
// its offering's events.
type rig struct {
	b        *rabbittest.Broker
	w        *waldurtest.Server
	sink     *events.Coalescer
	consumer *events.Consumer
	metrics  *events.Metrics
	log      *syncBuffer
	cancel   context.CancelFunc
	done     chan struct{}
	passcode string
	client   *waldur.Client
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRig(t *testing.T, opts ...waldurtest.Option) *rig {
	t.Helper()
	b := rmq.Need(t)
	w := waldurtest.New(t, append([]waldurtest.Option{waldurtest.WithEventBroker(b)}, opts...)...)
	w.AddOffering(waldur.ProviderOffering{UUID: offeringUUID, Name: "hpc"})
	r := &rig{b: b, w: w, sink: &events.Coalescer{Window: 300 * time.Millisecond}, log: &syncBuffer{}, passcode: w.Token()}
	r.metrics = events.NewMetrics("test", prometheus.NewRegistry())
	c, err := waldur.NewClient(waldur.ClientOptions{BaseURL: w.URL(), Token: w.Token()})
	if err != nil {
		t.Fatal(err)
	}
	r.client = c
	r.consumer = &events.Consumer{
		Sink: r.sink, Metrics: r.metrics, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		Log: slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Offerings: []events.Offering{{
			Name: "hpc", UUID: offeringUUID, URL: b.WebSTOMPURL(),
			Passcode: func() (string, error) { return r.passcode, nil },
			Registrar: &events.WaldurRegistrar{Client: func() (*waldur.Client, error) { return c, nil }, Offering: offeringUUID,
				Identity: waldur.AgentIdentityRequest{Offering: offeringUUID, Name: "waldur-gitops-hpc"}},
		}},
	}
	return r
}

func (r *rig) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() { defer close(r.done); _ = r.consumer.Run(ctx) }()
	t.Cleanup(func() {
		r.cancel()
		<-r.done
		if t.Failed() {
			t.Logf("consumer log:\n%s", r.log.String())
		}
	})
}

func (r *rig) waitConnected(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, s := range r.consumer.State() {
			if s.Connected {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the consumer did not connect within %s: %+v", within, r.consumer.State())
}

// next waits for a trigger.
func (r *rig) next(t *testing.T, within time.Duration) events.Trigger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tr, ok := r.sink.Next(ctx)
	if !ok {
		t.Fatalf("no trigger within %s; consumer state %+v", within, r.consumer.State())
	}
	return tr
}

func newOrder(r *rig, i int) (waldur.UUID, waldur.UUID) {
	res := waldur.UUID(fmt.Sprintf("4e500000000040008000%012x", i))
	ord := r.w.AddOrder(offeringUUID, waldur.Order{Type: waldur.OrderCreate, State: waldur.OrderPendingProvider,
		MarketplaceResourceUUID: res, ResourceName: fmt.Sprintf("r%d", i)})
	return ord, res
}

func TestOrderEventBecomesTrigger(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []waldurtest.Option
		// legacy: one queue per object type (8.0 event subscriptions).
		legacy bool
		fault  bool
	}{
		{name: "8.1 register_queue"},
		{name: "8.0 event subscriptions", opts: []waldurtest.Option{waldurtest.WithVersion("8.0.5")}, legacy: true},
		{name: "8.1 without register_queue falls back", legacy: true, fault: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts...)
			if tc.fault {
				id, err := r.client.CreateAgentIdentity(context.Background(), waldur.AgentIdentityRequest{Offering: offeringUUID, Name: "waldur-gitops-hpc"})
				if err != nil {
					t.Fatal(err)
				}
				r.w.InjectFault(waldurtest.Fault{PathPrefix: "/api/marketplace-site-agent-identities/" + string(id.UUID) + "/register_queue/", Status: 404, Count: 1})
			}
			r.start(t)
			r.waitConnected(t, 30*time.Second)
			q := r.w.EventQueues()
			if tc.legacy != (len(q) > 1) || (tc.legacy && !strings.HasPrefix(q[0].Name, "subscription_")) {
				t.Fatalf("queues %+v: want legacy=%v", q, tc.legacy)
			}
			// Every queue subscribed before the order is published.
			waitConsumers(t, r, q)
			t0 := time.Now()
			_, res := newOrder(r, 1)
			tr := r.next(t, 10*time.Second)
			if !slices.Contains(tr.Resources, res) || tr.Events[events.TypeOrder] != 1 {
				t.Fatalf("trigger %+v: want resource %s from one order event", tr, res)
			}
			if d := time.Since(t0); d > 3*time.Second {
				t.Errorf("the order reached the trigger after %s", d)
			}
			if got := testutil.ToFloat64(r.metrics.Received.WithLabelValues("order")); got != 1 {
				t.Errorf("events received (order) = %v, want 1", got)
			}
			if got := testutil.ToFloat64(r.metrics.Connected.WithLabelValues("hpc")); got != 1 {
				t.Errorf("consumer connected = %v, want 1", got)
			}
		})
	}
}

func waitConsumers(t *testing.T, r *rig, qs []waldurtest.EventQueue) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, q := range qs {
		for {
			info, err := r.b.Queue(context.Background(), q.VHost, q.Name)
			if err == nil && info.Consumers > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("queue %s has no consumer: %+v %v", q.Name, info, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func TestMalformedAndForeignMessagesAreAckedAndIgnored(t *testing.T) {
	r := newRig(t)
	r.start(t)
	r.waitConnected(t, 30*time.Second)
	q := r.w.EventQueues()[0]
	off := string(offeringUUID)
	r.w.Publish(off, "order", []byte(`{not json`))
	r.w.Publish(off, "order", []byte(`{"object_type": "order"}`))
	r.w.Publish(off, "order", []byte(`{"object_type": "order", "order_uuid": "not-a-uuid"}`))
	r.w.Publish(off, "order", []byte(`{"object_type": "order", "order_uuid": "0d000000000040008000000000000001", "order_state": "done"}`))
	r.w.Publish(off, "order", []byte(`{"object_type": "order", "order_uuid": "0d000000000040008000000000000002", "order_state": "executing", "offering_uuid": "99999999999940008000000000000009", "resource_uuid": "4e500000000040008000000000000009"}`))
	_, res := newOrder(r, 2)
	tr := r.next(t, 10*time.Second)
	if len(tr.Resources) != 1 || tr.Resources[0] != res || tr.Full {
		t.Fatalf("trigger %+v: want only resource %s", tr, res)
	}
	// Everything was acked: the queue is empty, and the consumer is still there.
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := r.b.Queue(context.Background(), q.VHost, q.Name)
		if err == nil && info.Messages == 0 && info.Consumers == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue after the bad messages: %+v %v", info, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := testutil.ToFloat64(r.metrics.Ignored.WithLabelValues("malformed")); got != 3 {
		t.Errorf("malformed = %v, want 3", got)
	}
	if got := testutil.ToFloat64(r.metrics.Ignored.WithLabelValues("other_offering")); got != 1 {
		t.Errorf("other_offering = %v, want 1", got)
	}
	if !strings.Contains(r.log.String(), "a malformed message was dropped") {
		t.Errorf("no log line for the malformed messages")
	}
}

func TestBrokerRestartReconnectsAndCatchesUp(t *testing.T) {
	r := newRig(t)
	r.start(t)
	r.waitConnected(t, 30*time.Second)
	q := r.w.EventQueues()[0]
	if err := r.b.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Published while the consumer has not come back: the durable queue keeps it.
	_, res := newOrder(r, 3)
	if n := r.w.EventPublishErrors(); n != 0 {
		t.Fatalf("%d publishes failed", n)
	}
	tr := r.next(t, 60*time.Second)
	if !slices.Contains(tr.Resources, res) {
		t.Fatalf("trigger %+v: want %s", tr, res)
	}
	if got := testutil.ToFloat64(r.metrics.Reconnects.WithLabelValues("hpc")); got < 1 {
		t.Errorf("reconnects = %v, want at least 1", got)
	}
	waitConsumers(t, r, []waldurtest.EventQueue{q})
}

func TestDeletedQueueIsRegisteredAgain(t *testing.T) {
	r := newRig(t)
	r.start(t)
	r.waitConnected(t, 30*time.Second)
	q := r.w.EventQueues()[0]
	waitConsumers(t, r, []waldurtest.EventQueue{q})
	before := r.w.Requests("/api/marketplace-site-agent-identities/")
	if err := r.b.DeleteQueue(context.Background(), q.VHost, q.Name); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.w.Requests("/api/marketplace-site-agent-identities/") == before {
		if time.Now().After(deadline) {
			t.Fatalf("no registration after the queue was deleted; log:\n%s", r.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitConsumers(t, r, []waldurtest.EventQueue{q})
	_, res := newOrder(r, 4)
	tr := r.next(t, 20*time.Second)
	if !slices.Contains(tr.Resources, res) {
		t.Fatalf("trigger %+v: want %s", tr, res)
	}
}

func TestWrongPasscodeIsAClearError(t *testing.T) {
	r := newRig(t)
	r.passcode = "not-the-token"
	r.start(t)
	deadline := time.Now().Add(30 * time.Second)
	var st events.OfferingState
	for time.Now().Before(deadline) {
		if all := r.consumer.State(); len(all) > 0 {
			st = all[0]
		}
		if st.LastError != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(st.LastError, "STOMP login refused") || st.Connected {
		t.Fatalf("state %+v: want a refused login", st)
	}
	if strings.Contains(r.log.String(), "not-the-token") || strings.Contains(st.LastError, "not-the-token") {
		t.Errorf("the passcode leaked into the log or the state")
	}
}

func TestEventStormIsCoalesced(t *testing.T) {
	r := newRig(t)
	r.start(t)
	r.waitConnected(t, 30*time.Second)
	waitConsumers(t, r, r.w.EventQueues())
	const n = 1000
	want := map[waldur.UUID]bool{}
	var mu sync.Mutex
	got := map[waldur.UUID]bool{}
	triggers := 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			tr, ok := r.sink.Next(ctx)
			if !ok {
				return
			}
			mu.Lock()
			triggers++
			for _, u := range tr.Resources {
				got[u] = true
			}
			mu.Unlock()
			time.Sleep(500 * time.Millisecond) // a sync in progress
		}
	}()
	t0 := time.Now()
	for i := range n {
		_, res := newOrder(r, 1000+i)
		want[res] = true
	}
	publish := time.Since(t0)
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		all := len(got) == len(want)
		mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s %d of %d resources triggered", len(got), len(want))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	t.Logf("%d events published in %s, coalesced into %d triggers", n, publish.Round(time.Millisecond), triggers)
	if triggers > 2+int(publish/(500*time.Millisecond))+2 {
		t.Errorf("%d triggers for %d events in %s: not coalesced", triggers, n, publish)
	}
}

func TestURL(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		api, host, path string
		port            int
		tls             *bool
		want            string
	}{
		{api: "https://waldur.example.org/api/", want: "wss://waldur.example.org:443/rmqws-stomp"},
		{api: "http://127.0.0.1:8000/", want: "ws://127.0.0.1:8000/rmqws-stomp"},
		{api: "https://waldur.example.org/", host: "mq.example.org", port: 15674, path: "ws", want: "wss://mq.example.org:15674/ws"},
		{api: "https://waldur.example.org/", tls: &no, want: "ws://waldur.example.org:80/rmqws-stomp"},
		{api: "http://waldur.example.org/", tls: &yes, want: "wss://waldur.example.org:443/rmqws-stomp"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			got, err := events.URL(tc.api, tc.host, tc.port, tc.path, tc.tls)
			if err != nil || got != tc.want {
				t.Fatalf("URL = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := events.URL("::bad", "", 0, "", nil); err == nil {
		t.Error("a bad API URL gave no error")
	}
}
