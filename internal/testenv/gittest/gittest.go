// Package gittest gives tests real Git repositories: bare repositories on disk
// and a smart-HTTP server (git http-backend behind net/http/cgi) with basic
// auth in front of them. Everything runs the git CLI, isolated from the user's
// and the system's git config, so a test sees what a Git hosting service would
// do with the same pushes.
//
// Typical use:
//
//	srv := gittest.NewServer(t)
//	url := srv.CreateRepo(t, "tenants.git", "main")
//	gittest.Commit(t, srv.RepoDir("tenants.git"), "main", map[string]string{"README.md": "hi\n"}, "seed")
//	// push to url with basic auth srv.User() / srv.Password()
//	files := gittest.Files(t, srv.RepoDir("tenants.git"), "main")
package gittest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Identity is the author and committer of the commits this package makes.
const (
	IdentityName  = "gittest"
	IdentityEmail = "gittest@example.invalid"
)

// Env is the environment every git command of this package runs with: no
// global or system config, a fixed identity, no prompts.
func Env() []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=" + IdentityName, "GIT_AUTHOR_EMAIL=" + IdentityEmail,
		"GIT_COMMITTER_NAME=" + IdentityName, "GIT_COMMITTER_EMAIL=" + IdentityEmail,
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "TMPDIR" || k == "HOME" {
			env = append(env, kv)
		}
	}
	return env
}

// Git runs the git CLI in dir and returns its standard output; a failure fails
// the test with git's standard error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitErr(dir, nil, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// GitErr runs the git CLI in dir with stdin and returns its standard output,
// or an error carrying its standard error.
func GitErr(dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), &gitError{err: err, stderr: strings.TrimSpace(errb.String())}
	}
	return out.String(), nil
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + e.stderr }
func (e *gitError) Unwrap() error { return e.err }

// InitBare creates a bare repository at dir whose HEAD names branch. It refuses
// non-fast-forward updates, as protected branches do, so a test notices any
// force push.
func InitBare(t testing.TB, dir, branch string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "--quiet", "--bare", "--initial-branch="+branch)
	Git(t, dir, "config", "receive.denyNonFastForwards", "true")
	Git(t, dir, "config", "receive.denyDeletes", "true")
}

// Commit adds one commit to branch of the bare repository repo, on top of its
// tip (a root commit when the branch does not exist). files maps paths to
// contents; a nil content (use Remove) deletes the path. Other files are kept.
// It returns the new commit's hash.
func Commit(t testing.TB, repo, branch string, files map[string]string, message string) string {
	t.Helper()
	return commit(t, repo, branch, files, nil, message)
}

// Remove adds one commit to branch that deletes paths (files or directories).
func Remove(t testing.TB, repo, branch string, paths []string, message string) string {
	t.Helper()
	return commit(t, repo, branch, nil, paths, message)
}

func commit(t testing.TB, repo, branch string, files map[string]string, remove []string, message string) string {
	t.Helper()
	work := t.TempDir()
	idx := filepath.Join(work, "index")
	run := func(stdin []byte, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"--git-dir", repo}, args...)...)
		cmd.Env = append(Env(), "GIT_INDEX_FILE="+idx, "GIT_WORK_TREE="+work)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	parent, err := GitErr(repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	parent = strings.TrimSpace(parent)
	if err == nil {
		run(nil, "read-tree", parent)
	}
	for _, p := range remove {
		run(nil, "rm", "--cached", "-r", "-q", "--ignore-unmatch", "--", p)
	}
	for p, content := range files {
		h := run([]byte(content), "hash-object", "-w", "--stdin")
		run(nil, "update-index", "--add", "--cacheinfo", "100644,"+h+","+p)
	}
	tree := run(nil, "write-tree")
	args := []string{"commit-tree", tree, "-m", message}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	c := run(nil, args...)
	old := parent
	if old == "" {
		old = strings.Repeat("0", 40)
	}
	run(nil, "update-ref", "refs/heads/"+branch, c, old)
	return c
}

// Files returns every file of ref in the bare repository repo, by path.
func Files(t testing.TB, repo, ref string) map[string]string {
	t.Helper()
	out := map[string]string{}
	list := Git(t, repo, "ls-tree", "-r", "-z", "--full-tree", ref)
	var paths, hashes []string
	for _, rec := range strings.Split(list, "\x00") {
		if rec == "" {
			continue
		}
		meta, p, _ := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if len(f) != 3 || f[1] != "blob" {
			continue
		}
		paths, hashes = append(paths, p), append(hashes, f[2])
	}
	if len(paths) == 0 {
		return out
	}
	batch, err := GitErr(repo, []byte(strings.Join(hashes, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		t.Fatal(err)
	}
	rest := batch
	for i := range paths {
		header, body, ok := strings.Cut(rest, "\n")
		if !ok {
			t.Fatalf("cat-file: short output")
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			t.Fatalf("cat-file: bad header %q", header)
		}
		var n int
		for _, c := range f[2] {
			n = n*10 + int(c-'0')
		}
		out[paths[i]] = body[:n]
		rest = body[n+1:]
	}
	return out
}

// Head returns the commit branch points at in repo, "" when it does not exist.
func Head(t testing.TB, repo, branch string) string {
	t.Helper()
	out, err := GitErr(repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// Log returns the hashes of the commits reachable from ref, newest first.
func Log(t testing.TB, repo, ref string) []string {
	t.Helper()
	return strings.Fields(Git(t, repo, "rev-list", ref))
}

// Message returns the full message of commit.
func Message(t testing.TB, repo, commit string) string {
	t.Helper()
	return Git(t, repo, "log", "-1", "--format=%B", commit)
}

// Server is a smart-HTTP Git server with basic auth over the bare repositories
// in one directory.
type Server struct {
	root     string
	user     string
	password string
	http     *httptest.Server
	backend  *cgi.Handler

	mu    sync.Mutex
	hooks []func(*http.Request)
	count map[string]int
}

// Option configures a Server.
type Option func(*Server)

// WithBasicAuth sets the user and password the server accepts (default: user
// "waldur-bot" and a random password).
func WithBasicAuth(user, password string) Option {
	return func(s *Server) { s.user, s.password = user, password }
}

// NewServer starts a server for the test; it stops when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("gittest: no git CLI on PATH")
	}
	var pw [12]byte
	_, _ = rand.Read(pw[:])
	s := &Server{root: t.TempDir(), user: "waldur-bot", password: hex.EncodeToString(pw[:]), count: map[string]int{}}
	for _, o := range opts {
		o(s)
	}
	s.backend = &cgi.Handler{
		Path:   gitBin,
		Args:   []string{"http-backend"},
		Stderr: io.Discard, // refused pushes are reported to the client too
		Env: append(Env(),
			"GIT_PROJECT_ROOT="+s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			// Pushing needs an authenticated REMOTE_USER or this setting; the
			// authentication is done here, in front of the CGI.
			"GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_KEY_1=uploadpack.allowFilter", "GIT_CONFIG_VALUE_1=true",
		),
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.http.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != s.user || p != s.password {
		w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		s.bump("unauthorized")
		return
	}
	s.mu.Lock()
	hooks := append([]func(*http.Request){}, s.hooks...)
	s.mu.Unlock()
	for _, h := range hooks {
		h(r)
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack"):
		s.bump("push")
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
		s.bump("fetch")
	}
	if r.Method == http.MethodPost && !whole(w, r) {
		return
	}
	s.backend.ServeHTTP(w, r)
}

// whole reads the request's body before git sees it: a client that dies in
// the middle of a push (a test's SIGKILL) leaves a cut body, which git
// http-backend may wait on or spin over for ever, and the server's Close
// with it. A cut body is answered 400 here and git never runs.
func whole(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "gittest: the request body was cut: "+err.Error(), http.StatusBadRequest)
		return false
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.TransferEncoding = nil
	return true
}

func (s *Server) bump(k string) {
	s.mu.Lock()
	s.count[k]++
	s.mu.Unlock()
}

// URL is the server's base URL; a repository is at URL()/name.
func (s *Server) URL() string { return s.http.URL }

// User and Password are the credentials the server accepts.
func (s *Server) User() string     { return s.user }
func (s *Server) Password() string { return s.password }

// CreateRepo creates the bare repository name (e.g. "tenants.git") whose HEAD
// names branch, and returns its URL.
func (s *Server) CreateRepo(t testing.TB, name, branch string) string {
	t.Helper()
	InitBare(t, s.RepoDir(name), branch)
	return s.RepoURL(name)
}

// RepoURL is the HTTP URL of repository name.
func (s *Server) RepoURL(name string) string { return s.http.URL + "/" + name }

// RepoDir is the directory of repository name on disk.
func (s *Server) RepoDir(name string) string { return filepath.Join(s.root, name) }

// OnRequest registers fn, called with every authenticated request before it is
// served: a test can move a branch between a client's fetch and its push.
func (s *Server) OnRequest(fn func(*http.Request)) {
	s.mu.Lock()
	s.hooks = append(s.hooks, fn)
	s.mu.Unlock()
}

// Pushes counts the pack uploads (git-receive-pack POSTs) served so far.
func (s *Server) Pushes() int { return s.counter("push") }

// Fetches counts the pack downloads (git-upload-pack POSTs) served so far.
func (s *Server) Fetches() int { return s.counter("fetch") }

// Unauthorized counts the requests refused for missing or wrong credentials.
func (s *Server) Unauthorized() int { return s.counter("unauthorized") }

func (s *Server) counter(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[k]
}
