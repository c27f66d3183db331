package gittest

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

func TestBareRepoHelpers(t *testing.T) {
	repo := t.TempDir()
	InitBare(t, repo, "main")
	if Head(t, repo, "main") != "" {
		t.Fatal("a new repository has a main branch")
	}
	c1 := Commit(t, repo, "main", map[string]string{"a/x.yaml": "x\n", "b.txt": "b\n"}, "first")
	c2 := Commit(t, repo, "main", map[string]string{"a/y.yaml": "y\n"}, "second")
	c3 := Remove(t, repo, "main", []string{"a"}, "third")
	if got := Log(t, repo, "main"); len(got) != 3 || got[0] != c3 || got[1] != c2 || got[2] != c1 {
		t.Errorf("log %v, want %s %s %s", got, c3, c2, c1)
	}
	if f := Files(t, repo, c2); len(f) != 3 || f["a/y.yaml"] != "y\n" || f["b.txt"] != "b\n" {
		t.Errorf("files at second commit: %v", f)
	}
	if f := Files(t, repo, "main"); len(f) != 1 || f["b.txt"] != "b\n" {
		t.Errorf("files at main: %v", f)
	}
	if m := Message(t, repo, c2); strings.TrimSpace(m) != "second" {
		t.Errorf("message %q", m)
	}
}

// The server accepts clones and pushes of the git CLI with the right
// credentials, refuses the wrong ones, and refuses force pushes.
func TestServerWithGitCLI(t *testing.T) {
	srv := NewServer(t, WithBasicAuth("bot", "s3cret"))
	url := srv.CreateRepo(t, "r.git", "main")
	Commit(t, srv.RepoDir("r.git"), "main", map[string]string{"f": "1\n"}, "seed")
	var served atomic.Int32
	srv.OnRequest(func(*http.Request) { served.Add(1) })

	authed := strings.Replace(url, "http://", "http://bot:s3cret@", 1)
	work := t.TempDir()
	Git(t, work, "clone", "--quiet", authed, "c")
	Git(t, work+"/c", "commit", "--quiet", "--allow-empty", "-m", "two")
	Git(t, work+"/c", "push", "--quiet", "origin", "main")
	if srv.Pushes() != 1 || srv.Fetches() == 0 || served.Load() == 0 {
		t.Errorf("pushes %d fetches %d requests %d", srv.Pushes(), srv.Fetches(), served.Load())
	}
	Git(t, work+"/c", "commit", "--quiet", "--amend", "--allow-empty", "-m", "rewritten")
	if _, err := GitErr(work+"/c", nil, "push", "--quiet", "--force", "origin", "main"); err == nil {
		t.Error("a force push was accepted")
	}

	wrong := strings.Replace(url, "http://", "http://bot:wrong@", 1)
	if _, err := GitErr(work, nil, "clone", "--quiet", wrong, "d"); err == nil {
		t.Error("a clone with the wrong password worked")
	}
	if srv.Unauthorized() == 0 {
		t.Error("no request was refused")
	}
}
