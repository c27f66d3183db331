package statuspage_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/status"
	"github.com/waldur/waldur-gitops/statuspage"
)

var t0 = time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)

// page is a status page over one partial run whose order waits for a review
// and whose Keycloak member alice is not found.
func page(token string) *statuspage.Page {
	rep := report.New("serve", "test", false, t0)
	rep.Stages = []report.Stage{{Name: "render", DurationSeconds: 0.5}, {Name: "git", DurationSeconds: 1}, {Name: "keycloak", DurationSeconds: 0.2}}
	rep.Commit = "0123456789abcdef0123456789abcdef01234567"
	rep.ReviewBranches = []report.ReviewBranch{{Name: "waldur-gitops/review/5eed", Commit: "feedc0de", Opened: t0.Add(-time.Hour)}}
	rep.Add(changeset.Set{Entries: []changeset.Entry{
		{Stage: "render", Kind: "Tenant", Subject: "hpc/cluster/waldur-a", Action: changeset.Create},
		{Stage: "orders", Kind: "Order", Subject: "0d5e Create hpc/cluster/waldur-a", Orders: []string{"0d5e"}, Action: changeset.Skip, Reason: "waits for the review", Cause: changeset.CauseAwaitingReview},
		{Stage: "keycloak", Kind: "KeycloakMembership", Subject: "/ns_a_admin alice", Action: changeset.Skip, Reason: "user alice@example.org not found", Cause: changeset.CauseUserNotFound},
	}})
	rep.Finish(3, t0.Add(2*time.Second))
	h := status.NewHistory(0)
	h.Add(status.Record{Report: rep, Backends: map[string]string{"hpc": "namespace"}, CommitURL: "https://git.example.org/site/-/commit/{commit}"})
	return &statuspage.Page{
		Runs: h, Now: func() time.Time { return t0.Add(time.Minute) },
		State: func() (status.Serving, []events.OfferingState) {
			return status.Serving{Health: "ok", Since: t0}, []events.OfferingState{{Offering: "hpc", Connected: true, Received: 4}}
		},
		Token: func() (config.Secret, error) { return config.Secret(token), nil },
	}
}

func get(t *testing.T, h http.Handler, path, auth string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Result(), string(body)
}

// TestPage: each path answers with its type; the page names what waits and
// why, links the commit, refreshes itself and allows no script; names
// appear only with the token, and a wrong token is refused.
func TestPage(t *testing.T) {
	for _, tc := range []struct {
		name, token, path, auth string
		code                    int
		contentType             string
		want, absent            []string
	}{
		{name: "page without token", path: "/", code: 200, contentType: "text/html; charset=utf-8",
			want: []string{`http-equiv="refresh"`, "awaiting_review", "0d5e Create hpc/cluster/waldur-a", "waldur-gitops/review/5eed",
				`href="https://git.example.org/site/-/commit/0123456789abcdef0123456789abcdef01234567"`, "user_not_found", "×1", `href="./runs/1"`, `href="./static/style.css"`, "connected"},
			absent: []string{"alice", "<script", "waits for the review"}},
		{name: "page with a token configured but not sent", token: "s3cret", path: "/", code: 200, contentType: "text/html; charset=utf-8",
			want: []string{"awaiting_review"}, absent: []string{"alice"}},
		{name: "page with the token", token: "s3cret", path: "/", auth: "Bearer s3cret", code: 200, contentType: "text/html; charset=utf-8",
			want: []string{"/ns_a_admin alice", "user alice@example.org not found", "waits for the review"}},
		{name: "wrong token", token: "s3cret", path: "/", auth: "Bearer nope", code: 401, absent: []string{"alice", "s3cret"}},
		{name: "a token sent to a page without one", path: "/", auth: "Bearer s3cret", code: 200, absent: []string{"alice"}},
		{name: "run page", path: "/runs/1", code: 200, contentType: "text/html; charset=utf-8",
			want: []string{"Run 1", `href="../static/style.css"`, "hpc/cluster/waldur-a"}, absent: []string{"alice"}},
		{name: "run not kept", path: "/runs/7", code: 404},
		{name: "json", path: "/status.json", code: 200, contentType: "application/json",
			want: []string{`"schema": "waldur-gitops/status/v1"`, `"cause": "awaiting_review"`}, absent: []string{"alice"}},
		{name: "json with the token", token: "s3cret", path: "/status.json?run=1", auth: "Bearer s3cret", code: 200, contentType: "application/json",
			want: []string{"alice", `"detail"`}},
		{name: "favicon", path: "/favicon.ico", code: 200, contentType: "image/svg+xml", want: []string{"<svg"}},
		{name: "styles", path: "/static/style.css", code: 200, contentType: "text/css; charset=utf-8", want: []string{"@media (max-width"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, page(tc.token).Handler(), tc.path, tc.auth)
			if resp.StatusCode != tc.code {
				t.Fatalf("%s: %d, want %d: %s", tc.path, resp.StatusCode, tc.code, body)
			}
			if tc.contentType != "" && resp.Header.Get("Content-Type") != tc.contentType {
				t.Errorf("content type %q", resp.Header.Get("Content-Type"))
			}
			if strings.HasPrefix(tc.contentType, "text/html") && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("no CSP: %q", resp.Header.Get("Content-Security-Policy"))
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("%q missing from:\n%s", w, body)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(body, a) {
					t.Errorf("%q shown", a)
				}
			}
		})
	}
}

// TestAttention: a failed last run, a standby, disconnected events and
// waiting orders each make a line.
func TestAttention(t *testing.T) {
	s := status.Status{
		Leadership:    &status.Leadership{Elected: true, Identity: "b", LeaderIdentity: "a", LeaderURL: "http://a:9090/"},
		Runs:          []status.Run{{ID: 4, Result: "failed", ExitCode: 6, Stages: []status.Stage{{Name: "git", Error: "push refused"}}}},
		Events:        []events.OfferingState{{Offering: "hpc"}},
		OrdersWaiting: []status.Item{{Cause: changeset.CauseAwaitingApproval, Count: 1}, {Cause: changeset.CauseAwaitingApproval, Count: 1}},
		GuardRefusal:  &status.Refusal{Run: 3},
	}
	got := strings.Join(statuspage.Attention(s), "\n")
	for _, w := range []string{"stands by", "the leader is a at http://a:9090/", "(#4) failed with exit code 6 in git: push refused",
		"refused run #3", "hpc are disconnected", "Orders waiting: 2 (awaiting_approval 2)"} {
		if !strings.Contains(got, w) {
			t.Errorf("%q missing from:\n%s", w, got)
		}
	}
	if a := statuspage.Attention(status.Status{}); len(a) != 0 {
		t.Errorf("nothing wrong, yet: %v", a)
	}
}

// TestJSONRoundTrip: what /status.json answers is what status.Fetch reads.
func TestJSONRoundTrip(t *testing.T) {
	srv := httptest.NewServer(page("tok").Handler())
	defer srv.Close()
	s, err := status.Fetch(t.Context(), srv.Client(), srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Names || len(s.OrdersWaiting) != 1 || s.OrdersWaiting[0].Cause != changeset.CauseAwaitingReview || s.Runs[0].ID != 1 {
		b, _ := json.Marshal(s)
		t.Errorf("fetched: %s", b)
	}
	if _, err := status.Fetch(t.Context(), srv.Client(), srv.URL, "wrong"); err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong token: %v", err)
	}
}

// TestPageCapsLongLists: a list longer than PageItems shows PageItems
// entries and says how many more /status.json has.
func TestPageCapsLongLists(t *testing.T) {
	rep := report.New("serve", "test", false, t0)
	var cs changeset.Set
	for i := range statuspage.PageItems + 7 {
		cs.Add(changeset.Entry{Stage: "git", Kind: "ReviewChange", Subject: fmt.Sprintf("hpc/cluster/t-%04d", i), Action: changeset.Skip, Cause: changeset.CauseAwaitingReview})
	}
	rep.Add(cs)
	rep.Finish(0, t0.Add(time.Second))
	h := status.NewHistory(0)
	h.Add(status.Record{Report: rep})
	_, body := get(t, (&statuspage.Page{Runs: h}).Handler(), "/", "")
	if n := strings.Count(body, "hpc/cluster/t-"); n != statuspage.PageItems {
		t.Errorf("%d entries shown, want %d", n, statuspage.PageItems)
	}
	if !strings.Contains(body, "and 7 more: status.json lists them all") {
		t.Error("the page does not say how many more there are")
	}
	_, js := get(t, (&statuspage.Page{Runs: h}).Handler(), "/status.json", "")
	if n := strings.Count(js, "hpc/cluster/t-"); n != statuspage.PageItems+7 {
		t.Errorf("status.json lists %d, want all %d", n, statuspage.PageItems+7)
	}
}
