// Package hostbound keeps credentials with the host they were configured
// for: the one redirect policy of every client that carries a credential
// (Git over HTTP, Keycloak, Waldur, the OCI registry, the Kubernetes API, the
// Pushgateway, the forge API and the events WebSocket).
//
// A redirect to another origin — another scheme, host or port — is refused
// before a request goes there, with an *Error that names the config key and
// both URLs, user information and query values masked. A redirect within the
// origin is followed only by the clients whose protocol needs it (Follow
// SameOrigin); the others refuse every redirect (Follow None).
//
// Client binds an http.Client this program builds; Transport a RoundTripper
// for libraries that build their own client from one (client-go,
// go-containerregistry); CheckRedirect is the policy as a redirect callback
// for a client whose errors are only passed on as text (gocloak), where the
// caller keeps the refusal itself.
package hostbound

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/waldur/waldur-gitops/internal/redact"
)

// Follow says which redirects a client follows.
type Follow int

const (
	// None refuses every redirect: the configured URL must be the one that
	// answers.
	None Follow = iota
	// SameOrigin follows a redirect to the same scheme, host and port (at
	// most maxHops in a row) and refuses any other.
	SameOrigin
)

// maxHops bounds a chain of same-origin redirects, as net/http does.
const maxHops = 10

// Error is a refused redirect.
type Error struct {
	// Key is the config key (or the source) the refused URL came from.
	Key string
	// From is the URL that answered with the redirect, To its target; both
	// are safe to print.
	From, To string
	// Differs is what the target does not share with From: "scheme", "host"
	// or "port"; "" when the client follows no redirect at all.
	Differs string
}

// Error implements error.
func (e *Error) Error() string {
	why := "this client follows no redirect"
	if e.Differs != "" {
		why = "another " + e.Differs + ": credentials stay with the configured one"
	}
	return fmt.Sprintf("%s: refused the redirect from %s to %s (%s); set %s to the URL that answers",
		e.Key, e.From, e.To, why, e.Key)
}

// IsRefused reports whether err is (or wraps) a refused redirect.
func IsRefused(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Check applies the policy to one redirect from one URL to the next; hops is
// the number of requests made so far in the chain.
func Check(key string, f Follow, from, to *url.URL, hops int) error {
	switch d := differs(from, to); {
	case d != "":
		return &Error{Key: key, From: Display(from), To: Display(to), Differs: d}
	case f != SameOrigin:
		return &Error{Key: key, From: Display(from), To: Display(to)}
	case hops >= maxHops:
		return fmt.Errorf("%s: stopped after %d redirects at %s", key, maxHops, Display(to))
	}
	return nil
}

// CheckRedirect is an http.Client.CheckRedirect (and resty RedirectPolicy)
// applying the policy to the target and the request that was redirected.
func CheckRedirect(key string, f Follow) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) == 0 {
			return nil
		}
		return Check(key, f, via[len(via)-1].URL, req.URL, len(via))
	}
}

// Client returns a copy of hc (nil: a new client) whose redirects follow the
// policy: its transport refuses them (so that the error names the request
// that was redirected, not the target) and so does its CheckRedirect.
func Client(hc *http.Client, key string, f Follow) *http.Client {
	c := &http.Client{}
	if hc != nil {
		cp := *hc
		c = &cp
	}
	c.Transport = Transport(c.Transport, key, f)
	c.CheckRedirect = CheckRedirect(key, f)
	return c
}

// Transport wraps base (nil: http.DefaultTransport) so that an answer
// redirecting where the policy does not allow becomes an error before the
// client could follow it.
func Transport(base http.RoundTripper, key string, f Follow) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base, key: key, follow: f}
}

type transport struct {
	base   http.RoundTripper
	key    string
	follow Follow
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || !isRedirect(resp.StatusCode) {
		return resp, err
	}
	loc, lerr := resp.Location()
	if lerr != nil {
		return resp, nil // no target: the caller sees the answer
	}
	// Hops are counted by the client; one hop here.
	if err := Check(t.key, t.follow, req.URL, loc, 0); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// WrappedRoundTripper returns base (client-go's convention for wrappers).
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.base }

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// differs names what of the origin b does not share with a: "scheme",
// "host" or "port" ("" for the same origin). A missing port is the scheme's
// default; ws and wss count as http and https.
func differs(a, b *url.URL) string {
	sa, sb := scheme(a), scheme(b)
	switch {
	case sa != sb:
		return "scheme"
	case !strings.EqualFold(a.Hostname(), b.Hostname()):
		return "host"
	case port(a, sa) != port(b, sb):
		return "port"
	}
	return ""
}

func scheme(u *url.URL) string {
	s := strings.ToLower(u.Scheme)
	switch s {
	case "ws":
		return "http"
	case "wss":
		return "https"
	}
	return s
}

func port(u *url.URL, scheme string) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// Display is u safe to print: no user information, no fragment, the values
// of the query masked, and every registered secret masked.
func Display(u *url.URL) string {
	if u == nil {
		return "(none)"
	}
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			q[k] = []string{redact.Mask}
		}
		c.RawQuery = q.Encode()
	}
	return redact.String(strings.ReplaceAll(c.String(), url.QueryEscape(redact.Mask), redact.Mask))
}
