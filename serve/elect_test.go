package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/waldur/waldur-gitops/stop"
)

// memLease is a Lease held in memory, shared by the locks of several
// replicas; a replica's lock can be cut off it (every call fails).
type memLease struct {
	mu     sync.Mutex
	record *resourcelock.LeaderElectionRecord
}

// memLock is one replica's lock on a memLease.
type memLock struct {
	lease *memLease
	id    string
	cut   atomic.Bool
}

var errCut = errors.New("the API server is unreachable")

func (l *memLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if l.cut.Load() {
		return nil, nil, errCut
	}
	l.lease.mu.Lock()
	defer l.lease.mu.Unlock()
	if l.lease.record == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "test")
	}
	r := *l.lease.record
	return &r, []byte(r.HolderIdentity + r.RenewTime.String()), nil
}

func (l *memLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.Update(context.Background(), r)
}

func (l *memLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	if l.cut.Load() {
		return errCut
	}
	l.lease.mu.Lock()
	defer l.lease.mu.Unlock()
	l.lease.record = &r
	return nil
}

func (l *memLock) RecordEvent(string) {}
func (l *memLock) Identity() string   { return l.id }
func (l *memLock) Describe() string   { return "default/test" }

func (m *memLease) holder() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.record == nil {
		return ""
	}
	return m.record.HolderIdentity
}

// roles records what an Election tells its metrics.
type roles struct {
	mu  sync.Mutex
	got []bool
}

func (r *roles) SetLeader(leading bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, leading)
}

func (r *roles) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.got)
}

// elected is one replica of TestElectionFence.
type elected struct {
	e      *Election
	lock   *memLock
	health *Health
	roles  *roles
	terms  chan context.Context // each term's context, as it begins
}

func newElected(lease *memLease, id string) *elected {
	lock := &memLock{lease: lease, id: id}
	h := NewHealth(time.Now(), time.Hour, nil)
	h.Elect(id)
	r := &roles{}
	e := &Election{Lock: lock, LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
		Health: h, Metrics: r}
	return &elected{e: e, lock: lock, health: h, roles: r, terms: make(chan context.Context, 4)}
}

// start runs the election until the test ends; each term waits for its end.
func (r *elected) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.e.Run(ctx, func(ctx context.Context) { r.terms <- ctx; <-ctx.Done() })
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestElectionFence runs two replicas on one in-memory Lease: the first
// leads, the second stands by (healthy, naming the leader). Cut off the
// Lease, the leader's run context ends with a lease stop once its lease has
// less than the renew deadline left — before the renew deadline makes it
// give up, and before the other replica can take the lease — and the other
// then leads.
func TestElectionFence(t *testing.T) {
	lease := &memLease{}
	a, b := newElected(lease, "a"), newElected(lease, "b")
	a.start(t)
	var term context.Context
	select {
	case term = <-a.terms:
	case <-time.After(5 * time.Second):
		t.Fatal("a did not lead")
	}
	b.start(t)
	waitFor(t, func() bool { return b.health.Check().LeaderElection.LeaderIdentity == "a" }, "b to see a lead")
	if st := b.health.Check(); st.Status != "standby" || !st.Healthy || !st.Live || !st.Ready {
		t.Errorf("standby's status: %+v", st)
	}
	if got, want := a.roles.String(), "[false true]"; got != want {
		t.Errorf("a's roles told to the metrics: %s, want %s", got, want)
	}
	if got, want := b.roles.String(), "[false]"; got != want {
		t.Errorf("b's roles told to the metrics: %s, want %s", got, want)
	}
	run, release := a.e.Bind(term)
	defer release()
	if run.Err() != nil {
		t.Fatalf("the leader may not write: %v", context.Cause(run))
	}

	cut := time.Now()
	a.lock.cut.Store(true)
	<-run.Done()
	fenced := time.Since(cut)
	var s *stop.Stopped
	if !errors.As(context.Cause(run), &s) || s.Kind != stop.ByLease {
		t.Fatalf("the run ended with %v, want a lease stop", context.Cause(run))
	}
	if limit := a.e.LeaseDuration - a.e.RenewDeadline + 100*time.Millisecond; fenced > limit {
		t.Errorf("the permit ended %s after the cut, over %s", fenced, limit)
	}
	if lease.holder() != "a" {
		t.Errorf("the lease changed hands (%q) before the permit ended", lease.holder())
	}
	select {
	case <-term.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the term did not end after the renew deadline")
	}
	select {
	case <-b.terms:
	case <-time.After(5 * time.Second):
		t.Fatal("b did not take over")
	}
	if st := a.health.Check(); st.Status != "standby" || st.LeaderElection.Leader {
		t.Errorf("a after losing the lease: %+v", st)
	}
	if got, want := a.roles.String(), "[false true false]"; got != want {
		t.Errorf("a's roles told to the metrics: %s, want %s", got, want)
	}
	if run, _ := a.e.Bind(context.Background()); run.Err() == nil {
		t.Error("a standby may write")
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestHealthRoles: a standby is healthy, live and ready however long it
// stood by; a leader counts its staleness from when it began to lead; a
// stopping process is not ready.
func TestHealthRoles(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name                 string
		leader, stopping     bool
		ledAt, at            time.Duration // after t0
		status               string
		healthy, live, ready bool
		code                 map[string]int
	}{
		{name: "standby for days", at: 72 * time.Hour, status: "standby", healthy: true, live: true, ready: true},
		{name: "leader since a minute", leader: true, ledAt: 72 * time.Hour, at: 72*time.Hour + time.Minute, status: "starting", healthy: true, live: true, ready: true},
		{name: "leader stuck", leader: true, ledAt: time.Hour, at: 2 * time.Hour, status: "stale"},
		{name: "standby stopping", stopping: true, at: time.Minute, status: "standby", healthy: true, live: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			h := NewHealth(t0, 30*time.Minute, func() time.Time { return now })
			h.Elect("me")
			if tt.leader {
				now = t0.Add(tt.ledAt)
				h.SetRole(true, "me")
			} else {
				h.SetRole(false, "other")
			}
			if tt.stopping {
				h.Stopping()
			}
			now = t0.Add(tt.at)
			s := h.Check()
			if s.Status != tt.status || s.Healthy != tt.healthy || s.Live != tt.live || s.Ready != tt.ready || s.LeaderElection.Leader != tt.leader {
				t.Errorf("got %+v, want %s healthy %v live %v ready %v", s, tt.status, tt.healthy, tt.live, tt.ready)
			}
			srv := httptest.NewServer(Handler(h, prometheus.NewRegistry()))
			defer srv.Close()
			for path, good := range map[string]bool{"/healthz": tt.healthy, "/livez": tt.live, "/readyz": tt.ready} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if want := map[bool]int{true: 200, false: 503}[good]; resp.StatusCode != want {
					t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
				}
			}
		})
	}
}

// TestIdentity: the pod name when the downward API gives one, else the
// host name with a suffix that differs between two processes.
func TestIdentity(t *testing.T) {
	t.Setenv(PodNameEnv, "waldur-gitops-7d9f-abcde")
	if got := Identity(); got != "waldur-gitops-7d9f-abcde" {
		t.Errorf("with %s: %q", PodNameEnv, got)
	}
	t.Setenv(PodNameEnv, "")
	one, two := Identity(), Identity()
	if one == two || !strings.Contains(one, "-") {
		t.Errorf("without %s: %q and %q", PodNameEnv, one, two)
	}
}
