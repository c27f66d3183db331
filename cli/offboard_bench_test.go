package cli

// BenchmarkOffboardingEventToDeleted measures serve --events offboarding at
// 1,000 tenants in GitOps mode: the in-repo Waldur (seeded with
// internal/testenv/synth's state) publishes through a real RabbitMQ, serve
// consumes over web-STOMP and pushes to a real bare repository. For users
// requested for deletion one after another it reports the time from the
// request (the offering_user event) to Waldur's set_deleted as p50 and p99.
// No consumer applies the commits and no Keycloak is read back, so a removal
// counts as proved once its commit is on the branch (verified: branch):
//
//	go run ./internal/testenv/rabbittest/prepare
//	go test ./cli -run '^$' -bench BenchmarkOffboardingEventToDeleted -benchtime 1x
//
// $WALDUR_GITOPS_BENCH_TENANTS changes the number of tenants (default
// 1,000), $WALDUR_GITOPS_BENCH_USERS the number of requests (default 10).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

func BenchmarkOffboardingEventToDeleted(b *testing.B) {
	n := envInt("WALDUR_GITOPS_BENCH_TENANTS", 1000)
	count := envInt("WALDUR_GITOPS_BENCH_USERS", 10)
	broker := rmq.Need(b)
	opts := synth.Options{Tenants: n, Seed: 20261127, BackendTypes: []string{config.BackendK8sUTNamespace}, DisableKeycloak: true}
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
	defer func() { cancel(); <-done }()
	waitFor := func(what string, within time.Duration, ok func() bool) {
		deadline := time.Now().Add(within)
		for !ok() {
			if time.Now().After(deadline) {
				b.Fatalf("%s: not within %s:\n%s", what, within, tail(stderr.String(), 4000))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("the first run", 10*time.Minute, func() bool { return len(runLines(stderr.String())) >= 1 })
	b.Logf("first full run at %d tenants: %s", n, runLines(stderr.String())[0].Duration)
	waitFor("subscriptions", time.Minute, func() bool {
		for _, q := range wsrv.EventQueues() {
			if info, err := broker.Queue(context.Background(), q.VHost, q.Name); err != nil || info.Consumers == 0 {
				return false
			}
		}
		return len(wsrv.EventQueues()) == 1
	})
	var users []waldur.UUID
	for _, u := range state.Offerings[0].OfferingUsers {
		if u.State == "OK" && u.Username != "" && len(users) < count {
			users = append(users, u.UUID)
		}
	}
	var lat []time.Duration
	for b.Loop() {
		lat = lat[:0]
		for _, id := range users {
			if wsrv.OfferingUserState(id) != "OK" {
				continue // the loop's earlier rounds took it
			}
			start := time.Now()
			wsrv.SetOfferingUserState(id, waldur.OfferingUserRequestedDeletion)
			waitFor("user "+string(id)+" deleted", 2*time.Minute, func() bool { return wsrv.OfferingUserState(id) == waldur.OfferingUserDeleted })
			lat = append(lat, time.Since(start))
			time.Sleep(500 * time.Millisecond) // let the run end before the next request
		}
	}
	if len(lat) == 0 {
		b.Fatal("no user was offboarded")
	}
	b.ReportMetric(float64(percentile(lat, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Milliseconds()), "p99-ms")
	b.Logf("%d users at %d tenants: deletion requested → set_deleted p50 %s, p99 %s, max %s",
		len(lat), n, percentile(lat, 0.5).Round(time.Millisecond), percentile(lat, 0.99).Round(time.Millisecond), percentile(lat, 1).Round(time.Millisecond))
}

// BenchmarkOffboardingApply measures offboarding with apply at 1,000
// tenants: the in-repo Waldur seeded with synth's state, a real
// kube-apiserver holding the tenants (applied once before the clock), and
// $WALDUR_GITOPS_BENCH_USERS users (default 10) requested for deletion at
// once. It reports the wall time of the apply run that claims them, applies
// the ManagedNamespaces without them and sets them Deleted (verified as
// applied): with a CronJob, request-to-set_deleted is the wait for the next
// run plus this.
//
//	go test ./cli -run '^$' -bench BenchmarkOffboardingApply -benchtime 1x
func BenchmarkOffboardingApply(b *testing.B) {
	n := envInt("WALDUR_GITOPS_BENCH_TENANTS", 1000)
	count := envInt("WALDUR_GITOPS_BENCH_USERS", 10)
	ctx := context.Background()
	cluster := kubetest.StartForTest(b, kubetest.Options{})
	nsFile := filepath.Join(b.TempDir(), "namespaces.yaml")
	if err := os.WriteFile(nsFile, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: waldur-system\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	if _, err := cluster.ApplyFiles(ctx, "../apply/testdata/crds/managednamespace.yaml", nsFile); err != nil {
		b.Fatal(err)
	}
	opts := synth.Options{Tenants: n, Seed: 20261127, BackendTypes: []string{config.BackendK8sUTNamespace}, DisableKeycloak: true}
	state := synth.Generate(opts)
	wsrv := waldurtest.New(b, waldurtest.LogViolations())
	wsrv.Seed(state)
	text := string(synth.ConfigYAML(opts))
	text = strings.ReplaceAll(text, "waldur_api_url: https://waldur.example.org/api/", "waldur_api_url: "+wsrv.URL())
	text = strings.ReplaceAll(text, "waldur_api_token: synthetic-token", "waldur_api_token: "+wsrv.Token())
	cfg := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	apply := func(what string) time.Duration {
		start := time.Now()
		var out, errb strings.Builder
		code := Main([]string{"apply", "--config", cfg, "--kubeconfig", cluster.KubeconfigPath(kubetest.Admin), "--qps", "0", "--output", "json"}, &out, &errb)
		if code != ExitOK && code != ExitPartial {
			b.Fatalf("%s: exit %d\n%s", what, code, tail(errb.String(), 4000))
		}
		took := time.Since(start)
		var rep struct {
			Stages []struct {
				Name    string  `json:"name"`
				Seconds float64 `json:"duration_seconds"`
			}
		}
		if json.Unmarshal([]byte(out.String()), &rep) == nil {
			var parts []string
			for _, st := range rep.Stages {
				parts = append(parts, fmt.Sprintf("%s %.2fs", st.Name, st.Seconds))
			}
			b.Logf("%s: %s (%s)", what, took.Round(time.Millisecond), strings.Join(parts, ", "))
		}
		return took
	}
	b.Logf("first apply at %d tenants: %s", n, apply("first apply").Round(time.Millisecond))
	b.Logf("a run with nothing to do: %s", apply("no-op").Round(time.Millisecond))
	var users []waldur.UUID
	for _, u := range state.Offerings[0].OfferingUsers {
		if u.State == "OK" && u.Username != "" && len(users) < count {
			users = append(users, u.UUID)
		}
	}
	var took time.Duration
	for b.Loop() {
		for _, id := range users {
			wsrv.SetOfferingUserState(id, waldur.OfferingUserRequestedDeletion)
		}
		took = apply("offboarding")
		for _, id := range users {
			if st := wsrv.OfferingUserState(id); st != waldur.OfferingUserDeleted {
				b.Fatalf("user %s is %q after the apply", id, st)
			}
			wsrv.SetOfferingUserState(id, "OK") // granted again for the next round
		}
	}
	b.ReportMetric(float64(took.Milliseconds()), "run-ms")
	b.Logf("%d users at %d tenants: the apply run that claims, removes and sets them Deleted took %s", len(users), n, took.Round(time.Millisecond))
}
