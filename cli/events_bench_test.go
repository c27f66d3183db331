package cli

// BenchmarkEventToCommit measures serve --events at 10,000 tenants: the in-repo
// Waldur (waldurtest, seeded with internal/testenv/synth's state) publishes
// through a real RabbitMQ, serve consumes over web-STOMP and pushes to a real
// bare repository. It reports, for orders created one after another, the time
// from AddOrder to the order done (its commit pushed) as p50 and p99, the
// duration of the event-triggered runs (the work of a one-order sync), and the
// duration of a full run, which is what an interval-only serve adds to half its
// interval on average:
//
//	go run ./internal/testenv/rabbittest/prepare
//	go test ./cli -run '^$' -bench BenchmarkEventToCommit -benchtime 1x
//
// $WALDUR_GITOPS_BENCH_TENANTS changes the number of tenants,
// $WALDUR_GITOPS_BENCH_ORDERS the number of orders (default 30).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// runLine is a "run finished" log line of serve.
type runLine struct {
	Msg      string `json:"msg"`
	Trigger  string `json:"trigger"`
	Duration string `json:"duration"`
	Events   int    `json:"events"`
	// Resources is how many resources an event run refreshed (0: a full run).
	Resources *int `json:"resources"`
}

func runLines(log string) []runLine {
	var out []runLine
	for _, l := range strings.Split(log, "\n") {
		var r runLine
		if json.Unmarshal([]byte(l), &r) == nil && r.Msg == "run finished" {
			out = append(out, r)
		}
	}
	return out
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1)*p + 0.5)
	return s[i]
}

func BenchmarkEventToCommit(b *testing.B) {
	n := envInt("WALDUR_GITOPS_BENCH_TENANTS", 10000)
	orders := envInt("WALDUR_GITOPS_BENCH_ORDERS", 30)
	broker := rmq.Need(b)
	// One k8s-ut-namespace offering: the synthetic offerings of the other
	// types would share namespace names on one cluster and skip each other.
	opts := synth.Options{Tenants: n, Seed: 20261124, BackendTypes: []string{config.BackendK8sUTNamespace}, DisableKeycloak: true}
	state := synth.Generate(opts)
	wsrv := waldurtest.New(b, waldurtest.WithEventBroker(broker), waldurtest.LogViolations())
	wsrv.Seed(state)

	dir := b.TempDir()
	repo := filepath.Join(dir, "tenants.git")
	gittest.InitBare(b, repo, "main")
	text := string(synth.ConfigYAML(opts))
	text = strings.ReplaceAll(text, "waldur_api_url: https://waldur.example.org/api/", "waldur_api_url: "+wsrv.URL())
	text = strings.ReplaceAll(text, "waldur_api_token: synthetic-token", "waldur_api_token: "+wsrv.Token())
	text = regexp.MustCompile(`(\n(\s*)waldur_offering_uuid: .*)`).ReplaceAllString(text, fmt.Sprintf("$1\n${2}stomp_ws_port: %d", broker.Ports.WebSTOMP))
	text = strings.Replace(text, "  url: https://git.example.org/platform/tenants.git\n", "  url: "+repo+"\n  branch: main\n", 1)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}

	stderr := &syncBuffer{}
	a := &app{stdout: stderr, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs([]string{"serve", "--listen", "127.0.0.1:0", "--config", cfg, "--events", "--events-window", "250ms", "--interval", "1h"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		<-done
		if p := os.Getenv("WALDUR_GITOPS_BENCH_LOG"); p != "" {
			_ = os.WriteFile(p, []byte(stderr.String()), 0o600)
		}
	}()

	waitFor := func(what string, within time.Duration, ok func() bool) {
		deadline := time.Now().Add(within)
		for !ok() {
			if time.Now().After(deadline) {
				b.Fatalf("%s: not within %s:\n%s", what, within, tail(stderr.String(), 4000))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t0 := time.Now()
	waitFor("the first run", 10*time.Minute, func() bool { return len(runLines(stderr.String())) >= 1 })
	first := runLines(stderr.String())[0]
	b.Logf("first full run at %d tenants: %s (%s since start)", n, first.Duration, time.Since(t0).Round(time.Millisecond))
	waitFor("subscriptions", time.Minute, func() bool {
		qs := wsrv.EventQueues()
		if len(qs) != len(opts.BackendTypes) {
			return false
		}
		for _, q := range qs {
			if info, err := broker.Queue(context.Background(), q.VHost, q.Name); err != nil || info.Consumers == 0 {
				return false
			}
		}
		return true
	})

	off := state.Offerings[0]
	model := off.Resources[0]
	for _, r := range off.Resources {
		if r.State == waldur.ResourceOK {
			model = r
			break
		}
	}
	var lat []time.Duration
	cpu0, runs0 := cpuTime(), len(runLines(stderr.String()))
	for b.Loop() {
		lat = lat[:0]
		for i := range orders {
			r := model
			r.UUID = waldur.UUID(fmt.Sprintf("be0c0000000040008000%012x", time.Now().UnixNano()&0xffffffffffff))
			r.Name, r.Slug = fmt.Sprintf("bench order %d", i), fmt.Sprintf("bench-order-%d-%d", i, time.Now().UnixNano()%100000)
			r.State, r.BackendID, r.Created = waldur.ResourceCreating, "", time.Now().UTC()
			start := time.Now()
			wsrv.AddResource(r)
			ord := wsrv.AddOrder(off.OfferingUUID, waldur.Order{Type: waldur.OrderCreate, State: waldur.OrderPendingProvider,
				MarketplaceResourceUUID: r.UUID, Limits: r.Limits, PlanUUID: r.PlanUUID, Created: time.Now().UTC()})
			waitFor("order "+string(ord)+" done", time.Minute, func() bool {
				o, ok := wsrv.Order(ord)
				return ok && o.State == waldur.OrderDone
			})
			lat = append(lat, time.Since(start))
			// Let the follow-up run (the executing event) end before the next order.
			time.Sleep(1500 * time.Millisecond)
		}
	}
	cpu := cpuTime() - cpu0
	eventRuns := len(runLines(stderr.String())) - runs0
	var work []time.Duration
	for _, l := range runLines(stderr.String()) {
		if l.Trigger == "events" {
			if d, err := time.ParseDuration(l.Duration); err == nil {
				work = append(work, d)
			}
		}
	}
	if len(work) == 0 {
		b.Fatal("no event-triggered run")
	}
	// A full run through the same path: an offering_user event asks for one.
	before := len(runLines(stderr.String()))
	wsrv.Publish(string(off.OfferingUUID), "offering_user", []byte(`{"object_type":"offering_user","action":"update","offering_uuid":"`+string(off.OfferingUUID)+`"}`))
	var full time.Duration
	waitFor("a full run", 10*time.Minute, func() bool {
		for _, l := range runLines(stderr.String())[before:] {
			if l.Trigger == "events" && l.Resources != nil && *l.Resources == 0 {
				full, _ = time.ParseDuration(l.Duration)
				return true
			}
		}
		return false
	})

	b.ReportMetric(float64(percentile(lat, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Milliseconds()), "p99-ms")
	b.ReportMetric(float64(percentile(work, 0.5).Milliseconds()), "event-run-p50-ms")
	b.ReportMetric(float64(percentile(work, 1).Milliseconds()), "event-run-max-ms")
	b.ReportMetric(float64(full.Milliseconds()), "full-run-ms")
	// CPU of the whole test process (serve, the fake Waldur, the publisher)
	// while the orders went through, per run: the work of an event run
	// without the waiting a loaded machine adds to its wall time.
	cpuPerRun := cpu / time.Duration(max(eventRuns, 1))
	b.ReportMetric(float64(cpuPerRun.Milliseconds()), "cpu-ms/event-run")
	b.Logf("%d orders at %d tenants: order created → done (commit pushed) p50 %s, p99 %s, max %s; event-triggered runs %d: p50 %s, max %s, CPU per run %s; full run %s",
		len(lat), n, percentile(lat, 0.5).Round(time.Millisecond), percentile(lat, 0.99).Round(time.Millisecond), percentile(lat, 1).Round(time.Millisecond),
		len(work), percentile(work, 0.5), percentile(work, 1), cpuPerRun.Round(time.Millisecond), full)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
