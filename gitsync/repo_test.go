package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/render"
)

const marker = "generated\n"

// tenantTree builds a rendered tree with the marker and one kustomization and
// one object per tenant directory; data varies an object's contents.
func tenantTree(data string, tenants ...string) render.Tree {
	t := render.Tree{render.MarkerFile: []byte(marker)}
	for _, tn := range tenants {
		t[tn+"/kustomization.yaml"] = []byte("resources:\n- namespace.yaml\n")
		t[tn+"/namespace.yaml"] = []byte("kind: Namespace\nmetadata:\n  name: " + filepath.Base(tn) + "\n# " + data + "\n")
	}
	return t
}

func planOf(t render.Tree, msg string) Plan {
	return func(render.Tree) (render.Tree, string, error) { return t, msg, nil }
}

// httpRepo starts a git server with one repository, main branch, and returns
// the server and the repository's URL and directory.
func httpRepo(t *testing.T) (*gittest.Server, string, string) {
	t.Helper()
	srv := gittest.NewServer(t)
	url := srv.CreateRepo(t, "tenants.git", "main")
	return srv, url, srv.RepoDir("tenants.git")
}

func open(t *testing.T, url, path string, auth *githttp.BasicAuth, mod ...func(*Options)) *Repo {
	t.Helper()
	o := Options{URL: url, Branch: "main", Path: path, AuthorName: "waldur-gitops", AuthorEmail: "bot@example.org",
		Now: func() time.Time { return time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC) }}
	if auth != nil {
		o.Auth = auth
		o.secrets = []string{auth.Password}
	}
	for _, m := range mod {
		m(&o)
	}
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func auth(srv *gittest.Server) *githttp.BasicAuth {
	return &githttp.BasicAuth{Username: srv.User(), Password: srv.Password()}
}

// under returns the files of the repository below dir, relative to it.
func under(files map[string]string, dir string) map[string]string {
	out := map[string]string{}
	for p, c := range files {
		if rel, ok := strings.CutPrefix(p, dir+"/"); ok {
			out[rel] = c
		}
	}
	return out
}

func sameFiles(t *testing.T, got map[string]string, want render.Tree) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d files, want %d: %v", len(got), len(want), slices.Sorted(maps.Keys(got)))
	}
	for p, b := range want {
		if got[p] != string(b) {
			t.Errorf("%s: got %q, want %q", p, got[p], b)
		}
	}
}

// TestSyncLifecycle walks one repository through the life of a GitOps
// directory: the first sync, a no-op, an update, a prune, with files outside
// the owned directory (and a directory whose name starts like it) left alone.
func TestSyncLifecycle(t *testing.T) {
	for _, path := range []string{"waldur", "clusters/prod/waldur"} {
		t.Run(path, func(t *testing.T) {
			ctx := t.Context()
			srv, url, dir := httpRepo(t)
			outside := map[string]string{
				"README.md":                 "hello\n",
				"waldur-other/keep.yaml":    "kind: ConfigMap\n",
				"clusters/prod/infra.yaml":  "kind: Namespace\n",
				"clusters/prod/waldurx.txt": "x\n",
			}
			seed := gittest.Commit(t, dir, "main", outside, "seed")
			r := open(t, url, path, auth(srv))

			steps := []struct {
				name       string
				tree       render.Tree
				wantCommit bool
			}{
				{"first sync", tenantTree("v1", "o/cluster/a", "o/cluster/b", "o/cluster/c"), true},
				{"no-op", tenantTree("v1", "o/cluster/a", "o/cluster/b", "o/cluster/c"), false},
				{"update", tenantTree("v1", "o/cluster/a", "o/cluster/b", "o/cluster/c"), true},
				{"prune", tenantTree("v1", "o/cluster/a", "o/cluster/c"), true},
			}
			steps[2].tree["o/cluster/b/namespace.yaml"] = []byte("kind: Namespace\nmetadata:\n  name: b\n# v2\n")
			steps[3].tree["o/cluster/b/namespace.yaml"] = nil
			delete(steps[3].tree, "o/cluster/b/namespace.yaml")
			head := seed
			for _, st := range steps {
				pushes := srv.Pushes()
				res, err := Sync(ctx, r, planOf(st.tree, st.name+"\n"), 3)
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if res.Parent != head || res.Attempts != 1 {
					t.Errorf("%s: parent %s attempts %d, want parent %s and 1 attempt", st.name, res.Parent, res.Attempts, head)
				}
				got := gittest.Head(t, dir, "main")
				switch {
				case st.wantCommit && (res.Commit == "" || got != res.Commit || srv.Pushes() != pushes+1):
					t.Fatalf("%s: commit %q, branch at %s, %d pushes: want one new commit", st.name, res.Commit, got, srv.Pushes()-pushes)
				case !st.wantCommit && (res.Commit != "" || got != head || srv.Pushes() != pushes):
					t.Fatalf("%s: commit %q, %d pushes: want none", st.name, res.Commit, srv.Pushes()-pushes)
				}
				head = got
				files := gittest.Files(t, dir, "main")
				sameFiles(t, under(files, path), st.tree)
				for p, c := range outside {
					if files[p] != c {
						t.Errorf("%s: %s outside %s changed: %q", st.name, p, path, files[p])
					}
				}
			}
			if n := len(gittest.Log(t, dir, "main")); n != 4 {
				t.Errorf("%d commits, want 4 (seed, first sync, update, prune)", n)
			}
			gittest.Git(t, dir, "fsck", "--strict", "--no-dangling")
		})
	}
}

// An update commit touches only the changed tenant's files, and the push sends
// only the objects on the path to them.
func TestOneTenantChangeSendsOnlyItsObjects(t *testing.T) {
	ctx := t.Context()
	srv, url, dir := httpRepo(t)
	var tenants []string
	for i := range 50 {
		tenants = append(tenants, fmt.Sprintf("o/cluster/t%02d", i))
	}
	r := open(t, url, "waldur", auth(srv))
	if _, err := Sync(ctx, r, planOf(tenantTree("v1", tenants...), "first\n"), 0); err != nil {
		t.Fatal(err)
	}
	next := tenantTree("v1", tenants...)
	next["o/cluster/t07/namespace.yaml"] = []byte("changed\n")
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, next, "one\n"); err != nil {
		t.Fatal(err)
	}
	// A blob, the trees t07, cluster, o, waldur and the root, and the commit.
	if n := len(r.objs.added); n != 7 {
		t.Errorf("the commit adds %d objects, want 7", n)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	changed := strings.Fields(gittest.Git(t, dir, "diff", "--name-only", "main~1", "main"))
	if !slices.Equal(changed, []string{"waldur/o/cluster/t07/namespace.yaml"}) {
		t.Errorf("the commit changes %v", changed)
	}
}

// The fetch is shallow: one commit, however long the history.
func TestFetchIsShallow(t *testing.T) {
	for _, tc := range []struct{ name, url string }{{"http", ""}, {"local path", "local"}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, url, dir := httpRepo(t)
			for i := range 5 {
				gittest.Commit(t, dir, "main", map[string]string{"history.txt": fmt.Sprint(i)}, fmt.Sprint("commit ", i))
			}
			if tc.url == "local" {
				url = dir
			}
			r := open(t, url, "waldur", auth(srv))
			if err := r.Fetch(t.Context()); err != nil {
				t.Fatal(err)
			}
			iter, err := r.store.IterEncodedObjects(plumbing.CommitObject)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			_ = iter.ForEach(func(plumbing.EncodedObject) error { n++; return nil })
			if n != 1 {
				t.Errorf("fetched %d commits, want 1", n)
			}
		})
	}
}

// A directory with files but without the marker is not replaced.
func TestRefusesUnownedDirectory(t *testing.T) {
	srv, url, dir := httpRepo(t)
	head := gittest.Commit(t, dir, "main", map[string]string{"apps/app.yaml": "kind: Deployment\n"}, "seed")
	r := open(t, url, "apps", auth(srv))
	_, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), "x\n"), 3)
	if err == nil || !strings.Contains(err.Error(), "no .waldur-gitops marker") {
		t.Fatalf("err %v, want a refusal naming the marker", err)
	}
	if gittest.Head(t, dir, "main") != head {
		t.Error("the branch moved")
	}
}

// Wrong credentials fail with a clear error naming the repository, never the
// password, and change nothing.
func TestWrongCredentials(t *testing.T) {
	srv, url, dir := httpRepo(t)
	head := gittest.Commit(t, dir, "main", map[string]string{"README.md": "x\n"}, "seed")
	for _, tc := range []struct {
		name string
		auth *githttp.BasicAuth
	}{
		{"wrong password", &githttp.BasicAuth{Username: srv.User(), Password: "not-the-password-42"}},
		{"no credentials", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := open(t, url, "waldur", tc.auth)
			_, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), "x\n"), 3)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, "authentication required") || !strings.Contains(msg, url) || !strings.Contains(msg, "git.token_file") {
				t.Errorf("error %q does not explain the failure", msg)
			}
			if strings.Contains(msg, "not-the-password-42") || strings.Contains(msg, srv.Password()) {
				t.Errorf("error %q shows a password", msg)
			}
			if gittest.Head(t, dir, "main") != head || srv.Pushes() != 0 {
				t.Error("the repository changed")
			}
		})
	}
}

// moveBranchOnPush makes another writer commit to the branch whenever a
// client asks to push, up to n times: the client's push always races.
func moveBranchOnPush(t *testing.T, srv *gittest.Server, dir string, n int) *atomic.Int32 {
	var moved atomic.Int32
	srv.OnRequest(func(r *http.Request) {
		if r.URL.Query().Get("service") != "git-receive-pack" || int(moved.Load()) >= n {
			return
		}
		i := moved.Add(1)
		gittest.Commit(t, dir, "main", map[string]string{fmt.Sprintf("other/%d.txt", i): "other writer\n"}, fmt.Sprint("other writer ", i))
	})
	return &moved
}

// A push that loses a race is redone on the new tip; the other writer's
// commit stays.
func TestRaceIsRetriedOnTheNewTip(t *testing.T) {
	srv, url, dir := httpRepo(t)
	gittest.Commit(t, dir, "main", map[string]string{"README.md": "x\n"}, "seed")
	moved := moveBranchOnPush(t, srv, dir, 2)
	r := open(t, url, "waldur", auth(srv))
	var seen []int
	plan := func(cur render.Tree) (render.Tree, string, error) {
		seen = append(seen, len(cur))
		return tenantTree("v1", "o/cluster/a"), "mine\n", nil
	}
	res, err := Sync(t.Context(), r, plan, 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 3 || moved.Load() != 2 || len(seen) != 3 {
		t.Errorf("attempts %d, branch moved %d times, plan called %d times; want 3, 2, 3", res.Attempts, moved.Load(), len(seen))
	}
	log := gittest.Log(t, dir, "main")
	if len(log) != 4 || log[0] != res.Commit {
		t.Fatalf("history %v: want our commit on top of the seed and both of the other writer's", log)
	}
	files := gittest.Files(t, dir, "main")
	if files["other/1.txt"] == "" || files["other/2.txt"] == "" || files["waldur/o/cluster/a/kustomization.yaml"] == "" {
		t.Errorf("a change was lost: %v", slices.Sorted(maps.Keys(files)))
	}
}

// Retries are bounded.
func TestRaceGivesUp(t *testing.T) {
	srv, url, dir := httpRepo(t)
	gittest.Commit(t, dir, "main", map[string]string{"README.md": "x\n"}, "seed")
	moveBranchOnPush(t, srv, dir, 100)
	r := open(t, url, "waldur", auth(srv))
	res, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), "x\n"), 2)
	if !errors.Is(err, ErrRaced) || res.Attempts != 3 || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("attempts %d, err %v", res.Attempts, err)
	}
	if _, ok := gittest.Files(t, dir, "main")["waldur/.waldur-gitops"]; ok {
		t.Error("the commit landed")
	}
}

// installHook makes the bare repository dir run script as its pre-receive
// hook.
func installHook(t *testing.T, dir, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "hooks", "pre-receive"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A push a server hook declines is not retried (it is no race), and the
// error says that a hook declined it and what the hook printed, over the
// smart-HTTP transport (git http-backend relays the hook's output on the side
// band) and the local one alike, with every credential masked.
func TestDeclinedPushSaysWhy(t *testing.T) {
	for _, transport := range []string{"http", "file"} {
		t.Run(transport, func(t *testing.T) {
			srv, url, dir := httpRepo(t)
			a := auth(srv)
			if transport == "file" {
				url, a = dir, nil
			}
			head := gittest.Commit(t, dir, "main", map[string]string{"README.md": "x\n"}, "seed")
			installHook(t, dir, "#!/bin/sh\n"+
				"echo 'GL-HOOK-ERR: pushes to main need a merge request' >&2\n"+
				"echo 'policy: see https://"+srv.User()+":"+srv.Password()+"@git.example.org/policy'\n"+
				"printf '\\033[31mred\\033[0m tail\\n' >&2\n"+
				"exit 1\n")
			r := open(t, url, "waldur", a, func(o *Options) { o.secrets = []string{srv.Password()} })
			res, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), "x\n"), 5)
			if !errors.Is(err, ErrDeclined) || errors.Is(err, ErrRaced) {
				t.Fatalf("err = %v: want ErrDeclined, not ErrRaced", err)
			}
			msg := err.Error()
			for _, want := range []string{
				"git push ", "the server's hook declined the push to main (", "pre-receive hook declined",
				"; the server said: GL-HOOK-ERR: pushes to main need a merge request / policy: see https://",
				"policy / red tail",
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, srv.Password()) || strings.ContainsRune(msg, '\033') {
				t.Errorf("error shows the password or a control character:\n%q", msg)
			}
			if res.Attempts != 1 {
				t.Errorf("%d attempts: a declined push was retried", res.Attempts)
			}
			if gittest.Head(t, dir, "main") != head {
				t.Error("the branch moved")
			}
		})
	}
}

// What the server prints is kept within bounds, one line, without control
// characters.
func TestRemoteMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want string
	}{
		{"nothing", nil, ""},
		{"blank lines", []string{"\n  \r\n"}, ""},
		{"lines and progress", []string{"first\r\n", "sec", "ond\n\x1b[1mbold\x07\n"}, "; the server said: first / second / bold"},
		{"many lines", []string{strings.Repeat("l\n", 20)}, "; the server said: " + strings.TrimSuffix(strings.Repeat("l / ", maxRemoteLines), " / ") + " / …"},
		{"too long", []string{strings.Repeat("x", maxRemoteMessages+10)}, "; the server said: " + strings.Repeat("x", maxRemoteMessages) + " / …"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &remoteMessages{}
			for _, p := range tc.in {
				if n, err := m.Write([]byte(p)); n != len(p) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := m.said(); got != tc.want {
				t.Errorf("said() = %q, want %q", got, tc.want)
			}
		})
	}
}

// Two writers syncing different directories of one branch at the same time
// both land every change; the server refuses non-fast-forward updates, so no
// commit can have been overwritten.
func TestConcurrentWriters(t *testing.T) {
	srv, url, dir := httpRepo(t)
	gittest.Commit(t, dir, "main", map[string]string{"README.md": "x\n"}, "seed")
	const rounds = 4
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for _, site := range []string{"site-a", "site-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := open(t, url, site, auth(srv))
			for i := range rounds {
				if _, err := Sync(context.Background(), r, planOf(tenantTree(fmt.Sprint(site, i), "o/cluster/t"), fmt.Sprint(site, i, "\n")), 20); err != nil {
					errs <- fmt.Errorf("%s round %d: %w", site, i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	log := gittest.Log(t, dir, "main")
	if len(log) != 1+2*rounds {
		t.Errorf("%d commits, want %d", len(log), 1+2*rounds)
	}
	files := gittest.Files(t, dir, "main")
	for _, site := range []string{"site-a", "site-b"} {
		sameFiles(t, under(files, site), tenantTree(fmt.Sprint(site, rounds-1), "o/cluster/t"))
	}
	// Linear history: every commit but the seed has exactly one parent.
	if merges := strings.Fields(gittest.Git(t, dir, "rev-list", "--min-parents=2", "main")); len(merges) > 0 {
		t.Errorf("merge commits: %v", merges)
	}
}

// A plan error (the deletion guard) stops the run before any commit.
func TestPlanErrorCommitsNothing(t *testing.T) {
	srv, url, dir := httpRepo(t)
	head := gittest.Commit(t, dir, "main", map[string]string{"waldur/.waldur-gitops": marker}, "seed")
	r := open(t, url, "waldur", auth(srv))
	refuse := errors.New("refused")
	_, err := Sync(t.Context(), r, func(render.Tree) (render.Tree, string, error) { return nil, "", refuse }, 3)
	if !errors.Is(err, refuse) || gittest.Head(t, dir, "main") != head || srv.Pushes() != 0 {
		t.Errorf("err %v, pushes %d", err, srv.Pushes())
	}
}

// A repository without commits, or without the branch, gets the branch.
func TestCreatesTheBranch(t *testing.T) {
	srv, url, dir := httpRepo(t)
	for _, branch := range []string{"main", "env/prod"} {
		r := open(t, url, "waldur", auth(srv), func(o *Options) { o.Branch = branch })
		res, err := Sync(t.Context(), r, planOf(tenantTree("v1", "o/cluster/a"), "x\n"), 0)
		if err != nil || res.Parent != "" || res.Commit == "" || gittest.Head(t, dir, branch) != res.Commit {
			t.Fatalf("%s: res %+v err %v", branch, res, err)
		}
	}
}

// git.path "." owns the whole repository: allowed in an empty repository (or
// one that waldur-gitops wrote), refused in one with other files.
func TestWholeRepository(t *testing.T) {
	srv, url, dir := httpRepo(t)
	r := open(t, url, ".", auth(srv))
	tree := tenantTree("v1", "o/cluster/a")
	if _, err := Sync(t.Context(), r, planOf(tree, "x\n"), 0); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, gittest.Files(t, dir, "main"), tree)
	gittest.Remove(t, dir, "main", []string{".waldur-gitops"}, "drop the marker")
	if _, err := Sync(t.Context(), r, planOf(tree, "x\n"), 0); err == nil || !strings.Contains(err.Error(), "the repository root") {
		t.Errorf("err %v, want a refusal", err)
	}
}

// TestFetchKeepsAnUnmovedBranch: a Repo that fetched or pushed the branch's
// tip downloads nothing while the branch stays there, and syncs on what it
// holds; when another writer moves the branch it downloads the new tip.
func TestFetchKeepsAnUnmovedBranch(t *testing.T) {
	ctx := t.Context()
	srv, url, dir := httpRepo(t)
	gittest.Commit(t, dir, "main", map[string]string{"README.md": "seed"}, "seed")
	r := open(t, url, "waldur", auth(srv))
	steps := []struct {
		name      string
		tree      render.Tree
		external  bool // another writer commits first
		review    bool // a person pushes a review branch first
		downloads int  // pack downloads the step makes
	}{
		{name: "first sync", tree: tenantTree("v1", "o/c/a", "o/c/b"), downloads: 1},
		{name: "after our push", tree: tenantTree("v2", "o/c/a", "o/c/b")},
		{name: "no-op", tree: tenantTree("v2", "o/c/a", "o/c/b")},
		{name: "another writer moved the branch", tree: tenantTree("v3", "o/c/a"), external: true, downloads: 1},
		{name: "after our push again", tree: tenantTree("v4", "o/c/a")},
		{name: "a review branch appeared", tree: tenantTree("v4", "o/c/a"), review: true, downloads: 1},
		{name: "no-op after it", tree: tenantTree("v4", "o/c/a")},
	}
	for _, st := range steps {
		if st.external {
			gittest.Commit(t, dir, "main", map[string]string{"README.md": st.name}, st.name)
		}
		if st.review {
			gittest.Commit(t, dir, ReviewPrefix+"abc", map[string]string{"README.md": st.name}, st.name)
		}
		before := srv.Fetches()
		if _, err := Sync(ctx, r, planOf(st.tree, st.name+"\n"), 3); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := srv.Fetches() - before; got != st.downloads {
			t.Errorf("%s: %d pack downloads, want %d", st.name, got, st.downloads)
		}
		files := gittest.Files(t, dir, "main")
		sameFiles(t, under(files, "waldur"), st.tree)
		if st.external && files["README.md"] != st.name {
			t.Errorf("%s: the other writer's file is gone", st.name)
		}
		if st.review {
			if b := r.ReviewBranches(); len(b) != 1 || b[0].Name != ReviewPrefix+"abc" || b[0].Time.IsZero() {
				t.Errorf("%s: review branches %+v, want the new one with its commit time", st.name, b)
			}
		}
	}
}
