package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/waldur/waldur-gitops/internal/testenv/chromiumtest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/status"
	"github.com/waldur/waldur-gitops/waldur"
)

// artifactsEnv names the directory the browser tests write their
// screenshots to; unset, cli/testdata/artifacts (ignored by Git).
const artifactsEnv = "WALDUR_GITOPS_ARTIFACTS"

// statusToken is the bearer token of the scenario's status page.
const statusToken = "st4tus-t0ken-0123456789"

// reviewScenario is a serve against the in-repo Waldur and a Git server with
// review.risky: branch, after a member left a project: the tenants naming
// her wait on a review branch, and orders wait. It returns the serve and
// its config.
func reviewScenario(t *testing.T) (*served, string) {
	t.Helper()
	wsrv, waldurCfg := serveExample(t)
	gsrv, repo, url := gitRepo(t)
	gittest.Git(t, repo, "config", "receive.denyDeletes", "false")
	cfg := withGit(t, waldurCfg, gsrv, url)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The token file is relative to the config file.
	writeFile(t, filepath.Join(filepath.Dir(cfg), "status-token"), statusToken+"\n")
	extra := "\nreview:\n  risky: branch\nserve:\n  commit_url: https://git.example.org/site/-/commit/{commit}\n  status_token_file: status-token\n"
	if err := os.WriteFile(cfg, append(b, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "sync", "--config", cfg); code != ExitOK && code != ExitPartial {
		t.Fatalf("first sync: exit %d\n%s", code, stderr)
	}
	const project, leaver = "e28e8a742f1e7e07ad8b7dafb922cf59", "ana@idp.example.edu"
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	off := &snap.Offerings[0]
	wsrv.SetTeam(project, slices.DeleteFunc(slices.Clone(off.Teams[project]), func(m waldur.TeamMember) bool { return m.Username == leaver }))
	// An order for one of her project's tenants waits for the review.
	_, res := resource(snap, "3cfe5210e4db306c7aabcd8103b2ad22")
	wsrv.AddOrder(off.OfferingUUID, waldur.Order{Type: "Update", State: "executing", MarketplaceResourceUUID: res.UUID, Limits: res.Limits, Created: time.Now()})
	s := startServe(t, "--config", cfg, "--interval", "1h")
	s.waitRun(time.Time{})
	return s, cfg
}

// fetchStatus reads serve's /status.json.
func fetchStatus(t *testing.T, base string) status.Status {
	t.Helper()
	st, err := status.Fetch(t.Context(), http.DefaultClient, base, "")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStatusPageInChromium loads serve's status page in a real headless
// Chromium: no console error (the favicon and the styles are served), the
// waiting order and the review branch of the scenario shown with their
// causes, no horizontal scrolling on a phone's width, and screenshots kept.
func TestStatusPageInChromium(t *testing.T) {
	browser := chromiumtest.Find()
	if browser == "" {
		t.Fatal("chromium is not installed: go run ./internal/testenv/chromiumtest/prepare (make test runs it)")
	}
	s, _ := reviewScenario(t)
	st := fetchStatus(t, s.base)
	if len(st.OrdersWaiting) == 0 || len(st.ReviewBranches) == 0 {
		b, _ := json.MarshalIndent(st, "", "  ")
		t.Fatalf("the scenario has no waiting order or no review branch:\n%s", b)
	}
	ctx := startBrowser(t, browser)
	var mu sync.Mutex
	var problems []string
	loaded := map[string]int64{} // path → HTTP status
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventResponseReceived:
			if u, err := url.Parse(ev.Response.URL); err == nil {
				loaded[u.Path] = ev.Response.Status
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning {
				problems = append(problems, "console "+string(ev.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError || ev.Entry.Level == log.LevelWarning {
				problems = append(problems, string(ev.Entry.Source)+": "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	})
	var orders, branches, tenants, title, health string
	var overflow bool
	var desktop, phone []byte
	err := chromedp.Run(ctx,
		chromedp.ActionFunc(func(ctx context.Context) error { return log.Enable().Do(ctx) }),
		network.Enable(),
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible("#orders-waiting", chromedp.ByID),
		chromedp.Title(&title),
		chromedp.Text("#orders-waiting", &orders, chromedp.ByID),
		chromedp.Text("#review-branches", &branches, chromedp.ByID),
		chromedp.Text("#health", &health, chromedp.ByID),
		chromedp.Text("#tenants", &tenants, chromedp.ByID),
		// Let the favicon and any late request report in.
		chromedp.Sleep(500*time.Millisecond),
		chromedp.FullScreenshot(&desktop, 100),
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible("#orders-waiting", chromedp.ByID),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow),
		chromedp.FullScreenshot(&phone, 100),
	)
	if err != nil {
		t.Fatal(err)
	}
	keepArtifact(t, "status-page-desktop.png", desktop)
	keepArtifact(t, "status-page-phone.png", phone)
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(problems, "\n"))
	}
	for _, p := range []string{"/", "/static/style.css", "/favicon.svg"} {
		if loaded[p] != http.StatusOK {
			t.Errorf("%s: HTTP %d, want 200 (loaded: %v)", p, loaded[p], loaded)
		}
	}
	if !strings.Contains(title, "waldur-gitops status") {
		t.Errorf("title %q", title)
	}
	if !strings.Contains(orders, string(st.OrdersWaiting[0].Cause)) || !strings.Contains(orders, st.OrdersWaiting[0].Subject) {
		t.Errorf("the waiting order %+v is not shown:\n%s", st.OrdersWaiting[0], orders)
	}
	if !strings.Contains(orders, "waiting since") {
		t.Errorf("the order's creation is not shown:\n%s", orders)
	}
	if !strings.Contains(branches, st.ReviewBranches[0].Name) {
		t.Errorf("review branch %s is not shown:\n%s", st.ReviewBranches[0].Name, branches)
	}
	if !strings.Contains(tenants, "k8s-ut-namespace") || !strings.Contains(tenants, "rancher") {
		t.Errorf("the tenants' backends are not shown:\n%s", tenants)
	}
	if health == "" {
		t.Error("no health badge")
	}
	if overflow {
		t.Error("the page scrolls sideways on a phone's width")
	}
}

// startBrowser starts Chromium with the project's flags and a fresh
// profile; it is stopped when the test ends.
func startBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir())}
	for _, f := range chromiumtest.Flags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}

// keepArtifact writes a test artifact to $WALDUR_GITOPS_ARTIFACTS, else
// testdata/artifacts.
func keepArtifact(t *testing.T, name string, data []byte) {
	t.Helper()
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(p)
	t.Logf("artifact: %s", abs)
}

// TestStatusCommand prints the scenario's picture from the run report file
// and from the running serve: the same waiting order and review branch,
// names only from the file or with serve's token.
func TestStatusCommand(t *testing.T) {
	s, cfg := reviewScenario(t)
	want := fetchStatus(t, s.base)
	code, stdout, stderr := run(t, "status", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("status: exit %d\n%s", code, stderr)
	}
	for _, w := range []string{"Orders waiting:", "[awaiting_review] orders Order " + want.OrdersWaiting[0].Subject,
		"Review branches waiting for a merge:", want.ReviewBranches[0].Name, "ut-namespaces", "k8s-ut-namespace"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("status from the report: %q missing:\n%s", w, stdout)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"json from serve", []string{"status", "--server", s.base, "-o", "json"}, ExitOK, `"cause": "awaiting_review"`},
		{"yaml from serve", []string{"status", "--server", s.base, "-o", "yaml"}, ExitOK, "cause: awaiting_review"},
		{"text from serve", []string{"status", "--server", s.base}, ExitOK, "this replica leads"},
		{"no server there", []string{"status", "--server", "http://127.0.0.1:1"}, ExitUsage, ""},
		{"not a URL", []string{"status", "--server", "waldur-gitops:9090"}, ExitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.want) {
				t.Errorf("exit %d, want %d; %q missing:\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	wrongFile := filepath.Join(t.TempDir(), "wrong")
	writeFile(t, tokenFile, statusToken)
	writeFile(t, wrongFile, "not-the-token")
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		names bool
	}{
		{"without the token", nil, ExitOK, false},
		{"with the token", []string{"--token-file", tokenFile}, ExitOK, true},
		{"with a wrong token", []string{"--token-file", wrongFile}, ExitUsage, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"status", "--server", s.base, "-o", "json"}, tc.args...)...)
			if code != tc.code || strings.Contains(stdout+stderr, statusToken) || strings.Contains(stdout+stderr, "not-the-token") {
				t.Fatalf("exit %d, want %d (or a token printed):\n%s%s", code, tc.code, stdout, stderr)
			}
			if code != ExitOK {
				return
			}
			var got status.Status
			if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Names != tc.names || len(got.OrdersWaiting) != len(want.OrdersWaiting) {
				t.Errorf("json: %v, names %v, %d orders", err, got.Names, len(got.OrdersWaiting))
			}
		})
	}
}
