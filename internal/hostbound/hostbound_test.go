package hostbound_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/hostbound"
	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		follow         hostbound.Follow
		refused        bool
		differs        string
	}{
		{"same origin followed", "https://git.example/a", "https://git.example/b", hostbound.SameOrigin, false, ""},
		{"default port is the same port", "https://git.example/a", "https://GIT.example:443/b", hostbound.SameOrigin, false, ""},
		{"ws is http", "ws://mq.example/x", "http://mq.example:80/y", hostbound.SameOrigin, false, ""},
		{"another host", "https://git.example/a", "https://evil.example/a", hostbound.SameOrigin, true, "host"},
		{"another port", "https://git.example/a", "https://git.example:8443/a", hostbound.SameOrigin, true, "port"},
		{"another scheme", "http://git.example/a", "https://git.example/a", hostbound.SameOrigin, true, "scheme"},
		{"None refuses another host", "https://kc.example/a", "https://evil.example/a", hostbound.None, true, "host"},
		{"None refuses the same origin", "https://kc.example/a", "https://kc.example/b", hostbound.None, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := hostbound.Check("some.url", tc.follow, mustURL(t, tc.from), mustURL(t, tc.to), 1)
			if got := hostbound.IsRefused(err); got != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", got, err, tc.refused)
			}
			if he, ok := err.(*hostbound.Error); ok && he.Differs != tc.differs {
				t.Errorf("Differs = %q, want %q", he.Differs, tc.differs)
			}
		})
	}
}

func TestCheckStopsLongChains(t *testing.T) {
	u := mustURL(t, "https://git.example/a")
	if err := hostbound.Check("git.url", hostbound.SameOrigin, u, u, 10); err == nil || hostbound.IsRefused(err) {
		t.Errorf("err = %v, want a redirect limit", err)
	}
}

func TestErrorShowsNoSecret(t *testing.T) {
	from := mustURL(t, "https://bot:hunter2secret@git.example/repo.git/info/refs?service=git-upload-pack")
	to := mustURL(t, "https://evil.example/x?X-Amz-Signature=abcdef123456#frag")
	err := hostbound.Check("git.url", hostbound.SameOrigin, from, to, 1)
	msg := err.Error()
	for _, leak := range []string{"hunter2secret", "bot", "abcdef123456", "frag"} {
		if strings.Contains(msg, leak) {
			t.Errorf("error shows %q: %s", leak, msg)
		}
	}
	for _, want := range []string{"git.url", "https://git.example/repo.git/info/refs?service=[redacted]", "https://evil.example/x?X-Amz-Signature=[redacted]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not show %q: %s", want, msg)
		}
	}
}

// get sends a request with a credential through hc.
func get(t *testing.T, hc *http.Client, u string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u+"/path?q=1", strings.NewReader("password=s3cret-pass"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Private-Token", "s3cret-token")
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

func TestClientsRefuseAnotherHost(t *testing.T) {
	for _, code := range redirecttest.Codes {
		for name, hc := range map[string]*http.Client{
			"CheckRedirect": {CheckRedirect: hostbound.CheckRedirect("some.url", hostbound.SameOrigin)},
			"Transport":     {Transport: hostbound.Transport(nil, "some.url", hostbound.SameOrigin)},
			"Client":        hostbound.Client(nil, "some.url", hostbound.SameOrigin),
		} {
			t.Run(http.StatusText(code)+"/"+name, func(t *testing.T) {
				rec := redirecttest.NewRecorder(t)
				from := redirecttest.Redirect(t, code, rec.URL)
				err := get(t, hc, from.URL)
				redirecttest.AssertRefused(t, err, "some.url", from.URL, rec.URL, "s3cret")
				rec.AssertUntouched(t)
			})
		}
	}
}

func TestSameOriginIsFollowedOnlyWhenAsked(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/path", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		hc      *http.Client
		refused bool
	}{
		{"CheckRedirect SameOrigin", &http.Client{CheckRedirect: hostbound.CheckRedirect("k", hostbound.SameOrigin)}, false},
		{"Transport SameOrigin", &http.Client{Transport: hostbound.Transport(nil, "k", hostbound.SameOrigin)}, false},
		{"Client SameOrigin", hostbound.Client(nil, "k", hostbound.SameOrigin), false},
		{"CheckRedirect None", &http.Client{CheckRedirect: hostbound.CheckRedirect("k", hostbound.None)}, true},
		{"Transport None", &http.Client{Transport: hostbound.Transport(nil, "k", hostbound.None)}, true},
		{"Client None", hostbound.Client(nil, "k", hostbound.None), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := get(t, tc.hc, srv.URL)
			if hostbound.IsRefused(err) != tc.refused {
				t.Errorf("err = %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// TestClientLeavesTheOriginalAlone: Client works on a copy, keeping its
// settings; the caller's client is not changed.
func TestClientLeavesTheOriginalAlone(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	c := hostbound.Client(hc, "k", hostbound.None)
	if hc.Transport != nil || hc.CheckRedirect != nil {
		t.Error("the caller's client was changed")
	}
	if c.Timeout != time.Second || c.Transport == nil || c.CheckRedirect == nil {
		t.Errorf("copy: timeout %v, transport %v, check %v", c.Timeout, c.Transport != nil, c.CheckRedirect != nil)
	}
}
