// Package forgetest is an in-repo stand-in for the pull and merge request
// endpoints of GitHub, Gitea and GitLab, written to their published REST API
// descriptions (the paths, query parameters, request fields, answer fields
// and authentication headers package forge uses). It keeps the requests in
// memory, checks the token, and refuses a second open request for the same
// branch as the services do (422 on GitHub and Gitea, 409 on GitLab).
package forgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
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

	mu    sync.Mutex
	prs   []PR
	posts int
	http  *httptest.Server
}

// New starts a server for typ (github, gitea, gitlab) and repository repo
// (owner/name, or a GitLab project path).
func New(t testing.TB, typ, repo, token string) *Server {
	s := &Server{Type: typ, Repo: repo, Token: token}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.http.Close)
	return s
}

// APIURL is the API root to configure (with /api/v1 for Gitea, /api/v4 for GitLab).
func (s *Server) APIURL() string {
	switch s.Type {
	case "gitea":
		return s.http.URL + "/api/v1"
	case "gitlab":
		return s.http.URL + "/api/v4"
	}
	return s.http.URL
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

func (s *Server) authorized(r *http.Request) bool {
	switch s.Type {
	case "gitlab":
		return r.Header.Get("PRIVATE-TOKEN") == s.Token
	case "gitea":
		return r.Header.Get("Authorization") == "token "+s.Token
	}
	return r.Header.Get("Authorization") == "Bearer "+s.Token
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	var want string
	switch s.Type {
	case "gitlab":
		want = "/api/v4/projects/" + strings.ReplaceAll(s.Repo, "/", "%2F") + "/merge_requests"
	case "gitea":
		want = "/api/v1/repos/" + s.Repo + "/pulls"
	default:
		want = "/repos/" + s.Repo + "/pulls"
	}
	if r.URL.EscapedPath() != want {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		s.list(w, r)
	case http.MethodPost:
		s.create(w, r)
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
	}
}

func (s *Server) view(p PR) map[string]any {
	web := fmt.Sprintf("%s/%s/pull/%d", s.http.URL, s.Repo, p.Number)
	if s.Type == "gitlab" {
		state := map[string]string{"open": "opened"}[p.State]
		if state == "" {
			state = p.State
		}
		return map[string]any{"iid": p.Number, "source_branch": p.Head, "target_branch": p.Base, "title": p.Title, "description": p.Body, "state": state,
			"web_url": fmt.Sprintf("%s/%s/-/merge_requests/%d", s.http.URL, s.Repo, p.Number)}
	}
	return map[string]any{"number": p.Number, "title": p.Title, "body": p.Body, "state": p.State, "html_url": web,
		"head": map[string]any{"ref": p.Head}, "base": map[string]any{"ref": p.Base}}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if s.Type == "gitlab" && state == "opened" {
		state = "open"
	}
	head := q.Get("head") // GitHub: owner:branch
	if _, b, ok := strings.Cut(head, ":"); ok {
		head = b
	}
	if s.Type == "gitlab" {
		head = q.Get("source_branch")
	}
	size := 30
	if v := q.Get("per_page") + q.Get("limit"); v != "" {
		size, _ = strconv.Atoi(v)
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	var out []map[string]any
	for _, p := range s.prs {
		if (state == "" || state == "all" || p.State == state) && (head == "" || s.Type == "gitea" || p.Head == head) {
			out = append(out, s.view(p))
		}
	}
	lo, hi := min((page-1)*size, len(out)), min(page*size, len(out))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(append([]map[string]any{}, out[lo:hi]...))
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in map[string]string
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
		return
	}
	s.posts++
	p := PR{Number: len(s.prs) + 1, State: "open", Title: in["title"]}
	if s.Type == "gitlab" {
		p.Head, p.Base, p.Body = in["source_branch"], in["target_branch"], in["description"]
	} else {
		p.Head, p.Base, p.Body = in["head"], in["base"], in["body"]
	}
	if p.Head == "" || p.Base == "" || p.Title == "" {
		http.Error(w, `{"message":"Validation Failed"}`, http.StatusUnprocessableEntity)
		return
	}
	for _, o := range s.prs {
		if o.Head == p.Head && o.State == "open" {
			code := http.StatusUnprocessableEntity
			if s.Type == "gitlab" {
				code = http.StatusConflict
			}
			http.Error(w, `{"message":"A pull request already exists for `+p.Head+`"}`, code)
			return
		}
	}
	s.prs = append(s.prs, p)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(s.view(p))
}
