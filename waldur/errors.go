package waldur

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/waldur/waldur-gitops/internal/hostbound"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// APIError is a Waldur answer with a non-2xx status.
type APIError struct {
	// Method and URL of the request; URL carries no credentials and omits the
	// field= selection.
	Method, URL string
	// StatusCode is the HTTP status.
	StatusCode int
	// Detail is the server's message: DRF's "detail", the field errors of a 400,
	// or the start of a non-JSON body.
	Detail string
	// Location is the redirect target of a 3xx answer (redirects are not followed).
	Location string
	// Redirect is the refusal of that redirect, which the error unwraps to.
	Redirect *hostbound.Error
	// Attempts is the number of attempts made when the status is one that is
	// retried (429, 5xx) and retries ran out; zero otherwise.
	Attempts int
	// JSON reports whether the body was JSON, as Waldur's own answers are; an
	// HTML 404 comes from a proxy or a wrong URL, not from Waldur.
	JSON bool
	// TokenSource names where the token sent was read from (ClientOptions).
	TokenSource string
}

// Error implements error.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "waldur %s %s: %d %s", e.Method, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if hint := e.hint(); hint != "" {
		b.WriteString(" (" + hint + ")")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (gave up after %d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *APIError) hint() string {
	switch {
	case e.StatusCode == http.StatusUnauthorized:
		if e.TokenSource != "" {
			return "authentication failed: check the token from " + e.TokenSource
		}
		return "authentication failed: check waldur_api_token"
	case e.StatusCode == http.StatusForbidden:
		return "permission denied: the token's user needs the OFFERING.MANAGER role on the offering"
	case e.Redirect != nil:
		return e.Redirect.Error()
	case e.StatusCode >= 300 && e.StatusCode < 400:
		return "a redirect without a target: check waldur_api_url"
	}
	return ""
}

// Unwrap returns the refused redirect of a 3xx answer, if any.
func (e *APIError) Unwrap() error {
	if e.Redirect == nil {
		return nil
	}
	return e.Redirect
}

// HasStatus reports whether err is (or wraps) an *APIError with one of the codes.
func HasStatus(err error, codes ...int) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	for _, c := range codes {
		if ae.StatusCode == c {
			return true
		}
	}
	return false
}

// IsAuthError reports whether err is a 401 or 403 answer: retrying or continuing
// with other offerings will not help.
func IsAuthError(err error) bool {
	return HasStatus(err, http.StatusUnauthorized, http.StatusForbidden)
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool { return HasStatus(err, http.StatusNotFound) }

// IsConflict reports whether err is a 409 answer (wrong state for a transition).
func IsConflict(err error) bool { return HasStatus(err, http.StatusConflict) }

// newAPIError builds the error for a non-2xx answer. Every registered secret
// and the token are masked in the detail and the redirect target (before any
// truncation), in case a proxy echoes request headers or a form body.
func newAPIError(method, shownURL string, resp *http.Response, body []byte, red *redact.Redactor) *APIError {
	detail, isJSON := errorDetail(body, red)
	loc := resp.Header.Get("Location")
	if loc != "" {
		loc = red.String(redact.URL(loc))
	}
	return &APIError{
		Method:     method,
		URL:        shownURL,
		StatusCode: resp.StatusCode,
		Detail:     detail,
		Location:   loc,
		Redirect:   refusedRedirect(shownURL, resp, red),
		JSON:       isJSON,
	}
}

// refusedRedirect is the refusal of a 3xx answer's redirect, nil for another
// answer: the client follows none (a redirect would hide a wrong base URL).
func refusedRedirect(shownURL string, resp *http.Response, red *redact.Redactor) *hostbound.Error {
	to, err := resp.Location()
	if err != nil || resp.Request == nil || resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	var he *hostbound.Error
	if !errors.As(hostbound.Check("waldur_api_url", hostbound.None, resp.Request.URL, to, 1), &he) {
		return nil
	}
	he.From, he.To = shownURL, red.String(he.To)
	return he
}

// errorDetail condenses the error shapes DRF produces: {"detail": "…"},
// {"field": ["…"]}, ["…"], or a non-JSON (HTML) page; masked by red before it
// is shortened. isJSON reports whether the body was JSON.
func errorDetail(body []byte, red *redact.Redactor) (detail string, isJSON bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return "", false
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		clean := red.String(string(bytes.Join(bytes.Fields(body), []byte(" "))))
		return "non-JSON body: " + snippet([]byte(clean), 200), false
	}
	return red.String(flattenDetail(v)), true
}

func flattenDetail(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		parts := make([]string, 0, len(t))
		for _, x := range t {
			parts = append(parts, flattenDetail(x))
		}
		return strings.Join(parts, " ")
	case map[string]any:
		if d, ok := t["detail"]; ok && len(t) == 1 {
			return flattenDetail(d)
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+": "+flattenDetail(t[k]))
		}
		return strings.Join(parts, "; ")
	case nil:
		return ""
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}
