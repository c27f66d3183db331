package redact_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/waldur/waldur-gitops/internal/redact"
)

// Secrets with characters that every encoding treats differently.
const (
	token    = "3f1c9a7e5b2d4c6e8a0b1c2d3e4f5a6b7c8d9e0f"
	password = `p@ss w/rd+&=<"x">%ü`
	client   = "cl1ent-S3cret/with+slash=="
)

func newRedactor() *redact.Redactor {
	r := redact.New()
	r.Add(token, password, client)
	return r
}

func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestStringMasksEveryForm(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, in, secret string
	}{
		{"raw token", "Invalid token " + token + " given", token},
		{"raw password", "password " + password + " refused", password},
		{"query-escaped (form body)", "body: grant_type=password&password=" + url.QueryEscape(password) + "&x=1", password},
		{"path-escaped", "GET /users/" + url.PathEscape(password) + "/", password},
		{"lower-case percent escapes", "pw=" + strings.ToLower(url.QueryEscape(password)), password},
		{"JSON-escaped", `{"password": "` + jsonEscaped(password) + `"}`, password},
		{"JSON-escaped without HTML escaping", `{"password": "p@ss w/rd+&=<\"x\">%ü"}`, password},
		{"Basic header, unknown user, alignment 0", "Authorization: Basic " + b64("abc:"+password), password},
		{"Basic header, unknown user, alignment 1", "Authorization: Basic " + b64("ab:"+password), password},
		{"Basic header, unknown user, alignment 2", "Authorization: Basic " + b64("a:"+password), password},
		{"Basic header of the token", "echo: Basic " + b64("x-access-token:"+token), token},
		{"URL-safe base64", "cookie=" + base64.URLEncoding.EncodeToString([]byte("user:"+client)), client},
		{"base64 of the secret alone", "data " + b64(client), client},
		{"token cut short with an ellipsis", "detail: Invalid token " + token[:20] + "…", token},
		{"token cut short at the end", "Invalid token " + token[:12], token},
		{"client secret in a query", "https://kc/token?client_secret=" + url.QueryEscape(client), client},
	}
	r := newRedactor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			if !strings.Contains(got, redact.Mask) {
				t.Errorf("nothing masked in %q", got)
			}
			for _, leak := range leaks(tt.secret) {
				if strings.Contains(got, leak) {
					t.Errorf("%q still holds %q", got, leak)
				}
			}
		})
	}
}

// leaks are substrings of a secret's forms long enough to count as a leak:
// every 6-character window of the raw, escaped and JSON forms.
func leaks(secret string) []string {
	var out []string
	for _, f := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), jsonEscaped(secret)} {
		for i := 0; i+6 <= len(f); i++ {
			out = append(out, f[i:i+6])
		}
	}
	return out
}

func TestStringKeepsOrdinaryText(t *testing.T) {
	r := newRedactor()
	for _, in := range []string{
		"",
		"waldur GET https://waldur.example/api/marketplace-orders/: 503 Service Unavailable",
		"the page 3 is gone (gave up after 4 attempts)",
		"Authorization: Token [redacted]",
	} {
		if got := r.String(in); got != in {
			t.Errorf("String(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestStringMasksURLUserInfo(t *testing.T) {
	tests := []struct{ in, want string }{
		{"dial https://ana:hunter2@git.example/repo.git: refused", "dial https://[redacted]@git.example/repo.git: refused"},
		{"token as user: https://ghp_abc123@github.com/x", "token as user: https://[redacted]@github.com/x"},
		{"two: http://a:b@h1/ and ssh://u:v@h2:22/p", "two: http://[redacted]@h1/ and ssh://[redacted]@h2:22/p"},
		{"no userinfo: https://host/path?a=b@c", "no userinfo: https://host/path?a=b@c"},
		{"mail ana@example.org stays", "mail ana@example.org stays"},
	}
	r := redact.New()
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := r.String(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShortSecretsAreNotRegistered(t *testing.T) {
	r := redact.New()
	r.Add("", "   ", "abc")
	if got := r.String("abc and abcdef"); got != "abc and abcdef" {
		t.Errorf("got %q", got)
	}
}

func TestAddBasicMasksTheWholeHeader(t *testing.T) {
	r := redact.New()
	r.AddBasic("ana", "s3cr3t-value")
	h := base64.StdEncoding.EncodeToString([]byte("ana:s3cr3t-value"))
	if got := r.String("Basic " + h); got != "Basic "+redact.Mask {
		t.Errorf("got %q", got)
	}
}

func TestWithAddsToTheParent(t *testing.T) {
	parent := redact.New()
	parent.Add("parent-secret")
	child := parent.With("child-secret")
	parent.Add("later-secret")
	got := child.String("parent-secret child-secret later-secret")
	if strings.Contains(got, "secret") {
		t.Errorf("child left %q", got)
	}
	if got := parent.String("child-secret"); got != "child-secret" {
		t.Errorf("the parent masked the child's secret: %q", got)
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	r := newRedactor()
	base := fs.ErrNotExist
	err := r.Error(fmt.Errorf("open %s: %w", token, base))
	if strings.Contains(err.Error(), token) {
		t.Errorf("error %q holds the token", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("chain lost: %v", err)
	}
	clean := errors.New("nothing secret")
	if r.Error(clean) != clean {
		t.Error("a clean error was replaced")
	}
	if r.Error(nil) != nil {
		t.Error("nil error became non-nil")
	}
}

func TestURL(t *testing.T) {
	redact.Register("global-url-secret")
	tests := []struct{ in, want string }{
		{"https://ana:pw@waldur.example/api/", "https://waldur.example/api/"},
		{"https://waldur.example/api/?x=global-url-secret", "https://waldur.example/api/?x=" + redact.Mask},
		{"not a url with global-url-secret", "not a url with " + redact.Mask},
		{"git@github.com:org/repo.git", "git@github.com:org/repo.git"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := redact.URL(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzStringNeverLeaks: whatever surrounds a secret, its raw form never
// survives.
func FuzzStringNeverLeaks(f *testing.F) {
	f.Add("prefix ", " suffix", "s3cret-value!")
	f.Add("", "", "abcd")
	f.Fuzz(func(t *testing.T, pre, post, secret string) {
		if utf8.RuneCountInString(strings.TrimSpace(secret)) < redact.MinSecret || strings.Contains(pre+post, secret) {
			return
		}
		r := redact.New()
		r.Add(secret)
		if got := r.String(pre + secret + post); strings.Contains(got, secret) {
			t.Errorf("String(%q) = %q holds the secret", pre+secret+post, got)
		}
	})
}

func TestReplaceAttrMasksLogLines(t *testing.T) {
	redact.Register("log-secret-71c3")
	var b strings.Builder
	log := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{ReplaceAttr: redact.ReplaceAttr}))
	log.Info("login with log-secret-71c3", "error", errors.New("echo "+url.QueryEscape("log-secret-71c3")),
		"url", "https://u:p@h/", "n", 3, slog.Group("g", "pw", "log-secret-71c3"))
	out := b.String()
	if strings.Contains(out, "log-secret-71c3") || strings.Contains(out, "u:p@") || !strings.Contains(out, `"n":3`) {
		t.Errorf("log line %s", out)
	}
}
