// Package redirecttest serves the two ends of a redirect to the tests of the
// clients that carry a credential: a server on 127.0.0.1 that redirects every
// request, and a recording server on a second loopback address, 127.0.0.2
// (another host to every client), which must never hear from them.
package redirecttest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/internal/hostbound"
)

// Codes are the redirect statuses a client is tested with: 302 turns a POST
// into a GET, 307 and 308 repeat the method and the body.
var Codes = []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}

// Recorder is an HTTP server that records every request it gets.
type Recorder struct {
	// URL is its root, "http://127.0.0.2:<port>".
	URL string

	mu  sync.Mutex
	got []string
}

// NewRecorder serves a Recorder on 127.0.0.2 until the test ends; the test
// is skipped where that address cannot be bound (it can on Linux).
func NewRecorder(t testing.TB) *Recorder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("a second loopback address is needed: %v", err)
	}
	r := &Recorder{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.record))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Recorder) record(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.got = append(r.got, fmt.Sprintf("%s %s (credential headers: %s)", req.Method, req.URL.RequestURI(), credentialHeaders(req)))
	r.mu.Unlock()
	http.Error(w, "the recorder answers nothing", http.StatusTeapot)
}

func credentialHeaders(req *http.Request) string {
	var names []string
	for _, h := range []string{"Authorization", "Private-Token", "Cookie", "Sec-Websocket-Protocol"} {
		if req.Header.Get(h) != "" {
			names = append(names, h)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Requests returns the requests received so far, one line each.
func (r *Recorder) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// AssertUntouched fails the test when the recorder got any request.
func (r *Recorder) AssertUntouched(t testing.TB) {
	t.Helper()
	if got := r.Requests(); len(got) > 0 {
		t.Errorf("the server on another host got %d request(s): %s", len(got), strings.Join(got, "; "))
	}
}

// Redirect serves, until the test ends, a server on 127.0.0.1 that answers
// every request with code and a Location of target followed by the request's
// path and query; its URL is the returned server's.
func Redirect(t testing.TB, code int, target string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Location", strings.TrimSuffix(target, "/")+req.URL.RequestURI())
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// AssertRefused fails the test unless err is a refused redirect
// (*hostbound.Error in its chain) whose text names key, the redirecting
// server (from) and the recorder (to), and holds none of secrets.
func AssertRefused(t testing.TB, err error, key, from, to string, secrets ...string) {
	t.Helper()
	AssertNamed(t, err, key, from, to, secrets...)
	var he *hostbound.Error
	if err != nil && !errors.As(err, &he) {
		t.Errorf("error is not a refused redirect (*hostbound.Error): %v", err)
	}
}

// AssertNamed is AssertRefused for a library that passes errors on as text
// only (gocloak): the text must name key, from and to, and hold no secret.
func AssertNamed(t testing.TB, err error, key, from, to string, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error: the redirect was followed or ignored")
	}
	msg := err.Error()
	for _, want := range []string{key + ": refused the redirect", hostOf(from), hostOf(to)} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not name %q: %v", want, msg)
		}
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			t.Errorf("error shows a secret: %v", msg)
		}
	}
}

// hostOf is the host:port of a URL given whole.
func hostOf(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	h, _, _ := strings.Cut(rest, "/")
	return h
}
