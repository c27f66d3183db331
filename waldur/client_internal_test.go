package waldur

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/redact"
)

func TestNormalizeBaseURL(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "https://waldur.example.org", want: "https://waldur.example.org"},
		{in: "https://waldur.example.org/", want: "https://waldur.example.org"},
		{in: "https://waldur.example.org/api", want: "https://waldur.example.org"},
		{in: "https://waldur.example.org/api/", want: "https://waldur.example.org"},
		{in: " http://127.0.0.1:8080/api/ ", want: "http://127.0.0.1:8080"},
		{in: "https://example.org/waldur/api/", want: "https://example.org/waldur"},
		// The Python agent's rstrip("/api") turns these into ".../w" and "https://w".
		{in: "https://example.org/wapi/", want: "https://example.org/wapi"},
		{in: "https://example.org/wapi/api", want: "https://example.org/wapi"},
		{in: "https://wapi/", want: "https://wapi"},
		{in: "https://pa.wapi", want: "https://pa.wapi"},
		{in: "ftp://example.org", wantErr: "scheme must be http or https"},
		{in: "example.org/api", wantErr: "scheme must be http or https"},
		{in: "https:///api", wantErr: "no host"},
		{in: "https://user:secret@example.org", wantErr: "credentials belong in waldur_api_token"},
		{in: "https://example.org/api/?x=1", wantErr: "query and fragment"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := normalizeBaseURL(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error leaks the URL password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEndpointKeepsTrailingSlashAndRepeatsKeys(t *testing.T) {
	base, _ := normalizeBaseURL("https://example.org/wapi/api/")
	c := &Client{base: base}
	got := c.endpoint("marketplace-orders/", url.Values{"state": {"pending-provider", "executing"}}).String()
	want := "https://example.org/wapi/api/marketplace-orders/?state=pending-provider&state=executing"
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParseLinks(t *testing.T) {
	h := `<https://w.example.org/api/x/?a=1,2&page_size=3>; rel="first", <https://w.example.org/api/x/?page=2>; rel="next",` +
		`<https://w.example.org/api/x/?page=9>;rel=last`
	got := parseLinks(h)
	want := map[string]string{
		"first": "https://w.example.org/api/x/?a=1,2&page_size=3",
		"next":  "https://w.example.org/api/x/?page=2",
		"last":  "https://w.example.org/api/x/?page=9",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if len(parseLinks("")) != 0 || len(parseLinks("garbage")) != 0 {
		t.Error("garbage parsed as links")
	}
}

func TestBackoff(t *testing.T) {
	resp := func(status int, retryAfter string) *http.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: status, Header: h}
	}
	lo, hi := 100*time.Millisecond, 2*time.Second
	tests := []struct {
		name    string
		attempt int
		resp    *http.Response
		want    time.Duration
	}{
		{"first retry waits the minimum", 0, resp(500, ""), lo},
		{"doubles per attempt", 2, resp(502, ""), 4 * lo},
		{"capped at the maximum", 10, nil, hi},
		{"Retry-After seconds on 429", 0, resp(429, "1"), time.Second},
		{"Retry-After on 503 capped", 0, resp(503, "120"), hi},
		{"Retry-After zero", 3, resp(429, "0"), 0},
		{"Retry-After ignored on 500", 0, resp(500, "1"), lo},
		{"Retry-After date in the past", 0, resp(503, "Mon, 02 Jan 2006 15:04:05 GMT"), 0},
		{"unparseable Retry-After", 1, resp(429, "soon"), 2 * lo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoff(lo, hi, tt.attempt, tt.resp); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestErrorDetail(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"detail": "Invalid token."}`, "Invalid token."},
		{`{"limits": ["This field is required."], "name": ["Too long.", "Bad."]}`, "limits: This field is required.; name: Too long. Bad."},
		{`["These components are invalid: gpu_hours."]`, "These components are invalid: gpu_hours."},
		{`{"non_field_errors": ["Either plan_period or resource should be provided."]}`, "non_field_errors: Either plan_period or resource should be provided."},
		{"<html>\n<h1>Server   Error (500)</h1></html>", "non-JSON body: <html> <h1>Server Error (500)</h1></html>"},
		{"", ""},
	}
	for _, tt := range tests {
		if got, _ := errorDetail([]byte(tt.body), redact.New()); got != tt.want {
			t.Errorf("errorDetail(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// TestErrorDetailMasksBeforeShortening: a token echoed at the end of a long
// HTML page is masked, not cut in half and shown.
func TestErrorDetailMasksBeforeShortening(t *testing.T) {
	const token = "3f1c9a7e5b2d4c6e8a0b1c2d3e4f5a6b7c8d9e0f"
	red := redact.New().With(token)
	body := "<html>" + strings.Repeat("x", 190) + " Authorization: Token " + token + "</html>"
	got, isJSON := errorDetail([]byte(body), red)
	if isJSON {
		t.Error("an HTML body counted as JSON")
	}
	for i := 0; i+6 <= len(token); i++ {
		if strings.Contains(got, token[i:i+6]) {
			t.Fatalf("detail %q shows part of the token (%q)", got, token[i:i+6])
		}
	}
}

func TestFieldSelectionsFollowTypes(t *testing.T) {
	for _, tt := range []struct {
		got  []string
		must []string
	}{
		{resourceFields, []string{"uuid", "project_uuid", "limits", "restrict_member_access", "created"}},
		{orderFields, []string{"uuid", "type", "state", "marketplace_resource_uuid", "limits", "created"}},
		{offeringUserFields, []string{"uuid", "username", "user_uuid", "is_restricted"}},
	} {
		for _, f := range tt.must {
			if !slices.Contains(tt.got, f) {
				t.Errorf("field %q missing from %v", f, tt.got)
			}
		}
	}
}
