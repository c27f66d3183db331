package waldur

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// maxBodyBytes bounds a response body; a full page of 300 resources is a few MB.
const maxBodyBytes = 64 << 20

// call describes one logical API request (retries included).
type call struct {
	kind   string     // statistics key, e.g. "resources.list"
	method string     // http.MethodGet or http.MethodPost
	path   string     // relative to /api/, with a trailing slash
	query  url.Values // may be nil
	body   any        // JSON-encoded when non-nil
}

// reply is a successful (2xx) answer.
type reply struct {
	header http.Header
	body   []byte
	url    string // display form, for error messages
}

type kindKey struct{}

// do sends cl with retries and returns the 2xx answer, an *APIError for any other
// status, or a transport error. At most Concurrency calls run at once.
func (c *Client) do(ctx context.Context, cl call) (*reply, error) {
	u := c.endpoint(cl.path, cl.query)
	shown := displayURL(u)
	req, err := c.newRequest(ctx, cl, u)
	if err != nil {
		return nil, fmt.Errorf("waldur %s %s: %w", cl.method, shown, err)
	}
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("waldur %s %s: %w", cl.method, shown, ctx.Err())
	}
	fail := func(err error) (*reply, error) {
		c.count(ctx, (*statsRecorder).failed, cl.kind)
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		closeBody(resp)
		return fail(fmt.Errorf("waldur %s %s: %w", cl.method, shown, transportCause(ctx, err)))
	}
	defer closeBody(resp)
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	switch {
	case err != nil:
		return fail(fmt.Errorf("waldur %s %s: read response: %w", cl.method, shown, transportCause(ctx, err)))
	case len(body) > maxBodyBytes:
		return fail(fmt.Errorf("waldur %s %s: response larger than %d bytes", cl.method, shown, maxBodyBytes))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return fail(newAPIError(cl.method, shown, resp, body, c.opts.Token))
	}
	return &reply{header: resp.Header, body: body, url: shown}, nil
}

func (c *Client) newRequest(ctx context.Context, cl call, u *url.URL) (*retryablehttp.Request, error) {
	var body any
	if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			return nil, fmt.Errorf("encode request body: %w", err)
		}
		body = b
	}
	ctx = context.WithValue(ctx, kindKey{}, cl.kind)
	req, err := retryablehttp.NewRequestWithContext(ctx, cl.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.opts.UserAgent)
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// transportCause strips the *url.Error wrapper (its text repeats the URL) and
// prefers the context's error when the context ended.
func transportCause(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func closeBody(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
	}
}

// displayURL is u as shown in errors and logs: no credentials (none are allowed
// in the base URL anyway) and without the long field= selection.
func displayURL(u *url.URL) string {
	v := *u
	v.User = nil
	q := v.Query()
	if q.Has("field") {
		q.Del("field")
		v.RawQuery = q.Encode()
	}
	return v.String()
}

// authTransport adds the token to requests for the configured host, counts and
// logs every attempt. The token is never logged.
type authTransport struct {
	base   http.RoundTripper
	client *Client
}

// RoundTrip implements http.RoundTripper.
func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.client
	if req.URL.Host == c.base.Host && req.URL.Scheme == c.base.Scheme {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Token "+c.opts.Token)
	}
	kind, _ := req.Context().Value(kindKey{}).(string)
	c.count(req.Context(), (*statsRecorder).attempt, kind)
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	attrs := []any{"kind", kind, "method", req.Method, "path", req.URL.Path, "duration", time.Since(start)}
	if err != nil {
		c.log.Debug("waldur request failed", append(attrs, "error", err)...)
		return nil, err
	}
	c.log.Debug("waldur request", append(attrs, "status", resp.StatusCode)...)
	return resp, nil
}

// onAttempt is the retryablehttp hook run before every attempt; it counts retries.
func (c *Client) onAttempt(_ retryablehttp.Logger, req *http.Request, attempt int) {
	if attempt == 0 {
		return
	}
	kind, _ := req.Context().Value(kindKey{}).(string)
	c.count(req.Context(), (*statsRecorder).retry, kind)
	c.log.Debug("waldur request retry", "kind", kind, "method", req.Method, "path", req.URL.Path, "attempt", attempt+1)
}

// backoff doubles the wait from lo per attempt up to hi. A Retry-After header
// (seconds or HTTP date) on 429 and 503 replaces the computed wait, capped at hi so
// that a single answer cannot stall a run.
func backoff(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return min(d, hi)
		}
	}
	d := lo
	for i := 0; i < attempt && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, 1<<20)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// decodeJSON decodes a reply body into v, naming the URL on failure.
func decodeJSON(r *reply, v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("decode %s: %w", r.url, err)
	}
	return nil
}

// decodeList decodes a reply that must be a bare JSON array.
func decodeList[T any](r *reply) ([]T, error) {
	b := bytes.TrimSpace(r.body)
	if len(b) == 0 || b[0] != '[' {
		return nil, fmt.Errorf("decode %s: response is not a JSON array (starts with %q)", r.url, snippet(b, 40))
	}
	var out []T
	if err := decodeJSON(r, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func snippet(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
