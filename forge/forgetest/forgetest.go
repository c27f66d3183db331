// Package forgetest is an in-repo stand-in for the pull and merge request
// endpoints of GitHub, Gitea and GitLab, held to subsets of their published
// API descriptions (testdata/, each file naming its source): every request it
// receives is validated against the subset (operation, parameters, body,
// credential shape; undeclared query parameters and body properties are
// refused too) and so is every answer it sends (declared status, schema of
// the body). A violation fails the test that started the server, unless the
// test takes it with TakeViolations.
//
// It keeps the requests in memory, checks the token, pages lists as the
// services do (page and per_page or limit, capped at MaxPage), and refuses a
// second open request for the same branch with each service's status (422 on
// GitHub, 409 on Gitea and GitLab).
package forgetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// PR is one stored request.
type PR struct {
	Number             int
	Head, Base         string
	Title, Body, State string
}

// Server serves one repository of one forge type.
type Server struct {
	Type, Repo, Token string
	// MaxPage caps the page size as the service's configuration does
	// (GitHub and GitLab 100; Gitea's default MAX_RESPONSE_ITEMS, 50).
	MaxPage int

	contract *contract
	mu       sync.Mutex
	prs      []PR
	posts    int
	requests []string
	bad      []string
	http     *httptest.Server
}

// New starts a server for typ (github, gitea, gitlab) and repository repo
// (owner/name, or a GitLab project path).
func New(t testing.TB, typ, repo, token string) *Server {
	t.Helper()
	c, err := loadContract(typ)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Type: typ, Repo: repo, Token: token, MaxPage: 100, contract: c}
	if typ == "gitea" {
		s.MaxPage = 50
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.http.Close()
		for _, v := range s.TakeViolations() {
			t.Errorf("forgetest %s: %s", typ, v)
		}
	})
	return s
}

// APIURL is the API root to configure (with /api/v1 for Gitea, /api/v4 for GitLab).
func (s *Server) APIURL() string { return s.http.URL + s.prefix() }

func (s *Server) prefix() string {
	switch s.Type {
	case "gitea":
		return "/api/v1"
	case "gitlab":
		return "/api/v4"
	}
	return ""
}

// PRs returns the stored requests.
func (s *Server) PRs() []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PR(nil), s.prs...)
}

// Posts counts the create calls.
func (s *Server) Posts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts
}

// Requests lists the requests received, as "METHOD path?query".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// TakeViolations returns the contract violations seen so far and forgets
// them, so that they no longer fail the test.
func (s *Server) TakeViolations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.bad
	s.bad = nil
	return v
}

// Add stores a request directly (another tool opened it).
func (s *Server) Add(head, base, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prs = append(s.prs, PR{Number: len(s.prs) + 1, Head: head, Base: base, Title: title, State: "open"})
}

// Close marks every request of branch closed (merged, say).
func (s *Server) Close(branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.prs {
		if s.prs[i].Head == branch {
			s.prs[i].State = "closed"
		}
	}
}

func (s *Server) violation(format string, args ...any) {
	s.bad = append(s.bad, fmt.Sprintf(format, args...))
}

// recorder keeps an answer until it has been validated.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.status = code }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
	rel := r.Clone(r.Context())
	rel.URL.Path = strings.TrimPrefix(r.URL.Path, s.prefix())
	rel.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, s.prefix())
	if !strings.HasPrefix(r.URL.Path, s.prefix()+"/") {
		s.violation("%s %s is outside the API root %s", r.Method, r.URL.Path, s.prefix())
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	op, err := s.contract.match(rel)
	if err != nil {
		s.violation("%v", err)
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	ctx := context.Background()
	err = s.contract.checkRequest(ctx, rel, body, op, s.authShape())
	if s.Type == "github" {
		err = errors.Join(err, githubAuthShape(r))
	}
	if err != nil {
		s.violation("request %s %s: %v", r.Method, r.URL.RequestURI(), err)
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "request not allowed by the published API description: " + err.Error()})
		return
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.dispatch(rec, rel, body, op)
	if err := s.contract.checkResponse(ctx, rel, body, op, rec.status, rec.header, rec.body.Bytes()); err != nil {
		s.violation("answer %d to %s %s: %v", rec.status, r.Method, r.URL.RequestURI(), err)
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
}

// authShape is the credential check of each forge's security scheme. GitHub's
// description declares no scheme: the stand-in checks its header itself.
func (s *Server) authShape() openapi3filter.AuthenticationFunc {
	if s.Type == "gitea" {
		return headerAuth("token")
	}
	return headerAuth("")
}

// githubAuthShape checks GitHub's Authorization header: "Bearer <token>" or
// "token <token>".
func githubAuthShape(r *http.Request) error {
	parts := strings.Fields(r.Header.Get("Authorization"))
	if len(parts) != 2 || (parts[0] != "Bearer" && parts[0] != "token") {
		return fmt.Errorf("header Authorization is not \"Bearer\" or \"token\" followed by one credential")
	}
	return nil
}

func (s *Server) authorized(r *http.Request) bool {
	switch s.Type {
	case "gitlab":
		return r.Header.Get("PRIVATE-TOKEN") == s.Token
	case "gitea":
		return r.Header.Get("Authorization") == "token "+s.Token
	}
	a := r.Header.Get("Authorization")
	return a == "Bearer "+s.Token || a == "token "+s.Token
}

// errorBody is each service's error answer.
func (s *Server) errorBody(status int, msg string) map[string]any {
	switch s.Type {
	case "gitlab":
		if status == http.StatusConflict {
			return map[string]any{"message": []string{msg}}
		}
		return map[string]any{"message": fmt.Sprintf("%d %s", status, msg)}
	case "gitea":
		return map[string]any{"message": msg, "url": s.http.URL + "/api/swagger"}
	}
	return map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": strconv.Itoa(status)}
}

func (s *Server) dispatch(w *recorder, r *http.Request, body []byte, op *operation) {
	if !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, s.errorBody(http.StatusUnauthorized, map[bool]string{true: "Unauthorized", false: "Bad credentials"}[s.Type == "gitlab"]))
		return
	}
	if !s.sameRepo(op.Params) {
		writeJSON(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Not Found"))
		return
	}
	switch op.ID() {
	case "pulls/list", "repoListPullRequests", "getApiV4ProjectsIdMergeRequests":
		s.list(w, r, op)
	case "pulls/create", "repoCreatePullRequest", "postApiV4ProjectsIdMergeRequests":
		s.create(w, body, op)
	default:
		s.violation("operation %s has no handler", op.ID())
		writeJSON(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Not Found"))
	}
}

func (s *Server) sameRepo(params map[string]string) bool {
	if s.Type == "gitlab" {
		id, err := url.PathUnescape(params["id"])
		return err == nil && id == s.Repo
	}
	return params["owner"]+"/"+params["repo"] == s.Repo
}

// answerSchema is the body schema of status code of op (array items when an array).
func answerSchema(op *operation, code int) *openapi3.SchemaRef {
	resp := op.Route.Operation.Responses.Status(code)
	if resp == nil || resp.Value == nil {
		return nil
	}
	mt := resp.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	if mt.Schema.Value != nil && mt.Schema.Value.Items != nil {
		return mt.Schema.Value.Items
	}
	return mt.Schema
}

// view renders p from the smallest answer the description accepts.
func (s *Server) view(op *operation, code int, p PR) map[string]any {
	out, _ := sample(answerSchema(op, code), 0).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	if s.Type == "gitlab" {
		state := p.State
		if state == "open" {
			state = "opened"
		}
		overlay(out, map[string]any{"id": 1000 + p.Number, "iid": p.Number, "project_id": 1, "source_branch": p.Head, "target_branch": p.Base,
			"title": p.Title, "description": p.Body, "state": state,
			"web_url": fmt.Sprintf("%s/%s/-/merge_requests/%d", s.http.URL, s.Repo, p.Number)})
		return out
	}
	owner, _, _ := strings.Cut(s.Repo, "/")
	web := fmt.Sprintf("%s/%s/pulls/%d", s.http.URL, s.Repo, p.Number)
	if s.Type == "github" {
		web = fmt.Sprintf("%s/%s/pull/%d", s.http.URL, s.Repo, p.Number)
	}
	overlay(out, map[string]any{"id": 1000 + p.Number, "number": p.Number, "title": p.Title, "body": p.Body, "state": p.State, "html_url": web,
		"head": map[string]any{"ref": p.Head, "label": owner + ":" + p.Head},
		"base": map[string]any{"ref": p.Base, "label": owner + ":" + p.Base}})
	return out
}

// overlay sets src's values in dst, merging nested objects.
func overlay(dst, src map[string]any) {
	for k, v := range src {
		if m, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				overlay(d, m)
				continue
			}
		}
		dst[k] = v
	}
}

func (s *Server) list(w *recorder, r *http.Request, op *operation) {
	q := r.URL.Query()
	state := q.Get("state")
	switch {
	case s.Type == "gitlab" && state == "opened":
		state = "open"
	case s.Type != "gitlab" && state == "":
		state = "open" // GitHub's and Gitea's default
	}
	var head string
	switch s.Type {
	case "gitlab":
		head = q.Get("source_branch")
	case "github":
		// GitHub filters on head only in the user:ref form.
		if user, ref, ok := strings.Cut(q.Get("head"), ":"); ok {
			if owner, _, _ := strings.Cut(s.Repo, "/"); user == owner {
				head = ref
			} else {
				head = "\x00" // another owner's branch: no request of this repository
			}
		}
	}
	size := map[string]int{"github": 30, "gitea": 30, "gitlab": 20}[s.Type]
	if v := q.Get("per_page") + q.Get("limit"); v != "" {
		size, _ = strconv.Atoi(v)
	}
	size = min(max(size, 1), s.MaxPage)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	var out []map[string]any
	for _, p := range s.prs {
		if (state == "" || state == "all" || p.State == state) && (head == "" || p.Head == head) {
			out = append(out, s.view(op, http.StatusOK, p))
		}
	}
	lo, hi := min((page-1)*size, len(out)), min(page*size, len(out))
	writeJSON(w, http.StatusOK, append([]map[string]any{}, out[lo:hi]...))
}

func (s *Server) create(w *recorder, body []byte, op *operation) {
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	str := func(k string) string { v, _ := in[k].(string); return v }
	s.posts++
	p := PR{Number: len(s.prs) + 1, State: "open", Title: str("title")}
	if s.Type == "gitlab" {
		p.Head, p.Base, p.Body = str("source_branch"), str("target_branch"), str("description")
	} else {
		p.Head, p.Base, p.Body = str("head"), str("base"), str("body")
	}
	if p.Head == "" || p.Base == "" || p.Title == "" {
		if s.Type == "github" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
				"errors": []map[string]any{{"resource": "PullRequest", "code": "missing_field"}}})
			return
		}
		writeJSON(w, http.StatusUnprocessableEntity, s.errorBody(http.StatusUnprocessableEntity, "head, base and title are required"))
		return
	}
	for _, o := range s.prs {
		if o.Head == p.Head && o.State == "open" {
			switch s.Type {
			case "github":
				owner, _, _ := strings.Cut(s.Repo, "/")
				writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
					"errors": []map[string]any{{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + owner + ":" + p.Head + "."}}})
			case "gitlab":
				writeJSON(w, http.StatusConflict, s.errorBody(http.StatusConflict, fmt.Sprintf("Another open merge request already exists for this source branch: !%d", o.Number)))
			default:
				writeJSON(w, http.StatusConflict, s.errorBody(http.StatusConflict, "pull request already exists for these targets"))
			}
			return
		}
	}
	s.prs = append(s.prs, p)
	writeJSON(w, http.StatusCreated, s.view(op, http.StatusCreated, p))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
