package serve

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeRuns is a Run that records starts, ends and the most runs seen at once.
type fakeRuns struct {
	mu        sync.Mutex
	active    int
	maxActive int
	starts    []time.Time
	ends      []time.Time
	// take is how long each run lasts unless its context ends first.
	take time.Duration
	// cancelled counts runs that saw their context end.
	cancelled atomic.Int32
	started   chan struct{}
}

func (f *fakeRuns) run(ctx context.Context) Outcome {
	f.mu.Lock()
	f.active++
	f.maxActive = max(f.maxActive, f.active)
	start := time.Now()
	f.starts = append(f.starts, start)
	f.mu.Unlock()
	if f.started != nil {
		select {
		case f.started <- struct{}{}:
		default:
		}
	}
	res := ResultOK
	select {
	case <-time.After(f.take):
	case <-ctx.Done():
		f.cancelled.Add(1)
		res = ResultFailed
	}
	f.mu.Lock()
	f.active--
	end := time.Now()
	f.ends = append(f.ends, end)
	f.mu.Unlock()
	return Outcome{Started: start, Finished: end, Result: res}
}

// TestLoopNeverOverlaps runs runs that take three times the interval: they
// must follow each other, each starting right after the previous ended.
func TestLoopNeverOverlaps(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		take     time.Duration
		jitter   float64
	}{
		{"runs longer than the interval", 50 * time.Millisecond, 150 * time.Millisecond, 0},
		{"runs longer than the interval, with jitter", 50 * time.Millisecond, 150 * time.Millisecond, 0.5},
		{"runs shorter than the interval", 200 * time.Millisecond, 20 * time.Millisecond, 0},
	}
	// The fake stamps its runs from their own goroutine, which a loaded
	// machine (the race detector on two cores) starts late: the timing checks
	// allow for that much early (the loop never starts a run early) and
	// three times as much late.
	const slack, lateSlack = 50 * time.Millisecond, 150 * time.Millisecond
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRuns{take: tt.take}
			l := &Loop{Interval: tt.interval, Jitter: tt.jitter, Grace: time.Second, Run: f.run}
			window := 3*max(tt.interval, tt.take) + tt.interval/2
			ctx, cancel := context.WithTimeout(context.Background(), window)
			defer cancel()
			if err := l.Start(ctx); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.maxActive != 1 {
				t.Errorf("%d runs at once, want 1", f.maxActive)
			}
			if len(f.starts) < 3 {
				t.Fatalf("only %d runs in %s", len(f.starts), window)
			}
			for i := 1; i < len(f.starts); i++ {
				gap := f.starts[i].Sub(f.ends[i-1])
				if gap < 0 {
					t.Errorf("run %d started %s before run %d ended", i, -gap, i-1)
				}
				// A run longer than the interval: the next starts at once.
				// A shorter one: the next starts an interval after the start.
				if tt.take > tt.interval && gap > lateSlack {
					t.Errorf("run %d started %s after the previous ended, want at once", i, gap)
				}
				if tt.take < tt.interval {
					if d := f.starts[i].Sub(f.starts[i-1]); d < tt.interval-slack || d > tt.interval+lateSlack {
						t.Errorf("runs %d and %d started %s apart, want about %s", i-1, i, d, tt.interval)
					}
				}
			}
		})
	}
}

func TestWaitJitter(t *testing.T) {
	tests := []struct {
		name   string
		jitter float64
		u      float64
		want   time.Duration
	}{
		{"no jitter", 0, 0.9, 100 * time.Second},
		{"lowest", 0.1, 0, 90 * time.Second},
		{"middle", 0.1, 0.5, 100 * time.Second},
		{"near the top", 0.1, 0.75, 105 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &Loop{Interval: 100 * time.Second, Jitter: tt.jitter, Rand: func() float64 { return tt.u }}
			if got := l.Wait(); got != tt.want {
				t.Errorf("wait %s, want %s", got, tt.want)
			}
		})
	}
	l := &Loop{Interval: time.Minute, Jitter: 0.2}
	for range 200 {
		if w := l.Wait(); w < 48*time.Second || w >= 72*time.Second {
			t.Fatalf("wait %s outside ±20%% of a minute", w)
		}
	}
}

// TestLoopStop stops the loop while it waits and while a run is going on:
// a run within the grace period finishes, a longer one is cancelled.
func TestLoopStop(t *testing.T) {
	tests := []struct {
		name          string
		take, grace   time.Duration
		stopDuringRun bool
		wantCancelled int32
		wantStopBy    time.Duration
	}{
		{"idle", time.Millisecond, time.Second, false, 0, 100 * time.Millisecond},
		{"run finishes within the grace", 150 * time.Millisecond, time.Second, true, 0, 400 * time.Millisecond},
		{"run cancelled after the grace", 10 * time.Second, 100 * time.Millisecond, true, 1, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRuns{take: tt.take, started: make(chan struct{}, 1)}
			h := NewHealth(time.Now(), time.Hour, nil)
			l := &Loop{Interval: time.Hour, Grace: tt.grace, Run: f.run, Health: h}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- l.Start(ctx) }()
			<-f.started
			if !tt.stopDuringRun {
				// Wait for the first run to end: the loop is then idle.
				for h.Check().LastRun == nil {
					time.Sleep(time.Millisecond)
				}
			}
			stop := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("stop: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the loop did not stop")
			}
			if took := time.Since(stop); took > tt.wantStopBy {
				t.Errorf("stopping took %s, want at most %s", took, tt.wantStopBy)
			}
			if got := f.cancelled.Load(); got != tt.wantCancelled {
				t.Errorf("%d runs cancelled, want %d", got, tt.wantCancelled)
			}
			f.mu.Lock()
			n := len(f.starts)
			f.mu.Unlock()
			if n != 1 {
				t.Errorf("%d runs, want 1: no run may start after the stop", n)
			}
			if s := h.Check(); s.LastRun == nil || s.Running {
				t.Errorf("health after the stop: %+v", s)
			}
		})
	}
}

func TestLoopRejectsBadSettings(t *testing.T) {
	run := func(context.Context) Outcome { return Outcome{} }
	for _, l := range []*Loop{{Interval: 0, Run: run}, {Interval: time.Second, Jitter: 1, Run: run}, {Interval: time.Second, Jitter: -0.1, Run: run}, {Interval: time.Second}} {
		if err := l.Start(context.Background()); err == nil {
			t.Errorf("%+v: no error", l)
		}
	}
}

func TestHealth(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ok := Outcome{Started: t0.Add(time.Minute), Finished: t0.Add(2 * time.Minute), Result: ResultOK}
	partial := Outcome{Started: t0.Add(time.Minute), Finished: t0.Add(2 * time.Minute), Result: ResultPartial, ExitCode: 3}
	failed := Outcome{Started: t0.Add(time.Minute), Finished: t0.Add(2 * time.Minute), Result: ResultFailed, ExitCode: 6}
	tests := []struct {
		name          string
		runs          []Outcome
		running       bool
		at            time.Duration // after t0
		status        string
		healthy, live bool
	}{
		{"first run still going", nil, true, 20 * time.Minute, "starting", true, true},
		{"first run stuck past the bound", nil, true, 31 * time.Minute, "stale", false, false},
		{"last run ok", []Outcome{ok}, false, 10 * time.Minute, "ok", true, true},
		{"last run partial", []Outcome{ok, partial}, false, 10 * time.Minute, "ok", true, true},
		{"last run failed", []Outcome{ok, failed}, false, 10 * time.Minute, "failing", false, true},
		{"failed then ok", []Outcome{failed, ok}, false, 10 * time.Minute, "ok", true, true},
		{"no run ended for too long", []Outcome{ok}, true, 33 * time.Minute, "stale", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0.Add(tt.at)
			h := NewHealth(t0, 30*time.Minute, func() time.Time { return now })
			for _, o := range tt.runs {
				h.Begin(o.Started)
				h.End(o)
			}
			if tt.running {
				h.Begin(now.Add(-time.Minute))
			}
			s := h.Check()
			if s.Status != tt.status || s.Healthy != tt.healthy || s.Live != tt.live || s.Running != tt.running {
				t.Errorf("got %+v, want status %s healthy %v live %v", s, tt.status, tt.healthy, tt.live)
			}
			if len(tt.runs) > 0 {
				last := tt.runs[len(tt.runs)-1]
				if s.LastRun == nil || s.LastRun.Result != last.Result || s.LastRun.ExitCode != last.ExitCode ||
					s.LastRun.AgeSeconds != now.Sub(last.Finished).Seconds() {
					t.Errorf("last run %+v, want %+v", s.LastRun, last)
				}
			}
		})
	}
}

// TestServeEndpoints serves a loop over HTTP: /healthz turns 503 after a
// failed run, /livez stays 200, /metrics answers, and the server is gone
// after the stop.
func TestServeEndpoints(t *testing.T) {
	results := make(chan string)
	run := func(ctx context.Context) Outcome {
		select {
		case r := <-results:
			return Outcome{Started: time.Now(), Finished: time.Now(), Result: r}
		case <-ctx.Done():
			return Outcome{Result: ResultFailed}
		}
	}
	h := NewHealth(time.Now(), time.Hour, nil)
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_gauge", Help: "A gauge."})
	g.Set(7)
	reg.MustRegister(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	l := &Loop{Interval: time.Millisecond, Grace: 50 * time.Millisecond, Run: run, Health: h}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, Handler(h, reg), l, time.Second) }()

	get := func(path string) (int, Status) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s Status
		if path != "/metrics" {
			if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return resp.StatusCode, s
	}
	if code, s := get("/healthz"); code != http.StatusOK || s.Status != "starting" || !s.Running {
		t.Errorf("before the first run ended: %d %+v", code, s)
	}
	steps := []struct {
		result         string
		healthz, livez int
		status         string
	}{
		{ResultOK, 200, 200, "ok"},
		{ResultFailed, 503, 200, "failing"},
		{ResultPartial, 200, 200, "ok"},
	}
	for _, st := range steps {
		results <- st.result
		// The run returned; wait for the loop to record it.
		for {
			_, s := get("/livez")
			if s.LastRun != nil && s.LastRun.Result == st.result {
				break
			}
			time.Sleep(time.Millisecond)
		}
		code, s := get("/healthz")
		if code != st.healthz || s.Status != st.status {
			t.Errorf("after a %s run: /healthz %d %s, want %d %s", st.result, code, s.Status, st.healthz, st.status)
		}
		if code, _ := get("/livez"); code != st.livez {
			t.Errorf("after a %s run: /livez %d", st.result, code)
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !containsLine(string(body), "test_gauge 7") {
		t.Errorf("/metrics: %d\n%s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the server still answers after the stop")
	}
}

func containsLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}

// A run sent on Wake starts between two interval runs, without waiting for
// the interval and without moving its schedule; the health reports the
// events state.
func TestLoopWake(t *testing.T) {
	wake := make(chan func(context.Context) Outcome)
	var mu sync.Mutex
	var kinds []string
	record := func(kind string) func(context.Context) Outcome {
		return func(context.Context) Outcome {
			mu.Lock()
			kinds = append(kinds, kind)
			mu.Unlock()
			return Outcome{Started: time.Now(), Finished: time.Now(), Result: ResultOK}
		}
	}
	h := NewHealth(time.Now(), time.Hour, nil)
	h.ReportEvents(func() any { return map[string]bool{"connected": true} })
	l := &Loop{Interval: 600 * time.Millisecond, Run: record("interval"), Wake: wake, Health: h}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	wake <- record("event")
	wake <- record("event")
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Errorf("the woken runs waited %s", d)
	}
	time.Sleep(800 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"interval", "event", "event", "interval"}
	if !slices.Equal(kinds[:min(len(kinds), 4)], want) {
		t.Errorf("runs %v, want %v", kinds, want)
	}
	if s := h.Check(); s.Events == nil {
		t.Errorf("health without the events state: %+v", s)
	}
}
