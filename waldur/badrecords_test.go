package waldur_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestBadRecordsAreSkippedAndReported: records with a malformed uuid key or a
// value that does not decode are left out and reported with the key named;
// the rest of the offering is read.
func TestBadRecordsAreSkippedAndReported(t *testing.T) {
	srv := waldurtest.New(t, waldurtest.LogViolations())
	good := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA})
	srv.SetTeamJSON(projectA, []byte(`[{"uuid": "not-a-uuid", "username": "mallory", "full_name": "", "role": "PROJECT.ADMIN"},
		{"uuid": "`+string(uuidN(3, 1))+`", "username": "ana", "full_name": "Ana", "role": "PROJECT.ADMIN"}]`))
	srv.AddResourceJSON([]byte(fmt.Sprintf(`[
		{"uuid": "zzzz-not-hex", "name": "bad-uuid", "state": "OK", "offering_uuid": %[1]q, "project_uuid": %[2]q, "created": "2026-01-01T00:00:00Z"},
		{"uuid": %[3]q, "name": "bad-created", "state": "OK", "offering_uuid": %[1]q, "project_uuid": %[2]q, "created": "yesterday"},
		{"uuid": %[4]q, "name": "bad-project", "state": "OK", "offering_uuid": %[1]q, "project_uuid": "p-1", "created": "2026-01-01T00:00:00Z"}]`,
		offering, projectA, uuidN(2, 7), uuidN(2, 8))))
	srv.AddOrderJSON([]byte(fmt.Sprintf(`{"uuid": "12", "type": "Create", "state": "pending-provider", "offering_uuid": %q, "created": "2026-01-01T00:00:00Z"}`, offering)))
	srv.AddOrder(offering, waldur.Order{MarketplaceResourceUUID: good})
	st, err := clientFor(t, srv).ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 1 || st.Resources[0].UUID != good || len(st.Orders) != 1 {
		t.Fatalf("resources %v, orders %d; want only the good ones", resourceIDs(st.Resources), len(st.Orders))
	}
	if team := st.Teams[projectA]; len(team) != 1 || team[0].Username != "ana" {
		t.Errorf("team %+v; want ana only", team)
	}
	want := []struct {
		kind, key string
		uuid      waldur.UUID
		in        string
	}{
		{waldur.RecordResource, "uuid", "", `key uuid: "zzzznothex" is not a uuid`},
		{waldur.RecordResource, "created", uuidN(2, 7), "key created"},
		{waldur.RecordResource, "project_uuid", uuidN(2, 8), `key project_uuid: "p1" is not a uuid`},
		{waldur.RecordTeamMember, "uuid", "", "key uuid"},
		{waldur.RecordOrder, "uuid", "", `key uuid: "12" is not a uuid`},
	}
	if len(st.BadRecords) != len(want) {
		t.Fatalf("bad records %+v, want %d", st.BadRecords, len(want))
	}
	for _, w := range want {
		if !slices.ContainsFunc(st.BadRecords, func(b waldur.BadRecord) bool {
			return b.Kind == w.kind && b.Key == w.key && b.UUID == w.uuid && strings.Contains(b.Reason, w.in)
		}) {
			t.Errorf("no bad record %+v in %+v", w, st.BadRecords)
		}
	}
}

// TestTeamNotFoundSkipsTheResource: a resource deleted between the listing
// and the team read (team/ answers 404) is skipped and reported; a project
// with another resource reads its team through that one.
func TestTeamNotFoundSkipsTheResource(t *testing.T) {
	srv := waldurtest.New(t)
	projectB := uuidN(1, 9)
	a1 := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA})
	a2 := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectA})
	b1 := srv.AddResource(waldur.Resource{OfferingUUID: offering, ProjectUUID: projectB})
	srv.SetTeam(projectA, []waldur.TeamMember{{Username: "ana", Role: "PROJECT.ADMIN"}})
	srv.SetTeam(projectB, []waldur.TeamMember{{Username: "bo", Role: "PROJECT.ADMIN"}})
	for _, id := range []waldur.UUID{a1, b1} {
		srv.InjectFault(waldurtest.Fault{Count: 10, PathPrefix: resourcesPath + string(id) + "/team/", Status: http.StatusNotFound})
	}
	st, err := clientFor(t, srv).ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if got := resourceIDs(st.Resources); !slices.Equal(got, []waldur.UUID{a1, a2}) {
		t.Errorf("resources %v, want %v (b1 skipped)", got, []waldur.UUID{a1, a2})
	}
	if team := st.Teams[projectA]; len(team) != 1 || team[0].Username != "ana" {
		t.Errorf("team of project A %+v", team)
	}
	if _, ok := st.Teams[projectB]; ok {
		t.Error("project B has a team")
	}
	if len(st.BadRecords) != 1 || st.BadRecords[0].UUID != b1 || st.BadRecords[0].Key != "team" || !strings.Contains(st.BadRecords[0].Reason, "404") {
		t.Errorf("bad records %+v", st.BadRecords)
	}
}

// TestResetMidBodyIsRetried: a connection reset in the middle of a response
// body is retried like other transport errors; when it lasts, the error says
// how many attempts were made.
func TestResetMidBodyIsRetried(t *testing.T) {
	srv := waldurtest.New(t)
	seedN(srv, 3)
	srv.InjectFault(waldurtest.Fault{Count: 1, PathPrefix: resourcesPath, ResetMidBody: true})
	c := clientFor(t, srv)
	st, err := c.ReadOffering(context.Background(), "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 3 || c.Stats().Retries[waldur.KindResourcesList] != 1 {
		t.Errorf("%d resources, stats %+v", len(st.Resources), c.Stats())
	}
	srv.InjectFault(waldurtest.Fault{Count: 100, PathPrefix: "/api/version/", ResetMidBody: true})
	_, err = clientFor(t, srv, func(o *waldur.ClientOptions) { o.RetryMax = 2 }).Version(context.Background())
	if err == nil || !strings.Contains(err.Error(), "(gave up after 3 attempts)") || !strings.Contains(err.Error(), "read response body") {
		t.Errorf("error %v", err)
	}
}

// TestRetriesAreLoggedAtInfo: each retried attempt is one info line with its
// number, the maximum and the wait; the final error counts the attempts, for
// answers and for transport errors.
func TestRetriesAreLoggedAtInfo(t *testing.T) {
	tests := []struct {
		name  string
		fault waldurtest.Fault
		want  string
	}{
		{"503", waldurtest.Fault{Count: 100, Status: 503}, "503 Service Unavailable"},
		{"dropped connection", waldurtest.Fault{Count: 100, Drop: true}, "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := waldurtest.New(t)
			var logs bytes.Buffer
			var mu sync.Mutex
			logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelInfo}))
			srv.InjectFault(tt.fault)
			c := clientFor(t, srv, func(o *waldur.ClientOptions) { o.Logger, o.RetryMax = logger, 2 })
			_, err := c.Version(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "(gave up after 3 attempts)") {
				t.Errorf("error %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("want 2 retry lines, got:\n%s", logs.String())
			}
			for i, l := range lines {
				for _, w := range []string{"level=INFO", "waldur request failed, retrying", "kind=version", fmt.Sprintf("attempt=%d", i+1), "max_attempts=3", "wait="} {
					if !strings.Contains(l, w) {
						t.Errorf("line %q lacks %q", l, w)
					}
				}
			}
		})
	}
	// A call that needs no retry logs nothing at info.
	srv := waldurtest.New(t)
	var logs bytes.Buffer
	c := clientFor(t, srv, func(o *waldur.ClientOptions) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	if _, err := c.Version(context.Background()); err != nil || logs.Len() != 0 {
		t.Errorf("error %v, logs %q", err, logs.String())
	}
}

// TestEchoedSecretsAreMaskedInEveryForm: a proxy that echoes the request's
// credentials — raw, URL-encoded, JSON-escaped, base64 in a Basic header, cut
// short — and a registered secret of another service never reach an error or
// a log line.
func TestEchoedSecretsAreMaskedInEveryForm(t *testing.T) {
	const other = "kc-pa55word/with+plus"
	redact.Register(other)
	echoes := map[string]func(tok string) string{
		"raw":   func(tok string) string { return `{"detail": "bad header Token ` + tok + `"}` },
		"query": func(tok string) string { return "<html>token=" + url.QueryEscape(tok+"&"+other) + "</html>" },
		"basic": func(tok string) string {
			return "<html>Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+tok)) + "</html>"
		},
		"json":        func(tok string) string { return `{"detail": "` + strings.ReplaceAll(other, "/", `\/`) + `"}` },
		"cut short":   func(tok string) string { return "<html>" + strings.Repeat("y", 230) + " Token " + tok + "</html>" },
		"other raw":   func(string) string { return `["password ` + other + ` is wrong"]` },
		"in location": func(tok string) string { return "" },
	}
	for name, echo := range echoes {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Token ")
				if name == "in location" {
					w.Header().Set("Location", "https://u:"+tok+"@elsewhere.example/?t="+tok)
					w.WriteHeader(http.StatusFound)
					return
				}
				w.WriteHeader(http.StatusBadGateway)
				_, _ = w.Write([]byte(echo(tok)))
			}))
			defer hs.Close()
			var logs bytes.Buffer
			var mu sync.Mutex
			logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
			_, err := newClient(t, hs.URL, secretToken, func(o *waldur.ClientOptions) { o.Logger, o.RetryMax = logger, 1 }).Version(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			mu.Lock()
			defer mu.Unlock()
			for _, text := range []string{err.Error(), logs.String()} {
				for _, s := range []string{secretToken, other} {
					for i := 0; i+8 <= len(s); i++ {
						if strings.Contains(text, s[i:i+8]) || strings.Contains(text, url.QueryEscape(s)[i:i+8]) {
							t.Fatalf("%q shows part of a secret (%q)", text, s[i:i+8])
						}
					}
				}
			}
		})
	}
}
