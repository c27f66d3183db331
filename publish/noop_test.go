package publish_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/exampletest"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// noopSite is the example synced to a repository on the smart-HTTP test
// server, which counts the fetches that want a branch's commit (a state
// ref's commit is not one).
type noopSite struct {
	cfg      *config.Loaded
	src      *answers
	dir      string
	mu       sync.Mutex
	branchFs int
}

const noopPasswordEnv = "WALDUR_GITOPS_TEST_NOOP_GIT_PASSWORD"

var wantLine = regexp.MustCompile(`want ([0-9a-f]{40})`)

func newNoopSite(t *testing.T) *noopSite {
	t.Helper()
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	srv := gittest.NewServer(t)
	url := srv.CreateRepo(t, "tenants.git", "main")
	t.Setenv(noopPasswordEnv, srv.Password())
	cfg.Git.URL, cfg.Git.Username, cfg.Git.PasswordEnv = url, srv.User(), noopPasswordEnv
	s := &noopSite{cfg: cfg, src: &answers{st: st}, dir: srv.RepoDir("tenants.git")}
	srv.OnRequest(func(r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		states := gittest.Git(t, s.dir, "for-each-ref", "--format=%(objectname)", gitsync.StateRefPrefix)
		for _, m := range wantLine.FindAllSubmatch(body, -1) {
			if !strings.Contains(states, string(m[1])) {
				s.mu.Lock()
				s.branchFs++
				s.mu.Unlock()
				return
			}
		}
	})
	return s
}

// sync runs a sync as a fresh process would (a new engine, nothing in
// memory) and returns how many fetches wanted the branch and the git
// stage's commit entry.
func (s *noopSite) sync(t *testing.T) (int, changeset.Entry, *engine.Outcome) {
	t.Helper()
	s.mu.Lock()
	s.branchFs = 0
	s.mu.Unlock()
	out := engineOver(t, s.cfg, s.src, nil, guard.DefaultOptions()).Run(context.Background(), engine.Request{Command: "sync"})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	var commit changeset.Entry
	for _, e := range out.Report.Changes {
		if e.Stage == "git" && e.Kind == "Commit" {
			commit = e
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.branchFs, commit, out
}

// A sync after a sync that left the branch as it renders fetches nothing
// of the branch; a moved branch (a hand edit), a forged or stale record and
// a change in Waldur are each seen and handled by the full fetch, which
// leaves the branch as rendered and a record the next run trusts.
func TestNoopRunFetchesNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		// between changes something after the first sync; nil: nothing.
		between func(t *testing.T, s *noopSite)
		// fetches: the second sync fetches the branch; commits: it commits.
		fetches, commits bool
	}{
		{name: "nothing changed"},
		{name: "hand edit", fetches: true, commits: true, between: func(t *testing.T, s *noopSite) {
			files := gittest.Files(t, s.dir, "main")
			for p := range files {
				if strings.HasSuffix(p, "/kustomization.yaml") && strings.Count(p, "/") == 4 {
					gittest.Commit(t, s.dir, "main", map[string]string{p: files[p] + "# edited by hand\n"}, "hand edit")
					return
				}
			}
			t.Fatal("no tenant kustomization to edit")
		}},
		{name: "record forged to another commit", fetches: true, between: func(t *testing.T, s *noopSite) {
			tip := gittest.Head(t, s.dir, "main")
			edit := gittest.Commit(t, s.dir, "main", map[string]string{"README.md": "by hand\n"}, "hand edit")
			gittest.Git(t, s.dir, "update-ref", "refs/heads/main", tip) // the branch back where it was
			forgeRecord(t, s, map[string]any{"commit": edit})
		}},
		{name: "record of other files at the tip", fetches: true, between: func(t *testing.T, s *noopSite) {
			forgeRecord(t, s, map[string]any{"files": strings.Repeat("0", 64)})
		}},
		{name: "waldur changed", fetches: true, commits: true, between: func(t *testing.T, s *noopSite) {
			r := &s.src.st.Offerings[0].Resources[0]
			r.Limits = waldur.Limits{}
			for k, v := range s.src.st.Offerings[0].Resources[0].Limits {
				r.Limits[k] = v
			}
			r.Name += " renamed"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newNoopSite(t)
			if fetches, e, _ := s.sync(t); fetches != 0 || e.Action != changeset.Create {
				t.Fatalf("first sync: %d branch fetches (into an empty repository: none), commit %+v", fetches, e)
			}
			if c.between != nil {
				c.between(t, s)
			}
			before := gittest.Head(t, s.dir, "main")
			fetches, e, out := s.sync(t)
			moved := gittest.Head(t, s.dir, "main") != before
			if (fetches > 0) != c.fetches || moved != c.commits || (e.Action == changeset.Create) != c.commits {
				t.Errorf("second sync: %d branch fetches, commit %+v, branch moved %t; want a fetch %t, a commit %t", fetches, e, moved, c.fetches, c.commits)
			}
			if len(out.Published.After) == 0 {
				t.Errorf("second sync published no tree for the later stages")
			}
			head := gittest.Head(t, s.dir, "main")
			if fetches, e, _ := s.sync(t); fetches != 0 || e.Action != changeset.Unchanged || gittest.Head(t, s.dir, "main") != head {
				t.Errorf("third sync: %d branch fetches, commit %+v; want neither", fetches, e)
			}
		})
	}
}

// forgeRecord rewrites keys of the no-op record, keeping the rest.
func forgeRecord(t *testing.T, s *noopSite, set map[string]any) {
	t.Helper()
	ref := strings.TrimSpace(gittest.Git(t, s.dir, "for-each-ref", "--format=%(refname)", gitsync.StateRefPrefix))
	if ref == "" || strings.Contains(ref, "\n") {
		t.Fatalf("state refs: %q; want one", ref)
	}
	name := strings.TrimPrefix(ref, gitsync.StateRefPrefix)
	var rec map[string]any
	if err := json.Unmarshal([]byte(gittest.Git(t, s.dir, "show", ref+":"+name)), &rec); err != nil {
		t.Fatal(err)
	}
	maps.Copy(rec, set)
	data, _ := json.Marshal(rec)
	blob := strings.TrimSpace(gittestGitIn(t, s.dir, data, "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(gittestGitIn(t, s.dir, []byte("100644 blob "+blob+"\t"+name+"\n"), "mktree"))
	forged := strings.TrimSpace(gittest.Git(t, s.dir, "commit-tree", tree, "-m", "forged"))
	gittest.Git(t, s.dir, "update-ref", ref, forged)
}

func gittestGitIn(t *testing.T, dir string, stdin []byte, args ...string) string {
	t.Helper()
	out, err := gittest.GitErr(dir, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A dry run reads the record but never writes it, even when it is stale.
func TestNoopRecordNotWrittenByDryRun(t *testing.T) {
	s := newNoopSite(t)
	s.sync(t)
	stateRefs := func() string {
		return gittest.Git(t, s.dir, "for-each-ref", "--format=%(refname) %(objectname)", gitsync.StateRefPrefix)
	}
	recorded := stateRefs()
	if recorded == "" {
		t.Fatal("the sync wrote no record")
	}
	gittest.Commit(t, s.dir, "main", map[string]string{"README.md": "by hand\n"}, "hand edit")
	out := engineOver(t, s.cfg, s.src, nil, guard.DefaultOptions()).Run(context.Background(), engine.Request{Command: "sync", DryRun: true})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if now := stateRefs(); now != recorded {
		t.Errorf("state refs after a dry run: %q, want %q as before", now, recorded)
	}
}

// A server that refuses the record's ref costs every run its fetch, and
// nothing else: the sync succeeds and says why in a warning.
func TestNoopRecordRefused(t *testing.T) {
	s := newNoopSite(t)
	hook := "#!/bin/sh\ncase \"$1\" in " + gitsync.StateRefPrefix + "*) echo 'no state refs here'; exit 1;; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(s.dir, "hooks", "update"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	for i, wantCommit := range []bool{true, false} {
		s.mu.Lock()
		s.branchFs = 0
		s.mu.Unlock()
		log := slog.New(slog.NewTextHandler(&logs, nil))
		out := engineOver(t, s.cfg, s.src, log, guard.DefaultOptions()).Run(context.Background(), engine.Request{Command: "sync"})
		if out.Err != nil {
			t.Fatalf("sync %d: %v", i+1, out.Err)
		}
		if got := out.Published.Wrote; got != wantCommit {
			t.Errorf("sync %d: wrote %t, want %t", i+1, got, wantCommit)
		}
		s.mu.Lock()
		fetched := s.branchFs
		s.mu.Unlock()
		if i == 1 && fetched == 0 {
			t.Errorf("sync %d fetched nothing of the branch without a record", i+1)
		}
	}
	if n := strings.Count(logs.String(), "cannot write the no-op record"); n != 2 {
		t.Errorf("%d warnings about the record, want one per run:\n%s", n, logs.String())
	}
	if refs := gittest.Git(t, s.dir, "for-each-ref", gitsync.StateRefPrefix); refs != "" {
		t.Errorf("state refs: %q", refs)
	}
}

// A fresh run reads what it keeps in the repository in one look at the
// server: the branch tip, the no-op record and the Keycloak memory's state
// come from one reference advertisement and one pack, and the Keycloak
// stage's load takes its state from there. Outside a run (the keycloak verb,
// or after the run), the load reads the ref itself.
func TestFreshRunReadsItsStatesInOneLook(t *testing.T) {
	cfg, st := exampletest.Load(t, "../examples/config.yaml", "../examples/snapshot.json")
	srv := gittest.NewServer(t)
	url := srv.CreateRepo(t, "tenants.git", "main")
	t.Setenv(noopPasswordEnv, srv.Password())
	cfg.Git.URL, cfg.Git.Username, cfg.Git.PasswordEnv = url, srv.User(), noopPasswordEnv
	var mu sync.Mutex
	looks, packs := 0, 0
	srv.OnRequest(func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack":
			looks++
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
			packs++
		}
	})
	count := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		l, p := looks, packs
		looks, packs = 0, 0
		return l, p
	}
	ctx := context.Background()
	if out := engineOver(t, cfg, &answers{st: st}, nil, guard.DefaultOptions()).Run(ctx, engine.Request{Command: "sync"}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if err := publish.KeycloakMemory(cfg.Config, &publish.Git{Config: cfg.Config}, false).Store().Save(ctx, []byte("kept")); err != nil {
		t.Fatal(err)
	}

	p := &publish.Git{Config: cfg.Config}
	store := publish.KeycloakMemory(cfg.Config, p, false).Store()
	count()
	wait := p.Prepare(ctx)
	data, err := store.Load(ctx)
	wait()
	if l, n := count(); err != nil || string(data) != "kept" || l != 1 || n != 1 {
		t.Errorf("a fresh run's look: Keycloak state %q (%v), %d reference advertisements and %d packs; want \"kept\", 1 and 1", data, err, l, n)
	}
	data, err = store.Load(ctx)
	if l, n := count(); err != nil || string(data) != "kept" || l != 1 || n != 1 {
		t.Errorf("a load outside a run: %q (%v), %d advertisements and %d packs; want \"kept\" read by itself", data, err, l, n)
	}
}

// hollowEngine is engineOver with the render a fresh sync wires: files
// only, hollow when the Git publisher holds its inputs (unless holds says
// otherwise).
func hollowEngine(t *testing.T, cfg *config.Loaded, src engine.Source, holds func(*publish.Git) func(string) bool) *engine.Engine {
	t.Helper()
	tpls, err := render.LoadTemplates(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	git := &publish.Git{Config: cfg.Config}
	r := render.New(cfg.Config, tpls).WithoutObjects().HollowWhen(holds(git))
	return engine.New(engine.Seams{Source: src, Publisher: git, Renderer: engine.ConfigRendering(cfg.Config, r)}, r.Render, guard.DefaultOptions(), nil)
}

// settleExample leaves the example's state with no order to fulfil and
// nothing terminating: a site a render can record.
func settleExample(st *waldur.State) {
	for i := range st.Offerings {
		o := &st.Offerings[i]
		o.Orders = nil
		o.Resources = slices.DeleteFunc(o.Resources, func(r waldur.Resource) bool {
			return r.State != waldur.ResourceOK && r.State != waldur.ResourceErred
		})
	}
}

// A fresh sync whose branch is where the last run left it, and whose
// Waldur state renders to the inputs the last run recorded, builds no
// files: the render is hollow, the publish takes it as unchanged without a
// fetch, and Files builds exactly what the branch holds. A render the
// destination does not hold is never published hollow: given a hollow
// render against a moved branch, the publish builds the files first and
// restores the branch, deleting nothing.
func TestHollowNoop(t *testing.T) {
	s := newNoopSite(t)
	settleExample(s.src.st)
	byRecord := func(g *publish.Git) func(string) bool { return g.Holds }
	run := func(holds func(*publish.Git) func(string) bool) (int, *engine.Outcome) {
		t.Helper()
		s.mu.Lock()
		s.branchFs = 0
		s.mu.Unlock()
		out := hollowEngine(t, s.cfg, s.src, holds).Run(context.Background(), engine.Request{Command: "sync"})
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.branchFs, out
	}
	_, first := run(byRecord)
	if !first.Published.Wrote || first.Result.Hollow() || first.Result.Inputs == "" {
		t.Fatalf("first sync: wrote %t, hollow %t, inputs %q; want a commit of a full render with inputs", first.Published.Wrote, first.Result.Hollow(), first.Result.Inputs)
	}
	branch := func() render.Tree {
		out := render.Tree{}
		for p, data := range gittest.Files(t, s.dir, "main") {
			if rel, ok := strings.CutPrefix(p, s.cfg.Git.Path+"/"); ok {
				out[rel] = []byte(data)
			}
		}
		return out
	}
	want := branch()

	fetches, out := run(byRecord)
	if fetches != 0 || out.Published.Wrote || !out.Result.Hollow() || !out.Published.Hollow() {
		t.Fatalf("second sync: %d branch fetches, wrote %t, hollow render %t, hollow publish %t; want a hollow no-op", fetches, out.Published.Wrote, out.Result.Hollow(), out.Published.Hollow())
	}
	unchanged := 0
	for _, e := range out.Report.Changes {
		if e.Stage == "render" && e.Kind == "Tenant" && e.Action == changeset.Unchanged {
			unchanged++
		}
	}
	if unchanged != len(out.Result.Tenants) || unchanged == 0 {
		t.Errorf("%d tenants reported unchanged, want all %d", unchanged, len(out.Result.Tenants))
	}
	for _, tn := range out.Result.Tenants {
		if !out.Published.Has(tn.Resource) {
			t.Errorf("the hollow publish does not have rendered resource %s", tn.Resource)
		}
	}
	if out.Published.Has("00000000000000000000000000000001") {
		t.Error("the hollow publish has a resource nobody rendered")
	}
	_, files, err := out.Published.Trees(true)
	if err != nil {
		t.Fatal(err)
	}
	if !files.Equal(want) || !out.Published.Before.Equal(want) || out.Result.Hollow() {
		t.Errorf("Files after a hollow no-op: %d files, want the branch's %d", len(files), len(want))
	}

	var edited string
	for p := range want {
		if strings.HasSuffix(p, "/"+render.KustomizationFile) {
			edited = p
			break
		}
	}
	gittest.Commit(t, s.dir, "main", map[string]string{s.cfg.Git.Path + "/" + edited: string(want[edited]) + "# edited by hand\n"}, "hand edit")
	asked := 0
	always := func(*publish.Git) func(string) bool { return func(string) bool { asked++; return true } }
	fetches, out = run(always)
	if asked == 0 || out.Published.Hollow() {
		t.Fatalf("third sync: asked %d times whether to render hollow, published hollow %t", asked, out.Published.Hollow())
	}
	if fetches == 0 || !out.Published.Wrote || !branch().Equal(want) {
		t.Errorf("third sync (hollow render, branch moved): %d fetches, wrote %t, branch as rendered %t; want the files built and the edit undone", fetches, out.Published.Wrote, branch().Equal(want))
	}
}
