package keycloak

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/hostbound"
	"github.com/waldur/waldur-gitops/internal/unreachable"
)

// ErrCredentials is wrapped by the error of a target whose settings cannot
// work (no credentials to log in with, no usable URL): a config problem, not
// an outage.
var ErrCredentials = errors.New("unusable Keycloak connection settings")

// Call kinds, the keys of Client.Calls.
const (
	CallLogin         = "token.login"
	CallRefresh       = "token.refresh"
	CallListGroups    = "groups.list"
	CallListChildren  = "groups.children"
	CallFindGroup     = "groups.find"
	CallGetGroup      = "groups.get"
	CallGroupByPath   = "groups.by_path"
	CallGetRealm      = "realm.get"
	CallAdminEvents   = "events.admin"
	CallSelf          = "users.self"
	CallListMembers   = "groups.members"
	CallGetUser       = "users.get"
	CallSearchUsers   = "users.search"
	CallCreateGroup   = "groups.create"
	CallCreateChild   = "groups.create_child"
	CallUpdateGroup   = "groups.update"
	CallDeleteGroup   = "groups.delete"
	CallAddMember     = "members.add"
	CallRemoveMember  = "members.remove"
	CallRetries       = "retries"
	CallUnauthorized  = "unauthorized"
	defaultBackoff    = 200 * time.Millisecond
	defaultMaxBackoff = 5 * time.Second
)

// writeCalls are the call kinds that change the realm.
var writeCalls = []string{CallCreateGroup, CallCreateChild, CallUpdateGroup, CallDeleteGroup, CallAddMember, CallRemoveMember}

// CallWritePrefix prefixes the Calls keys that count, per write call kind,
// the writes that took effect: answered with success, or a creation that met
// a 409 on a retry and found its own group (the earlier attempt's answer was
// lost). The plain key counts attempts, retries included; e.g.
// "groups.create" 3 and "writes.groups.create" 2 for two groups of which one
// was created on the second try.
const CallWritePrefix = "writes."

// Writes sums the writes that took effect in a Calls map (see
// CallWritePrefix): what changed in Keycloak, each change once.
func Writes(calls map[string]int) int {
	n := 0
	for _, k := range writeCalls {
		n += calls[CallWritePrefix+k]
	}
	return n
}

// WritesByKind returns the writes that took effect in a Calls map by call
// kind (see CallWritePrefix).
func WritesByKind(calls map[string]int) map[string]int {
	out := map[string]int{}
	for _, k := range writeCalls {
		if n := calls[CallWritePrefix+k]; n > 0 {
			out[k] = n
		}
	}
	return out
}

// WriteAttempts sums the write requests of a Calls map: every attempt,
// retries and refused ones included.
func WriteAttempts(calls map[string]int) int {
	n := 0
	for _, k := range writeCalls {
		n += calls[k]
	}
	return n
}

// Requests returns the requests of a Calls map by call kind: the keys that
// count requests, without the retry, 401-renewal, failure and write tallies.
func Requests(calls map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range calls {
		if k == CallRetries || k == CallUnauthorized || strings.HasPrefix(k, CallErrorPrefix) || strings.HasPrefix(k, CallWritePrefix) {
			continue
		}
		out[k] = v
	}
	return out
}

// ClientOptions tune a Client beyond the config; the zero value is the default.
type ClientOptions struct {
	// Backoff is the delay before the first retry (default 200ms); each further
	// retry doubles it, up to MaxBackoff (default 5s), with jitter.
	Backoff, MaxBackoff time.Duration
	// UserAgent is sent with every request.
	UserAgent string
}

// Client is the admin API client of one Target: gocloak underneath, with a
// rate limit, bounded concurrency, retries, token refresh and call counts.
// It is safe for concurrent use.
type Client struct {
	target   Target
	gc       *gocloak.GoCloak
	adminURL string
	host     string // host[:port] of keycloak_url, for internal/unreachable
	timeout  time.Duration
	pageSize int
	retries  int
	backoff  time.Duration
	maxWait  time.Duration
	limit    *limiter
	// window bounds the calls in flight, adapting to how Keycloak answers.
	window *window

	tokMu    sync.Mutex
	jwt      *gocloak.JWT
	expires  time.Time
	rtExpiry time.Time

	callMu sync.Mutex
	calls  map[string]int

	// refused is the last redirect refused (hostbound): gocloak passes
	// transport errors on as text only.
	refused atomic.Pointer[hostbound.Error]
}

// NewClient builds the client of t from its connection settings. It makes no
// call: the first call logs in.
func NewClient(t Target, o ClientOptions) (*Client, error) {
	k := t.Settings
	if k.Username == "" && !k.HasClientSecret() {
		return nil, fmt.Errorf("%w: set keycloak_username and keycloak_password, or client_secret (each also as _file or _env)", ErrCredentials)
	}
	k, err := k.WithCredentials()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	t.Settings = k
	base := strings.TrimRight(t.URL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: keycloak_url must be an http or https URL", ErrCredentials)
	}
	gc := gocloak.NewClient(base)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2 * deref(k.Concurrency, config.DefaultKeycloakConcurrency)
	if !k.VerifiesSSL() {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // keycloak_ssl_verify: false asks for it
	}
	rc := gc.RestyClient()
	rc.SetTransport(tr)
	timeout := time.Duration(deref(k.TimeoutSeconds, config.DefaultKeycloakTimeoutSeconds)) * time.Second
	rc.SetTimeout(timeout)
	if o.UserAgent != "" {
		rc.SetHeader("User-Agent", o.UserAgent)
	}
	c := &Client{
		target:   t,
		gc:       gc,
		adminURL: base + "/admin/realms/" + url.PathEscape(t.Realm),
		host:     u.Host,
		timeout:  timeout,
		pageSize: deref(k.PageSize, config.DefaultKeycloakPageSize),
		retries:  deref(k.MaxRetries, config.DefaultKeycloakMaxRetries),
		backoff:  cmpOr(o.Backoff, defaultBackoff),
		maxWait:  cmpOr(o.MaxBackoff, defaultMaxBackoff),
		limit:    newLimiter(deref(k.RequestsPerSecond, config.DefaultKeycloakRequestsPerSecond), deref(k.Concurrency, config.DefaultKeycloakConcurrency)),
		window:   newWindow(deref(k.Concurrency, config.DefaultKeycloakConcurrency)),
		calls:    map[string]int{},
	}
	rc.GetClient().CheckRedirect = c.checkRedirect
	return c, nil
}

// checkRedirect refuses every redirect: Keycloak's token and admin endpoints
// need none, and one to another host would carry the password, the client
// secret or the token there.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	err := hostbound.CheckRedirect("keycloak_url", hostbound.None)(req, via)
	if he := (*hostbound.Error)(nil); errors.As(err, &he) {
		c.refused.Store(he)
	}
	return err
}

// refusal returns the refused redirect behind err, a transport error, or nil.
func (c *Client) refusal(err error) error {
	if he := c.refused.Load(); he != nil && statusOf(err) == 0 {
		return he
	}
	return nil
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Target returns the realm the client works on.
func (c *Client) Target() Target { return c.target }

// Calls returns how many calls of each kind the client has made, retries
// included (each retry is also counted under "retries").
func (c *Client) Calls() map[string]int {
	c.callMu.Lock()
	defer c.callMu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

func (c *Client) count(kind string) {
	c.callMu.Lock()
	c.calls[kind]++
	c.callMu.Unlock()
}

// forbiddenError is a 403: the account waldur-gitops logs in as lacks a
// realm-management role. A run stops at the first one: every further call
// would be refused alike.
type forbiddenError struct {
	kind, realm string
	err         error
}

func (e *forbiddenError) Error() string {
	role := "manage-users"
	if !slices.Contains(writeCalls, e.kind) {
		role = "manage-users (view-users is enough for a dry run)"
	}
	return fmt.Sprintf("Keycloak refused %s (403 Forbidden): the account waldur-gitops logs in as lacks the realm-management role %s in realm %s; see docs/keycloak.md#least-privilege: %v",
		e.kind, role, e.realm, e.err)
}

func (e *forbiddenError) Unwrap() error { return e.err }

// IsForbidden reports whether err is Keycloak refusing a call for want of a
// role (403).
func IsForbidden(err error) bool {
	var f *forbiddenError
	return errors.As(err, &f)
}

// unavailableError marks a failure that retrying did not cure: Keycloak is
// down, overloaded or unreachable. A run stops at the first one.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// IsUnavailable reports whether err is Keycloak being unavailable (5xx, 429 or
// transport errors after every retry) rather than a refusal of one request.
func IsUnavailable(err error) bool {
	var u *unavailableError
	return errors.As(err, &u)
}

// statusOf returns the HTTP status of a gocloak error, 0 for a transport error
// and -1 for anything else.
func statusOf(err error) int {
	var ae *gocloak.APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return -1
}

func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	switch code := statusOf(err); {
	case code == 0, code == http.StatusTooManyRequests, code >= 500:
		return true
	}
	return false
}

// CallErrorPrefix prefixes the Calls keys that count, per call kind, the calls
// that finally failed (a transport error or an error status after every
// retry), e.g. "errors.groups.list". A 404 that a lookup or a removal takes as
// its answer (users.get, groups.delete, members.remove) is not counted.
const CallErrorPrefix = "errors."

// notFoundAnswers are the call kinds for which a 404 is an answer, not a failure.
var notFoundAnswers = map[string]bool{CallGetUser: true, CallDeleteGroup: true, CallRemoveMember: true, CallGetGroup: true, CallGroupByPath: true}

// forbiddenAnswers are the call kinds for which a 403 is an answer: reading
// admin events needs view-events, which waldur-gitops can do without.
var forbiddenAnswers = map[string]bool{CallAdminEvents: true, CallSelf: true}

// conflictAnswers are the call kinds for which a 409 is not yet a failure:
// the caller looks the group up and counts a failure only if it cannot use it.
var conflictAnswers = map[string]bool{CallCreateGroup: true, CallCreateChild: true}

// Errors returns the failed calls of a Calls map by call kind.
func Errors(calls map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range calls {
		if kind, ok := strings.CutPrefix(k, CallErrorPrefix); ok {
			out[kind] += v
		}
	}
	return out
}

// do runs fn, one HTTP request, under the rate limit and the concurrency bound,
// counting it as kind. With auth it passes a bearer token and on a 401 renews
// the token once and tries again. It retries what retryable allows, with
// backoff. A write that succeeds is also counted under CallWritePrefix+kind, a
// call that finally fails under CallErrorPrefix+kind (not a 404 where that is
// an answer, nor a 409 on a creation, which createGroup's caller settles); a
// 403 comes back as a forbiddenError.
func (c *Client) do(ctx context.Context, kind string, auth bool, fn func(token string) error) error {
	err := c.try(ctx, kind, auth, fn)
	switch code := statusOf(err); {
	case err == nil:
		if slices.Contains(writeCalls, kind) {
			c.count(CallWritePrefix + kind)
		}
	case code == http.StatusNotFound && notFoundAnswers[kind], code == http.StatusConflict && conflictAnswers[kind]:
	case code == http.StatusForbidden && forbiddenAnswers[kind]:
		err = &forbiddenError{kind: kind, realm: c.target.Realm, err: err}
	default:
		c.count(CallErrorPrefix + kind)
		if code == http.StatusForbidden {
			err = &forbiddenError{kind: kind, realm: c.target.Realm, err: err}
		}
	}
	return err
}

// try is do without the error count.
func (c *Client) try(ctx context.Context, kind string, auth bool, fn func(token string) error) error {
	renewed := false
	for attempt := 0; ; attempt++ {
		if err := unreachable.Check(ctx, c.host); err != nil {
			return &unavailableError{err}
		}
		tok := ""
		if auth {
			var err error
			if tok, err = c.token(ctx); err != nil {
				return err
			}
		}
		start := time.Now()
		err := c.once(ctx, kind, func() error { return fn(tok) })
		// gocloak keeps only the text of a transport error: a try without
		// an answer that lasted the whole timeout is what timed out.
		noAnswer := statusOf(err) == 0 && time.Since(start) >= c.timeout
		switch {
		case err == nil:
			return nil
		case c.refusal(err) != nil:
			// Every retry would be redirected as well.
			return c.refusal(err)
		case noAnswer && attempt+1 >= maxTimeoutAttempts && ctx.Err() == nil:
			// Each try waited the whole timeout_seconds: give up sooner.
			unreachable.Mark(ctx, c.host, connectionError{err})
			return &unavailableError{fmt.Errorf("%w (gave up after %d attempts without an answer)", err, attempt+1)}
		case auth && statusOf(err) == http.StatusUnauthorized && !renewed:
			// The token expired early, or Keycloak restarted and forgot it.
			renewed = true
			c.count(CallUnauthorized)
			c.dropToken(tok)
			attempt--
			continue
		case !retryable(ctx, err):
			return err
		case attempt >= c.retries:
			if statusOf(err) == 0 {
				unreachable.Mark(ctx, c.host, connectionError{err})
			}
			return &unavailableError{fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)}
		}
		c.count(CallRetries)
		if err := sleep(ctx, c.wait(attempt)); err != nil {
			return err
		}
	}
}

// once makes one request under the limits.
func (c *Client) once(ctx context.Context, kind string, fn func() error) error {
	if err := c.limit.wait(ctx); err != nil {
		return err
	}
	if err := c.window.acquire(ctx); err != nil {
		return err
	}
	c.count(kind)
	start := time.Now()
	err := fn()
	c.window.release(kind, time.Since(start), err)
	return err
}

// connectionError is a gocloak transport failure (status 0: no HTTP answer
// at all), which gocloak hands over as text only; it tells
// internal/unreachable that the host could not be reached.
type connectionError struct{ err error }

func (e connectionError) Error() string { return e.err.Error() }
func (e connectionError) Unwrap() error { return e.err }

// Unreachable marks it for internal/unreachable.IsConnection.
func (connectionError) Unreachable() bool { return true }

// maxTimeoutAttempts bounds the tries of a call that got no answer at all
// within timeout_seconds: each costs the whole timeout.
const maxTimeoutAttempts = 2

// wait is the backoff before retry attempt+1: doubling, capped, with up to 50%
// jitter so that parallel callers do not retry in step.
func (c *Client) wait(attempt int) time.Duration {
	d := c.backoff << min(attempt, 20)
	if d <= 0 || d > c.maxWait {
		d = c.maxWait
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// token returns a valid access token: the current one, a refreshed one when it
// is about to expire, or a new login.
func (c *Client) token(ctx context.Context) (string, error) {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	now := time.Now()
	if c.jwt != nil && now.Before(c.expires) {
		return c.jwt.AccessToken, nil
	}
	k := c.target.Settings
	if c.jwt != nil && c.jwt.RefreshToken != "" && now.Before(c.rtExpiry) {
		var jwt *gocloak.JWT
		err := c.do(ctx, CallRefresh, false, func(string) error {
			var err error
			jwt, err = c.gc.RefreshToken(ctx, c.jwt.RefreshToken, k.ClientID, k.ClientSecret.Reveal(), k.UserRealm)
			return err
		})
		if err == nil {
			c.setToken(jwt, now)
			return jwt.AccessToken, nil
		}
		// A refresh token can be revoked or lost with a restart: log in again.
	}
	var jwt *gocloak.JWT
	err := c.do(ctx, CallLogin, false, func(string) error {
		var err error
		jwt, err = c.login(ctx)
		return err
	})
	if err != nil {
		who := "client " + k.ClientID
		if k.Username != "" {
			who = "user " + k.Username + " with client " + k.ClientID
		}
		return "", fmt.Errorf("log in to realm %s as %s (%s): %w", k.UserRealm, who, k.CredentialSource(), err)
	}
	c.setToken(jwt, now)
	return jwt.AccessToken, nil
}

// login asks for a token with the configured credentials: the password grant
// when a user name is set (with the client secret of a confidential client),
// else the client credentials grant.
func (c *Client) login(ctx context.Context) (*gocloak.JWT, error) {
	k := c.target.Settings
	if k.Username == "" {
		return c.gc.LoginClient(ctx, k.ClientID, k.ClientSecret.Reveal(), k.UserRealm)
	}
	opts := gocloak.TokenOptions{
		ClientID: gocloak.StringP(k.ClientID), GrantType: gocloak.StringP("password"),
		Username: gocloak.StringP(k.Username), Password: gocloak.StringP(k.Password.Reveal()),
	}
	if k.ClientSecret != "" {
		opts.ClientSecret = gocloak.StringP(k.ClientSecret.Reveal())
	}
	return c.gc.GetToken(ctx, k.UserRealm, opts)
}

// setToken keeps jwt, to be renewed when 90% of its lifetime has passed.
func (c *Client) setToken(jwt *gocloak.JWT, obtained time.Time) {
	c.jwt = jwt
	life := time.Duration(jwt.ExpiresIn) * time.Second
	if life <= 0 {
		life = 30 * time.Second
	}
	c.expires = obtained.Add(life * 9 / 10)
	c.rtExpiry = time.Time{}
	if jwt.RefreshExpiresIn > 0 {
		c.rtExpiry = obtained.Add(time.Duration(jwt.RefreshExpiresIn) * time.Second * 9 / 10)
	}
}

// dropToken forgets tok if it is still the current token.
func (c *Client) dropToken(tok string) {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	if c.jwt != nil && c.jwt.AccessToken == tok {
		c.expires = time.Time{}
	}
}

// response is the part of a resty response check reads.
type response interface {
	IsError() bool
	StatusCode() int
	Status() string
	Error() any
}

// check turns a request helper's outcome into a gocloak-style error.
func check(resp response, err error) error {
	switch {
	case err != nil:
		return &gocloak.APIError{Code: 0, Message: err.Error()}
	case resp.IsError():
		msg := resp.Status()
		if e, ok := resp.Error().(*gocloak.HTTPErrorResponse); ok && e.NotEmpty() {
			msg += ": " + e.String()
		}
		return &gocloak.APIError{Code: resp.StatusCode(), Message: msg}
	}
	return nil
}

// apiGroup is a group as the admin API lists it. gocloak's Group lacks
// subGroupCount, which tells which groups have subgroups to read.
type apiGroup struct {
	ID            string              `json:"id"`
	Name          string              `json:"name"`
	Path          string              `json:"path"`
	SubGroupCount *int                `json:"subGroupCount"`
	SubGroups     []apiGroup          `json:"subGroups"`
	Attributes    map[string][]string `json:"attributes"`
}

// getJSON GETs a path under the realm's admin URL into out.
func (c *Client) getJSON(ctx context.Context, kind, path string, query map[string]string, out any) error {
	return c.do(ctx, kind, true, func(tok string) error {
		resp, err := c.gc.GetRequestWithBearerAuth(ctx, tok).SetQueryParams(query).SetResult(out).Get(c.adminURL + path)
		return check(resp, err)
	})
}

// pages calls get with first = 0, n, 2n, … until a page comes back short.
func pages[T any](c *Client, get func(first, max int) ([]T, error)) ([]T, error) {
	var all []T
	for first := 0; ; first += c.pageSize {
		page, err := get(first, c.pageSize)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < c.pageSize {
			return all, nil
		}
	}
}

func pageQuery(first, max int) map[string]string {
	return map[string]string{"first": strconv.Itoa(first), "max": strconv.Itoa(max), "briefRepresentation": "false"}
}

// topGroups lists every top-level group with its attributes.
func (c *Client) topGroups(ctx context.Context) ([]apiGroup, error) {
	gs, err := pages(c, func(first, max int) ([]apiGroup, error) {
		var page []apiGroup
		return page, c.getJSON(ctx, CallListGroups, "/groups", pageQuery(first, max), &page)
	})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return gs, nil
}

// children lists every direct subgroup of a group.
func (c *Client) children(ctx context.Context, id string) ([]apiGroup, error) {
	gs, err := pages(c, func(first, max int) ([]apiGroup, error) {
		var page []apiGroup
		return page, c.getJSON(ctx, CallListChildren, "/groups/"+url.PathEscape(id)+"/children", pageQuery(first, max), &page)
	})
	if err != nil {
		return nil, fmt.Errorf("list subgroups of %s: %w", id, err)
	}
	return gs, nil
}

// findGroup looks a group up by exact name among the top-level groups
// (parentID "") or a group's subgroups; nil when there is none. It is the
// recovery path of a creation that met a 409, so it favours certainty over
// cost: subgroups are listed in full (older Keycloaks ignore search on
// /children), top-level groups are searched page by page (older Keycloaks
// ignore exact and match substrings).
func (c *Client) findGroup(ctx context.Context, parentID, name string) (*apiGroup, error) {
	var found []apiGroup
	var err error
	if parentID != "" {
		found, err = c.children(ctx, parentID)
	} else {
		found, err = pages(c, func(first, max int) ([]apiGroup, error) {
			q := pageQuery(first, max)
			q["search"], q["exact"] = name, "true"
			var page []apiGroup
			return page, c.getJSON(ctx, CallFindGroup, "/groups", q, &page)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("look up group %s: %w", name, err)
	}
	for i := range found {
		if found[i].Name == name {
			return &found[i], nil
		}
	}
	return nil, nil
}

// groupByID reads one group with its attributes; nil when there is none.
func (c *Client) groupByID(ctx context.Context, id string) (*apiGroup, error) {
	if !pathSafe(id) {
		return nil, fmt.Errorf("get group %q: not a usable group id", id)
	}
	var g apiGroup
	err := c.getJSON(ctx, CallGetGroup, "/groups/"+url.PathEscape(id), nil, &g)
	switch {
	case statusOf(err) == http.StatusNotFound:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get group %s: %w", id, err)
	}
	return &g, nil
}

// groupByPath reads the group at a path (/name or /parent/name) with its
// attributes; nil when there is none. Every part of the path is escaped, and
// the path is sent without a leading double slash, which Keycloak 26 refuses.
func (c *Client) groupByPath(ctx context.Context, path string) (*apiGroup, error) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("get group %s: not a usable group path", path)
		}
		parts[i] = url.PathEscape(p)
	}
	var g apiGroup
	err := c.getJSON(ctx, CallGroupByPath, "/group-by-path/"+strings.Join(parts, "/"), nil, &g)
	switch {
	case statusOf(err) == http.StatusNotFound:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get group %s: %w", path, err)
	}
	return &g, nil
}

// realmInfo is the part of a realm's representation the memory reads. An
// account without view-realm gets a short representation without these.
type realmInfo struct {
	AdminEventsEnabled *bool             `json:"adminEventsEnabled"`
	Attributes         map[string]string `json:"attributes"`
	// AccessTokenLifespan is how long an access token the realm issues
	// stays valid, in seconds.
	AccessTokenLifespan *int `json:"accessTokenLifespan"`
}

// realm reads the realm's representation.
func (c *Client) realm(ctx context.Context) (*realmInfo, error) {
	var r realmInfo
	if err := c.getJSON(ctx, CallGetRealm, "", nil, &r); err != nil {
		return nil, fmt.Errorf("read realm %s: %w", c.target.Realm, err)
	}
	return &r, nil
}

// adminEvent is one of the realm's admin events.
type adminEvent struct {
	Time          int64  `json:"time"`
	OperationType string `json:"operationType"`
	ResourceType  string `json:"resourceType"`
	ResourcePath  string `json:"resourcePath"`
	AuthDetails   struct {
		UserID string `json:"userId"`
	} `json:"authDetails"`
}

// adminEvents reads a page of the admin events on groups, memberships and
// users at or after from (milliseconds since the epoch, Keycloak's clock),
// newest first.
func (c *Client) adminEvents(ctx context.Context, from int64, first, max int) ([]adminEvent, error) {
	q := url.Values{"first": {strconv.Itoa(first)}, "max": {strconv.Itoa(max)}, "resourceTypes": {"GROUP", "GROUP_MEMBERSHIP", "USER"}}
	if from > 0 {
		q.Set("dateFrom", strconv.FormatInt(from, 10))
	}
	var page []adminEvent
	err := c.do(ctx, CallAdminEvents, true, func(tok string) error {
		resp, err := c.gc.GetRequestWithBearerAuth(ctx, tok).SetQueryParamsFromValues(q).SetResult(&page).Get(c.adminURL + "/admin-events")
		return check(resp, err)
	})
	if err != nil {
		return nil, fmt.Errorf("read admin events: %w", err)
	}
	return page, nil
}

// self returns the user id the client logs in as: the userId of its own admin
// events. It is the token's subject; Keycloak 26 leaves that out of a master
// admin-cli token, and then the account is looked up by user name in the
// realm it logs in to (a client's service account is
// service-account-<client_id>). "" when neither works.
func (c *Client) self(ctx context.Context) string {
	if sub := c.subject(); sub != "" {
		return sub
	}
	k := c.target.Settings
	name := k.Username
	if name == "" {
		name = "service-account-" + k.ClientID
	}
	var us []User
	base := strings.TrimSuffix(c.adminURL, "/admin/realms/"+url.PathEscape(c.target.Realm))
	err := c.do(ctx, CallSelf, true, func(tok string) error {
		resp, err := c.gc.GetRequestWithBearerAuth(ctx, tok).
			SetQueryParams(map[string]string{"username": name, "exact": "true", "briefRepresentation": "true"}).
			SetResult(&us).Get(base + "/admin/realms/" + url.PathEscape(k.UserRealm) + "/users")
		return check(resp, err)
	})
	if err != nil {
		return ""
	}
	for _, u := range us {
		if strings.EqualFold(u.Username, name) {
			return u.ID
		}
	}
	return ""
}

// subject returns the user id the client's current token was issued to
// ("" when the token is not a JWT or has none).
func (c *Client) subject() string {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	if c.jwt == nil {
		return ""
	}
	parts := strings.Split(c.jwt.AccessToken, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return ""
	}
	return claims.Sub
}

// members lists the direct members of a group.
func (c *Client) members(ctx context.Context, id string) ([]User, error) {
	us, err := pages(c, func(first, max int) ([]User, error) {
		var page []*gocloak.User
		err := c.do(ctx, CallListMembers, true, func(tok string) error {
			var err error
			page, err = c.gc.GetGroupMembers(ctx, tok, c.target.Realm, id, gocloak.GetGroupsParams{
				First: gocloak.IntP(first), Max: gocloak.IntP(max), BriefRepresentation: gocloak.BoolP(true),
			})
			return err
		})
		out := make([]User, 0, len(page))
		for _, u := range page {
			out = append(out, userOf(u))
		}
		return out, err
	})
	if err != nil {
		return nil, fmt.Errorf("list members of group %s: %w", id, err)
	}
	return us, nil
}

func userOf(u *gocloak.User) User {
	return User{ID: gocloak.PString(u.ID), Username: gocloak.PString(u.Username)}
}

// pathSafe reports whether s can be put into a URL path as it is: gocloak does
// not escape ids, so anything else could reach another endpoint.
func pathSafe(s string) bool {
	return s != "" && s != "." && s != ".." && url.PathEscape(s) == s
}

// userByID fetches a user by Keycloak id; nil when there is none.
func (c *Client) userByID(ctx context.Context, id string) (*User, error) {
	var u *gocloak.User
	err := c.do(ctx, CallGetUser, true, func(tok string) error {
		var err error
		u, err = c.gc.GetUserByID(ctx, tok, c.target.Realm, id)
		return err
	})
	switch {
	case statusOf(err) == http.StatusNotFound:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get user %s: %w", id, err)
	}
	out := userOf(u)
	return &out, nil
}

// userByName finds the user with exactly this user name (Keycloak keeps user
// names in lower case); nil when there is none.
func (c *Client) userByName(ctx context.Context, name string) (*User, error) {
	var us []*gocloak.User
	err := c.do(ctx, CallSearchUsers, true, func(tok string) error {
		var err error
		us, err = c.gc.GetUsers(ctx, tok, c.target.Realm, gocloak.GetUsersParams{
			Username: gocloak.StringP(name), Exact: gocloak.BoolP(true), BriefRepresentation: gocloak.BoolP(true),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("search user %s: %w", name, err)
	}
	for _, u := range us {
		if strings.EqualFold(gocloak.PString(u.Username), name) {
			out := userOf(u)
			return &out, nil
		}
	}
	return nil, nil
}

// createGroup creates a top-level group (parentID "") or a subgroup and returns
// its id, and whether the request was sent more than once (so that a 409 may
// be the answer to this call's own earlier attempt).
func (c *Client) createGroup(ctx context.Context, parentID, name string, attrs map[string][]string) (string, bool, error) {
	g := gocloak.Group{Name: gocloak.StringP(name), Attributes: &attrs}
	var id string
	kind := CallCreateGroup
	if parentID != "" {
		kind = CallCreateChild
	}
	sent := 0
	err := c.do(ctx, kind, true, func(tok string) error {
		sent++
		var err error
		if parentID == "" {
			id, err = c.gc.CreateGroup(ctx, tok, c.target.Realm, g)
		} else {
			id, err = c.gc.CreateChildGroup(ctx, tok, c.target.Realm, parentID, g)
		}
		return err
	})
	if err == nil && id == "" {
		err = errors.New("the answer of Keycloak has no id of the new group in Location")
	}
	return id, sent > 1, err
}

// updateGroup writes a group's name and attributes (all of them: Keycloak
// replaces the set).
func (c *Client) updateGroup(ctx context.Context, id, name string, attrs map[string][]string) error {
	return c.do(ctx, CallUpdateGroup, true, func(tok string) error {
		return c.gc.UpdateGroup(ctx, tok, c.target.Realm, gocloak.Group{ID: gocloak.StringP(id), Name: gocloak.StringP(name), Attributes: &attrs})
	})
}

// deleteGroup deletes a group with its subgroups; one that is gone already is fine.
func (c *Client) deleteGroup(ctx context.Context, id string) error {
	err := c.do(ctx, CallDeleteGroup, true, func(tok string) error { return c.gc.DeleteGroup(ctx, tok, c.target.Realm, id) })
	if statusOf(err) == http.StatusNotFound {
		return nil
	}
	return err
}

// addMember makes a user a direct member of a group (idempotent in Keycloak).
func (c *Client) addMember(ctx context.Context, userID, groupID string) error {
	return c.do(ctx, CallAddMember, true, func(tok string) error {
		return c.gc.AddUserToGroup(ctx, tok, c.target.Realm, userID, groupID)
	})
}

// removeMember ends a direct membership; a user or group that is gone is fine.
func (c *Client) removeMember(ctx context.Context, userID, groupID string) error {
	err := c.do(ctx, CallRemoveMember, true, func(tok string) error {
		return c.gc.DeleteUserFromGroup(ctx, tok, c.target.Realm, userID, groupID)
	})
	if statusOf(err) == http.StatusNotFound {
		return nil
	}
	return err
}

// limiter spaces calls evenly at rate per second, allowing bursts of burst.
type limiter struct {
	mu       sync.Mutex
	interval time.Duration
	window   time.Duration
	next     time.Time
}

// newLimiter returns nil (no limit) for a rate of 0.
func newLimiter(rate float64, burst int) *limiter {
	if rate <= 0 {
		return nil
	}
	iv := time.Duration(float64(time.Second) / rate)
	return &limiter{interval: iv, window: time.Duration(max(burst-1, 0)) * iv}
}

// wait blocks until the caller's slot comes.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	slot := l.next
	if earliest := now.Add(-l.window); slot.Before(earliest) {
		slot = earliest
	}
	l.next = slot.Add(l.interval)
	l.mu.Unlock()
	if d := slot.Sub(now); d > 0 {
		return sleep(ctx, d)
	}
	return nil
}
