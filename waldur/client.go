package waldur

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/waldur/waldur-gitops/internal/redact"
)

// MaxPageSize is the largest page size Waldur serves; larger requests are clamped
// by the server.
const MaxPageSize = 300

// ClientOptions configures a Client. Start from DefaultClientOptions and override
// what the configuration sets.
type ClientOptions struct {
	// BaseURL is the Waldur server, with or without a trailing "/api" or "/api/".
	BaseURL string
	// Token is the Waldur API token, sent as "Authorization: Token <token>".
	Token string
	// TokenSource names where Token was read from (a config key, file or
	// environment variable, never the value) for the error of a 401.
	TokenSource string
	// VerifySSL enables TLS certificate verification. Keep it on outside tests.
	VerifySSL bool
	// Timeout bounds one HTTP attempt (zero: the default).
	Timeout time.Duration
	// UserAgent is sent with every request (empty: "waldur-gitops").
	UserAgent string
	// PageSize is the page size of list requests, 1..MaxPageSize (zero: the default).
	PageSize int
	// Concurrency bounds the requests in flight across the client (zero: the default).
	Concurrency int
	// RetryMax is the number of retries after a failed attempt; 0 disables retries.
	RetryMax int
	// RetryWaitMin and RetryWaitMax bound the exponential backoff between attempts.
	// A Retry-After answer on 429/503 replaces the backoff but is capped at RetryWaitMax.
	RetryWaitMin, RetryWaitMax time.Duration
	// TerminatedWindow limits the Terminated resources ReadOffering lists to
	// those modified within it (zero: DefaultTerminatedWindow; negative: all).
	TerminatedWindow time.Duration
	// Logger receives one debug line per HTTP attempt and one info line per
	// retry, with the attempt number and the wait (nil: discard).
	Logger *slog.Logger
}

// DefaultTerminatedWindow is how far back ReadOffering lists Terminated
// resources. A tenant whose resource was terminated longer ago can still be
// confirmed with LookupResource.
const DefaultTerminatedWindow = 90 * 24 * time.Hour

// DefaultClientOptions returns the options used when the configuration sets nothing.
func DefaultClientOptions() ClientOptions {
	return ClientOptions{
		VerifySSL:    true,
		Timeout:      60 * time.Second,
		UserAgent:    "waldur-gitops",
		PageSize:     MaxPageSize,
		Concurrency:  8,
		RetryMax:     5,
		RetryWaitMin: 200 * time.Millisecond,
		RetryWaitMax: 5 * time.Second,

		TerminatedWindow: DefaultTerminatedWindow,
	}
}

// Client reads (and, for order processing, writes) Waldur marketplace data. It is
// safe for concurrent use.
type Client struct {
	opts  ClientOptions
	base  *url.URL // scheme://host[/prefix], no trailing slash
	http  *retryablehttp.Client
	log   *slog.Logger
	slots chan struct{} // bounds requests in flight
	stats *statsRecorder
	red   *redact.Redactor // masks the token and every registered secret

	compat compatState // ServerVersion's cache and Supports' log-once set
}

// NewClient validates opts and returns a client. Zero Timeout, PageSize,
// Concurrency and UserAgent take their defaults; RetryMax and the waits are used
// as given.
func NewClient(opts ClientOptions) (*Client, error) {
	opts = withDefaults(opts)
	if err := validateOptions(opts); err != nil {
		return nil, fmt.Errorf("waldur client: %w", err)
	}
	base, err := normalizeBaseURL(opts.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("waldur client: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !opts.VerifySSL && base.Scheme == "https" {
		log.Warn("waldur TLS certificate verification is disabled", "host", base.Host)
	}
	c := &Client{
		opts:  opts,
		base:  base,
		log:   log,
		slots: make(chan struct{}, opts.Concurrency),
		stats: newStatsRecorder(),
		red:   redact.Default().With(opts.Token),
	}
	c.http = c.newRetryClient()
	return c, nil
}

func withDefaults(o ClientOptions) ClientOptions {
	d := DefaultClientOptions()
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.PageSize == 0 {
		o.PageSize = d.PageSize
	}
	if o.Concurrency == 0 {
		o.Concurrency = d.Concurrency
	}
	if o.UserAgent == "" {
		o.UserAgent = d.UserAgent
	}
	if o.TerminatedWindow == 0 {
		o.TerminatedWindow = d.TerminatedWindow
	}
	return o
}

func validateOptions(o ClientOptions) error {
	var errs []error
	if strings.TrimSpace(o.Token) == "" {
		errs = append(errs, errors.New("waldur_api_token is empty"))
	} else if strings.ContainsFunc(o.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		errs = append(errs, errors.New("waldur_api_token contains whitespace or control characters"))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s is negative", o.Timeout))
	}
	if o.PageSize < 1 || o.PageSize > MaxPageSize {
		errs = append(errs, fmt.Errorf("page size %d is outside 1..%d", o.PageSize, MaxPageSize))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d is below 1", o.Concurrency))
	}
	if o.RetryMax < 0 {
		errs = append(errs, fmt.Errorf("retry max %d is negative", o.RetryMax))
	}
	if o.RetryWaitMin < 0 || o.RetryWaitMax < o.RetryWaitMin {
		errs = append(errs, fmt.Errorf("retry waits %s..%s are not an increasing non-negative range", o.RetryWaitMin, o.RetryWaitMax))
	}
	if strings.ContainsAny(o.UserAgent, "\r\n") {
		errs = append(errs, errors.New("user agent contains a line break"))
	}
	return errors.Join(errs...)
}

// normalizeBaseURL accepts https://host, https://host/, https://host/api and
// https://host/api/ (also below a path prefix) and returns scheme://host[/prefix]
// without the "/api" suffix and without a trailing slash. Only a literal "/api"
// path segment is removed, so a prefix such as "/wapi" is kept.
func normalizeBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("invalid waldur_api_url: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("invalid waldur_api_url %q: scheme must be http or https", u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("invalid waldur_api_url %q: no host", u.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("invalid waldur_api_url %q: credentials belong in waldur_api_token, not in the URL", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("invalid waldur_api_url %q: query and fragment are not allowed", u.Redacted())
	}
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/api")
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}, nil
}

// endpoint returns the absolute URL of an API path given relative to /api/
// (for example "marketplace-orders/"), with the query q.
func (c *Client) endpoint(path string, q url.Values) *url.URL {
	u := *c.base
	u.Path = c.base.Path + "/api/" + strings.TrimPrefix(path, "/")
	u.RawQuery = q.Encode()
	return &u
}

// newRetryClient builds the retrying HTTP client: no redirects (a redirect would
// hide a wrong base URL and could carry the token elsewhere), the token added by
// the transport only for the configured host, retries on transport errors, 429
// and 5xx only.
func (c *Client) newRetryClient() *retryablehttp.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = c.opts.Concurrency
	if !c.opts.VerifySSL {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // explicitly configured
	}
	hc := &http.Client{
		Transport: &authTransport{base: tr, client: c},
		Timeout:   c.opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &retryablehttp.Client{
		HTTPClient:     hc,
		Logger:         nil,
		RetryWaitMin:   c.opts.RetryWaitMin,
		RetryWaitMax:   c.opts.RetryWaitMax,
		RetryMax:       c.opts.RetryMax,
		CheckRetry:     c.checkRetry,
		Backoff:        backoff,
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
		RequestLogHook: c.onAttempt,
	}
}
