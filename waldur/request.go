package waldur

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/waldur/waldur-gitops/internal/unreachable"

	"github.com/waldur/waldur-gitops/internal/redact"
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
	status int
	header http.Header
	body   []byte
	url    func() string // display form, for error messages
	red    *redact.Redactor
}

// attemptInfo travels in a request's context: what the call is (for counts
// and logs) and how many attempts it made.
type attemptInfo struct {
	kind, method, path string
	attempts           atomic.Int32
}

type attemptKey struct{}

func attemptOf(ctx context.Context) *attemptInfo {
	if a, ok := ctx.Value(attemptKey{}).(*attemptInfo); ok {
		return a
	}
	return &attemptInfo{}
}

// do sends cl with retries and returns the 2xx answer, an *APIError for any other
// status, or a transport error. At most Concurrency calls run at once. Every
// error text passes through the client's redactor.
func (c *Client) do(ctx context.Context, cl call) (*reply, error) {
	u := c.endpoint(cl.path, cl.query)
	// The display form is for errors only: a run makes thousands of calls,
	// and a redaction per call was a measurable share of a no-op's CPU.
	shown := sync.OnceValue(func() string { return c.red.String(displayURL(u)) })
	info := &attemptInfo{kind: cl.kind, method: cl.method, path: u.Path}
	req, err := c.newRequest(context.WithValue(ctx, attemptKey{}, info), cl, u)
	if err != nil {
		return nil, c.red.Error(fmt.Errorf("waldur %s %s: %w", cl.method, shown(), err))
	}
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("waldur %s %s: %w", cl.method, shown(), ctx.Err())
	}
	fail := func(err error) (*reply, error) {
		c.count(ctx, (*statsRecorder).failed, cl.kind)
		return nil, c.red.Error(err)
	}
	if err := unreachable.Check(ctx, c.base.Host); err != nil {
		return fail(fmt.Errorf("waldur %s %s: %w", cl.method, shown(), err))
	}
	resp, err := c.http.Do(req)
	attempts := int(info.attempts.Load())
	if err != nil {
		closeBody(resp)
		unreachable.Mark(ctx, c.base.Host, err)
		err = transportCause(ctx, err)
		if attempts > 1 && ctx.Err() == nil {
			err = fmt.Errorf("%w (gave up after %d attempts)", err, attempts)
		}
		return fail(fmt.Errorf("waldur %s %s: %w", cl.method, shown(), err))
	}
	defer closeBody(resp)
	// The transport has read the body already (see authTransport); this reads
	// it from memory.
	body, err := readBody(resp)
	switch {
	case err != nil:
		return fail(fmt.Errorf("waldur %s %s: read response: %w", cl.method, shown(), transportCause(ctx, err)))
	case len(body) > maxBodyBytes:
		return fail(fmt.Errorf("waldur %s %s: response larger than %d bytes", cl.method, shown(), maxBodyBytes))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		ae := newAPIError(cl.method, shown(), resp, body, c.red)
		ae.TokenSource = c.opts.TokenSource
		if attempts > 1 && retryableStatus(resp.StatusCode) {
			ae.Attempts = attempts
		}
		return fail(ae)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: body, url: shown, red: c.red}, nil
}

// maxTimeoutAttempts bounds the tries of a request that got no answer at
// all within the timeout: each costs the whole timeout, so a server that
// accepts connections and never answers costs two timeouts, not six.
const maxTimeoutAttempts = 2

// retryableStatus reports whether the retry policy retries an answer with
// this status (429 and 5xx except 501).
func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || (code >= 500 && code != http.StatusNotImplemented)
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

// authTransport adds the token to requests for the configured host, reads
// the whole response body (so that a connection reset in the middle of a body
// is a transport error, which the retry policy retries), counts and logs
// every attempt. The token is never logged.
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
	kind := attemptOf(req.Context()).kind
	c.count(req.Context(), (*statsRecorder).attempt, kind)
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		var body []byte
		body, err = readBody(resp)
		_ = resp.Body.Close()
		if err != nil {
			err = fmt.Errorf("read response body (status %d, %d bytes read): %w", resp.StatusCode, len(body), err)
		} else {
			resp.Body = &readBuffer{Reader: bytes.NewReader(body), data: body}
		}
	}
	// The attributes only when they are logged: a run makes thousands of
	// requests and logs them at debug level only.
	if !c.log.Enabled(req.Context(), slog.LevelDebug) {
		if err != nil {
			return nil, err
		}
		return resp, nil
	}
	attrs := []any{"kind", kind, "method", req.Method, "path", req.URL.Path, "duration", time.Since(start)}
	if err != nil {
		c.log.Debug("waldur request failed", append(attrs, "error", c.red.String(err.Error()))...)
		return nil, err
	}
	c.log.Debug("waldur request", append(attrs, "status", resp.StatusCode)...)
	return resp, nil
}

// readBuffer is a response body the transport has read: readBody takes its
// bytes instead of copying them again.
type readBuffer struct {
	*bytes.Reader
	data []byte
}

// Close implements io.Closer.
func (*readBuffer) Close() error { return nil }

// readBody reads a response body, up to maxBodyBytes+1 bytes, in one buffer
// of the announced length when there is one.
func readBody(resp *http.Response) ([]byte, error) {
	if rb, ok := resp.Body.(*readBuffer); ok && rb.Len() == len(rb.data) {
		return rb.data[:min(len(rb.data), maxBodyBytes+1)], nil
	}
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 && n <= maxBodyBytes {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, maxBodyBytes+1))
	return buf.Bytes(), err
}

// onAttempt is the retryablehttp hook run before every attempt; it counts
// attempts and retries.
func (c *Client) onAttempt(_ retryablehttp.Logger, req *http.Request, attempt int) {
	info := attemptOf(req.Context())
	info.attempts.Add(1)
	if attempt == 0 {
		return
	}
	c.count(req.Context(), (*statsRecorder).retry, info.kind)
}

// checkRetry is retryablehttp's default policy, logging at info each attempt
// that will be retried, with its number and the wait before the next one.
func (c *Client) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	retry, perr := retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	if !retry || perr != nil {
		return retry, perr
	}
	info := attemptOf(ctx)
	n := int(info.attempts.Load())
	if down := unreachable.Check(ctx, c.base.Host); down != nil {
		return false, down // another request of the run gave up on the host
	}
	if err != nil && unreachable.IsTimeout(err) && n >= maxTimeoutAttempts {
		return false, nil // each try waited the whole timeout: do reports it
	}
	if n > c.opts.RetryMax {
		return retry, perr // the last attempt: do reports the failure
	}
	wait := backoff(c.opts.RetryWaitMin, c.opts.RetryWaitMax, n-1, resp)
	attrs := []any{"kind", info.kind, "method", info.method, "path", info.path,
		"attempt", n, "max_attempts", c.opts.RetryMax + 1, "wait", wait.String()}
	if err != nil {
		attrs = append(attrs, "error", c.red.String(transportCause(ctx, err).Error()))
	} else {
		attrs = append(attrs, "status", resp.StatusCode)
	}
	c.log.Info("waldur request failed, retrying", attrs...)
	return retry, perr
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
		return fmt.Errorf("decode %s: %w", r.url(), err)
	}
	return nil
}

// decodeRaws splits a reply that must be a bare JSON array into its
// elements, which share the reply's body.
func decodeRaws(r *reply) ([]json.RawMessage, error) {
	b := bytes.TrimSpace(r.body)
	if len(b) == 0 || b[0] != '[' {
		return nil, fmt.Errorf("decode %s: response is not a JSON array (starts with %q)", r.url(), snippet([]byte(r.red.String(string(b))), 40))
	}
	if out, ok := splitArray(b); ok {
		return out, nil
	}
	var out []json.RawMessage
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
