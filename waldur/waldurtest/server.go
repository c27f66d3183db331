// Package waldurtest is an in-memory fake of the Waldur REST API for tests: the
// provider-resource, order, team, offering-user, component-usage, version and
// site-agent identity (see agent.go) endpoints a service provider uses, with Waldur's token authentication,
// DRF-style paging, filters, field selection, the provider side of the order
// state machine and set_usage's rules (one record per resource, component and
// billing month; only for resources in OK, Updating or Terminating).
//
// Every request the fake receives and every response it sends is validated
// against an embedded Waldur OpenAPI subset (kin-openapi): the 8.1.3 subset by
// default, the 8.0.5 one with WithSubset(Subset805). A violation fails the
// test (t.Errorf) unless WithViolationHandler or LogViolations says otherwise.
// Paths outside the subset are reported as violations too, unless allowed with
// AllowPath; under the 8.0.5 subset three real endpoints it lacks (users/me,
// the provider offering and the plan, see extensions.go) are served on allowed
// paths, unvalidated. GET /api/version/ answers the subset's version unless
// WithVersion sets another. As in Waldur, an offering exists once AddOffering
// or Seed names it or data of it is added: reading any other offering, or its
// account listings, answers 404, while a listing filtered by its uuid answers
// an empty page. One deliberate deviation from the subset:
// ComponentUsage.usage is checked as a number, not an integer, because Waldur
// stores and returns fractional amounts there.
//
// Typical use:
//
//	srv := waldurtest.New(t)
//	srv.AddResource(waldur.Resource{OfferingUUID: off, ProjectUUID: p})
//	srv.SetTeam(p, []waldur.TeamMember{{Username: "ana", Role: "PROJECT.ADMIN"}})
//	opts := waldur.DefaultClientOptions()
//	opts.BaseURL, opts.Token = srv.URL(), srv.Token()
package waldurtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DefaultToken is the API token the fake accepts unless WithToken sets another.
const DefaultToken = "3f1c9a7e5b2d4c6e8a0b1c2d3e4f5a6b7c8d9e0f"

// Violation is a request or response that breaks the OpenAPI contract.
type Violation struct {
	// Kind is "route" (path or method not in the subset), "request", "response"
	// or "unimplemented" (in the subset but not served by the fake).
	Kind         string
	Method, Path string
	Err          error
}

// String describes the violation.
func (v Violation) String() string {
	return fmt.Sprintf("%s contract violation on %s %s: %v", v.Kind, v.Method, v.Path, v.Err)
}

// Fault is an injected failure, answered instead of the real response to the
// next Count requests whose path (below the server prefix) starts with
// PathPrefix. Requests are still validated first.
type Fault struct {
	Count      int
	PathPrefix string
	// Status is the HTTP status to answer; ignored when Drop is set.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Drop closes the connection without answering (a transport error).
	Drop bool
	// ResetMidBody handles the request as usual (side effects included), then
	// sends the status line, the headers and half of the body and resets the
	// connection: a transport error in the middle of a response body.
	ResetMidBody bool
}

// ListFaultKind is how a ListFault distorts a list answer.
type ListFaultKind int

const (
	// ListTerminateBetweenPages imitates offset paging under concurrent
	// change: before a page after the first is cut, the first item the
	// listing matches leaves it (a resource's state becomes Terminated, as
	// when its Terminate order is finished elsewhere), so every later item
	// moves up one place and the item at the page boundary is never served.
	// X-Result-Count is honest and drops by one.
	ListTerminateBetweenPages ListFaultKind = iota + 1
	// ListRepeatItem serves the page with its first item replaced by the last
	// item of the previous page: one item repeated, one missing,
	// X-Result-Count unchanged.
	ListRepeatItem
	// ListWrongCount adds CountDelta to X-Result-Count.
	ListWrongCount
)

// ListFault distorts the next Count answers of a list endpoint whose path
// (below the server prefix) starts with PathPrefix, for pages Page and later
// (a page number below 2 means 2 for the kinds that need a previous page, 1
// for ListWrongCount).
type ListFault struct {
	Kind       ListFaultKind
	PathPrefix string
	Count      int
	Page       int
	// Query, when set, restricts the fault to requests whose query carries
	// each of these values of each key (e.g. state=OK to leave the
	// Terminated listing alone).
	Query url.Values
	// CountDelta is what ListWrongCount adds to X-Result-Count.
	CountDelta int
}

// Option configures a Server.
type Option func(*Server)

// WithToken sets the accepted API token.
func WithToken(token string) Option { return func(s *Server) { s.token = token } }

// WithPathPrefix serves the API below a path prefix such as "/wapi", so the API
// root is <prefix>/api/.
func WithPathPrefix(prefix string) Option {
	return func(s *Server) {
		if p := strings.Trim(prefix, "/"); p != "" {
			s.prefix = "/" + p
		}
	}
}

// WithViolationHandler replaces the default reaction to contract violations
// (t.Errorf). Use it in tests that expect violations or feed schema drift.
func WithViolationHandler(fn func(Violation)) Option {
	return func(s *Server) { s.onViolation = fn }
}

// LogViolations reports violations with t.Logf instead of failing the test; for
// tests that deliberately serve payloads older or newer servers produce.
func LogViolations() Option {
	return func(s *Server) { s.onViolation = func(v Violation) { s.t.Logf("waldurtest (tolerated): %s", v) } }
}

// WithoutContractChecks serves without validating requests and answers
// against the OpenAPI subset: for a benchmark that measures the client,
// where checking each of thousands of answers would be most of the work
// on the machine. Routing, state machines, faults and paging are as
// always; the tests keep every check.
func WithoutContractChecks() Option { return func(s *Server) { s.unchecked = true } }

// WithAnswerCache keeps each read's answer and gives it again, without
// running the handler, to the same read while nothing changed (no request
// or method that may change the state came in since) and no list fault is
// set: for a benchmark that reads a large site many times, where encoding
// the same thousands of records each run would be most of the fake's work.
// Answers that depend on the clock alone are not refreshed, so the tests
// run without it.
func WithAnswerCache() Option { return func(s *Server) { s.answers.on = true } }

// WithSubset selects the OpenAPI subset the fake validates against and
// serves (Subset81 by default). An unknown subset fails New.
func WithSubset(subset Subset) Option { return func(s *Server) { s.subset = subset } }

// WithVersion sets what GET /api/version/ answers as the version (by default
// the subset's version), to test a client against servers of other releases.
func WithVersion(version string) Option { return func(s *Server) { s.answerVersion = version } }

// AllowPath lets requests to paths outside the subset that start with prefix
// (below the API root, e.g. "/api/users/me/") pass without a violation. The fake
// serves the few such endpoints it knows (see extensions.go) and answers the
// others with 404; faults apply to them as to any other path.
func AllowPath(prefix string) Option {
	return func(s *Server) { s.allowed = append(s.allowed, prefix) }
}

// Server is the fake Waldur. Its methods are safe for concurrent use.
type Server struct {
	t             reporter
	http          *httptest.Server
	contract      *contract
	subset        Subset
	answerVersion string
	token         string
	prefix        string
	allowed       []string
	onViolation   func(Violation)
	// unchecked skips validating requests and answers (WithoutContractChecks).
	unchecked bool

	mu          stateLock
	data        *store
	lists       listCache
	answers     answerCache
	faults      []*Fault
	listFaults  []*ListFault
	delays      map[string]time.Duration
	hooks       []func(*http.Request, []byte)
	events      []event
	violations  []Violation
	resultCount bool // send X-Result-Count on lists
	linkHeader  bool // send Link on lists
	ev          eventState
}

// event is a request starting (+1) or ending (-1), for MaxInFlight.
type event struct {
	path  string
	delta int
}

// reporter is where the fake reports violations and misuse: the test, or
// the standard error of a program that runs it with Start.
type reporter interface {
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// New starts a fake Waldur on 127.0.0.1 that is closed when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := start(t, opts)
	if err != nil {
		t.Fatalf("waldurtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake Waldur on 127.0.0.1 outside a test (the demo, a
// manual try); Close stops it. Contract violations and misuse are written to
// w as they happen; a seeding mistake (a malformed UUID) panics.
func Start(w io.Writer, opts ...Option) (*Server, error) {
	return start(streamReporter{w}, opts)
}

// Close stops the server.
func (s *Server) Close() { s.http.Close() }

// streamReporter is the reporter of Start.
type streamReporter struct{ w io.Writer }

func (r streamReporter) Errorf(format string, args ...any) { fmt.Fprintf(r.w, format+"\n", args...) }
func (r streamReporter) Logf(format string, args ...any)   { fmt.Fprintf(r.w, format+"\n", args...) }
func (r streamReporter) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func start(t reporter, opts []Option) (*Server, error) {
	s := &Server{
		t:           t,
		subset:      Subset81,
		token:       DefaultToken,
		delays:      map[string]time.Duration{},
		resultCount: true,
		linkHeader:  true,
	}
	s.onViolation = func(v Violation) { t.Errorf("waldurtest: %s", v) }
	for _, o := range opts {
		o(s)
	}
	c, err := sharedContract(s.subset)
	if err != nil {
		return nil, err
	}
	s.contract = c
	if s.answerVersion == "" {
		s.answerVersion = string(s.subset)
	}
	s.http = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.data = newStore("http://"+s.http.Listener.Addr().String()+s.prefix, t.Fatalf)
	s.http.Start()
	return s, nil
}

// URL is the base URL to configure a client with (without "/api").
func (s *Server) URL() string { return s.http.URL + s.prefix }

// Token is the API token the server accepts.
func (s *Server) Token() string { return s.token }

// InjectFault queues an injected failure.
func (s *Server) InjectFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// InjectListFault queues a distortion of list answers.
func (s *Server) InjectListFault(f ListFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listFaults = append(s.listFaults, &f)
}

// ClearFaults drops every queued fault and list fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults, s.listFaults = nil, nil
}

// FailNext answers the next n requests with status (a JSON detail body for 4xx,
// an HTML page for 5xx, like Django).
func (s *Server) FailNext(n, status int) { s.InjectFault(Fault{Count: n, Status: status}) }

// SetDelay makes requests whose path starts with pathPrefix take at least d.
func (s *Server) SetDelay(pathPrefix string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays[pathPrefix] = d
}

// SetPagingHeaders chooses which paging headers lists carry (both by default),
// to exercise a client's fallbacks.
func (s *Server) SetPagingHeaders(resultCount, link bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resultCount, s.linkHeader = resultCount, link
}

// OnRequest registers a hook called with every request and its body before it is
// handled. The hook must not retain the request.
func (s *Server) OnRequest(fn func(r *http.Request, body []byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, fn)
}

// Requests counts the requests received whose path (below the server prefix)
// starts with pathPrefix, injected failures included.
func (s *Server) Requests(pathPrefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if e.delta > 0 && strings.HasPrefix(e.path, pathPrefix) {
			n++
		}
	}
	return n
}

// MaxInFlight is the largest number of requests with the path prefix that were
// being handled at the same time.
func (s *Server) MaxInFlight(pathPrefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, peak := 0, 0
	for _, e := range s.events {
		if strings.HasPrefix(e.path, pathPrefix) {
			cur += e.delta
			peak = max(peak, cur)
		}
	}
	return peak
}

// Violations returns the contract violations seen so far.
func (s *Server) Violations() []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Violation(nil), s.violations...)
}

func (s *Server) violation(r *http.Request, kind string, err error) {
	v := Violation{Kind: kind, Method: r.Method, Path: r.URL.RequestURI(), Err: err}
	s.mu.Lock()
	s.violations = append(s.violations, v)
	s.mu.Unlock()
	s.onViolation(v)
}

// response is an answer assembled before it is validated and written.
type response struct {
	status int
	header http.Header
	body   []byte
}

func jsonResponse(status int, v any) *response {
	b, err := appendJSON(nil, v)
	if err != nil {
		panic(fmt.Sprintf("waldurtest: encode response: %v", err))
	}
	return &response{status: status, header: http.Header{"Content-Type": {"application/json"}}, body: b}
}

func detail(status int, msg string) *response {
	return jsonResponse(status, map[string]string{"detail": msg})
}

func emptyResponse(status int) *response {
	return &response{status: status, header: http.Header{}}
}

// serve handles one request: record it and run hooks, apply delays, route and
// validate it, answer an injected fault or authenticate and dispatch it,
// validate the answer, write it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	rel, ok := strings.CutPrefix(r.URL.Path, s.prefix)
	if !ok {
		s.violation(r, "route", fmt.Errorf("path is outside the server prefix %q", s.prefix))
		s.write(w, detail(http.StatusNotFound, "Not found."))
		return
	}
	r.URL.Path, r.URL.RawPath = rel, ""
	defer s.begin(r, body)()
	if !s.wait(r) {
		return
	}
	op, err := s.contract.match(r)
	if err != nil {
		if !s.isAllowed(rel) {
			s.violation(r, "route", err)
		} else if f := s.takeFault(rel); f != nil {
			s.writeFault(w, f)
			return
		} else if resp := s.serveExtension(r); resp != nil {
			s.write(w, resp)
			return
		}
		s.write(w, detail(http.StatusNotFound, "Not found."))
		return
	}
	if !s.unchecked {
		if err := s.contract.checkRequest(r.Context(), r, body, op); err != nil {
			s.violation(r, "request", err)
		}
	}
	f := s.takeFault(rel)
	if f != nil && !f.ResetMidBody {
		s.writeFault(w, f)
		return
	}
	resp := s.handle(r, body, op)
	if f != nil {
		s.writeReset(w, resp)
		return
	}
	if resp.status >= 200 && resp.status < 300 && !s.unchecked {
		if err := s.contract.checkResponse(r.Context(), r, body, op, resp); err != nil {
			s.violation(r, "response", err)
		}
	}
	s.write(w, resp)
}

// begin records the request, runs hooks and returns the function recording its end.
func (s *Server) begin(r *http.Request, body []byte) func() {
	s.mu.Lock()
	s.events = append(s.events, event{path: r.URL.Path, delta: 1})
	hooks := append([]func(*http.Request, []byte){}, s.hooks...)
	s.mu.unlockRead()
	for _, h := range hooks {
		h(r, body)
	}
	return func() {
		s.mu.Lock()
		s.events = append(s.events, event{path: r.URL.Path, delta: -1})
		s.mu.unlockRead()
	}
}

// wait applies a configured delay; false when the client went away meanwhile.
func (s *Server) wait(r *http.Request) bool {
	s.mu.Lock()
	var d time.Duration
	for p, v := range s.delays {
		if strings.HasPrefix(r.URL.Path, p) {
			d = max(d, v)
		}
	}
	s.mu.unlockRead()
	if d == 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *Server) isAllowed(path string) bool {
	for _, p := range s.allowed {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func (s *Server) takeFault(path string) *Fault {
	s.mu.Lock()
	defer s.mu.unlockRead() // faults are not listed
	for i, f := range s.faults {
		if f.Count > 0 && strings.HasPrefix(path, f.PathPrefix) {
			f.Count--
			cp := *f
			if f.Count == 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			return &cp
		}
	}
	return nil
}

func (s *Server) writeFault(w http.ResponseWriter, f *Fault) {
	if f.Drop {
		hj, ok := w.(http.Hijacker)
		if !ok {
			s.t.Errorf("waldurtest: cannot drop the connection: no http.Hijacker")
			return
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	var resp *response
	if f.Status >= 500 {
		resp = &response{status: f.Status, header: http.Header{"Content-Type": {"text/html; charset=utf-8"}},
			body: fmt.Appendf(nil, "<!doctype html>\n<html><body><h1>Server Error (%d)</h1></body></html>\n", f.Status)}
	} else {
		resp = detail(f.Status, "Injected failure: "+http.StatusText(f.Status)+".")
	}
	if f.RetryAfter != "" {
		resp.header.Set("Retry-After", f.RetryAfter)
	}
	s.write(w, resp)
}

// writeReset sends resp's status line, headers (with the full
// Content-Length) and half its body over the raw connection, then resets it.
func (s *Server) writeReset(w http.ResponseWriter, resp *response) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		s.t.Errorf("waldurtest: cannot reset the connection: no http.Hijacker")
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		s.t.Errorf("waldurtest: hijack: %v", err)
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", resp.status, http.StatusText(resp.status))
	h := resp.header.Clone()
	h.Set("Content-Length", fmt.Sprint(len(resp.body)))
	_ = h.Write(buf)
	fmt.Fprint(buf, "\r\n")
	_, _ = buf.Write(resp.body[:len(resp.body)/2])
	_ = buf.Flush()
	if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0) // close with RST, not FIN
	}
}

// write sends resp with its length declared, as Django's CommonMiddleware
// declares every response that is not streamed.
func (s *Server) write(w http.ResponseWriter, resp *response) {
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	if len(resp.body) > 0 && w.Header().Get("Content-Length") == "" {
		w.Header().Set("Content-Length", strconv.Itoa(len(resp.body)))
	}
	w.WriteHeader(resp.status)
	_, _ = io.Copy(w, bytes.NewReader(resp.body))
}
