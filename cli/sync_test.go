package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// gitPasswordEnv holds the test git server's password in the tests' configs.
const gitPasswordEnv = "WALDUR_GITOPS_TEST_GIT_PASSWORD"

// The example's resources used below.
const (
	genomics      = "3cfe5210e4db306c7aabcd8103b2ad22" // ut-namespaces/cluster/waldur-genomics-pipeline
	genomicsDir   = "waldur/ut-namespaces/cluster/waldur-genomics-pipeline/"
	terminateUUID = "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e"
)

// gitRepo starts a git server with an empty repository and returns the server,
// the repository's directory and its URL; the password is in gitPasswordEnv.
func gitRepo(t *testing.T) (*gittest.Server, string, string) {
	t.Helper()
	srv := gittest.NewServer(t)
	url := srv.CreateRepo(t, "tenants.git", "main")
	t.Setenv(gitPasswordEnv, srv.Password())
	return srv, srv.RepoDir("tenants.git"), url
}

// withGit rewrites the config at path (the example, or serveExample's copy) to
// commit to url as the git server's user, with a report file, and returns the
// new config's path.
func withGit(t *testing.T, path string, srv *gittest.Server, url string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "  url: https://git.example.org/platform/tenants.git\n",
		"  url: "+url+"\n  username: "+srv.User()+"\n  password_env: "+gitPasswordEnv+"\n", 1)
	abs, err := filepath.Abs("../examples/site-templates")
	if err != nil {
		t.Fatal(err)
	}
	text = strings.ReplaceAll(text, "templates_dir: site-templates", "templates_dir: "+abs)
	// These tests are about Git; TestSyncWholeCycle runs the Keycloak stage
	// against the fake. The example's Keycloak is not reachable from here.
	if strings.Contains(text, "keycloak.example.org") {
		text = strings.ReplaceAll(text, "keycloak_enabled: true", "keycloak_enabled: false")
	}
	text = "report: report.json\n" + text
	out := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, out, text)
	return out
}

// editSnapshot writes a copy of the example snapshot changed by edit.
func editSnapshot(t *testing.T, edit func(*waldur.Snapshot)) string {
	t.Helper()
	s, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	edit(s)
	var b bytes.Buffer
	if err := waldur.WriteSnapshot(&b, s); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "state.json")
	writeFile(t, p, b.String())
	return p
}

func resource(s *waldur.Snapshot, id waldur.UUID) (*waldur.OfferingState, *waldur.Resource) {
	for i := range s.Offerings {
		for j := range s.Offerings[i].Resources {
			if s.Offerings[i].Resources[j].UUID == id {
				return &s.Offerings[i], &s.Offerings[i].Resources[j]
			}
		}
	}
	panic("no resource " + id)
}

func readReport(t *testing.T, b []byte) report.Run {
	t.Helper()
	var r report.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	return r
}

func changedPaths(t *testing.T, repo, from, to string) []string {
	t.Helper()
	return strings.Fields(gittest.Git(t, repo, "diff", "--name-only", from, to))
}

// TestSyncLifecycle runs the commands a site runs, against a real git server:
// a dry run on the empty repository, the first sync, a no-op, an update, the
// prune of a terminated tenant; files outside git.path stay as they are.
func TestSyncLifecycle(t *testing.T) {
	srv, repo, url := gitRepo(t)
	cfg := withGit(t, exampleConfig, srv, url)
	outside := map[string]string{"README.md": "# tenants\n", "infra/ingress.yaml": "kind: Ingress\n"}
	seed := gittest.Commit(t, repo, "main", outside, "seed")

	// A dry run shows the diff, exits 1 and changes nothing.
	code, stdout, stderr := run(t, "render", "--config", cfg, "--snapshot", exampleSnapshot, "--dry-run")
	if code != ExitDiff {
		t.Fatalf("dry run: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"diff --git a/" + genomicsDir + "kustomization.yaml", "+ Tenant ut-namespaces/cluster/waldur-genomics-pipeline\n", "render:   +15\n", "git:      +1\n", url + " main:waldur: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, stdout[max(0, len(stdout)-1500):])
		}
	}
	if !regexp.MustCompile(`main:waldur: \d+ file\(s\) would change\n$`).MatchString(stdout) {
		t.Errorf("dry run output does not end with the file count:\n%s", stdout[max(0, len(stdout)-500):])
	}
	if gittest.Head(t, repo, "main") != seed || srv.Pushes() != 0 {
		t.Fatal("the dry run changed the repository")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "report.json")); err == nil {
		t.Error("the dry run wrote the report file")
	}

	// The first sync commits every tenant; the JSON report names the commit.
	code, stdout, stderr = run(t, "sync", "--config", cfg, "--snapshot", exampleSnapshot, "--output", "json")
	if code != ExitOK {
		t.Fatalf("first sync: exit %d\n%s", code, stderr)
	}
	rep := readReport(t, []byte(stdout))
	head := gittest.Head(t, repo, "main")
	if rep.Commit == "" || rep.Commit != head || rep.Counts["render"]["create"] != 15 || rep.Counts["git"]["create"] != 1 || rep.ExitCode != 0 {
		t.Errorf("report: commit %q (head %s), counts %v, exit %d", rep.Commit, head, rep.Counts, rep.ExitCode)
	}
	if names := []string{}; true {
		for _, st := range rep.Stages {
			names = append(names, st.Name)
		}
		// A snapshot moves no orders, and no offering has Keycloak: the
		// stages without a seam do not run.
		if !slices.Equal(names, []string{"waldur", "render", "quota", "git"}) {
			t.Errorf("stages %v", names)
		}
	}
	file, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "report.json"))
	if err != nil || readReport(t, file).Commit != head {
		t.Errorf("report file: %v", err)
	}
	msg := gittest.Message(t, repo, head)
	for _, want := range []string{"waldur: +15 tenants\n", "Added (15):\n  okd-projects/cluster/okd-climate-dashboards\n", "\nWaldur-Resource: " + genomics + "\n", "\nWaldur-Order: 197045b243082fbd3d6674b86f764e99\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}

	// Nothing changed: no commit, exit 0, and the dry run agrees.
	pushes := srv.Pushes()
	code, stdout, stderr = run(t, "sync", "--config", cfg, "--snapshot", exampleSnapshot)
	if code != ExitOK || gittest.Head(t, repo, "main") != head || srv.Pushes() != pushes {
		t.Fatalf("no-op sync: exit %d, a commit or push was made\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "git         ") || !strings.Contains(stdout, "=1") || strings.Contains(stdout, "commit ") {
		t.Errorf("no-op summary:\n%s", stdout)
	}
	for _, args := range [][]string{
		{"render", "--config", cfg, "--snapshot", exampleSnapshot, "--dry-run"},
		{"sync", "--config", cfg, "--snapshot", exampleSnapshot, "--dry-run"},
	} {
		code, stdout, stderr = run(t, args...)
		if code != ExitOK || !strings.Contains(stdout, "main:waldur: no changes") || strings.Contains(stdout, "diff --git") {
			t.Errorf("%s --dry-run without changes: exit %d\n%s%s", args[0], code, stdout, stderr)
		}
	}

	// An update of one resource changes only its tenant's files.
	bigger := editSnapshot(t, func(s *waldur.Snapshot) {
		_, r := resource(s, genomics)
		r.Limits["cpu"] = "32"
	})
	code, stdout, _ = run(t, "sync", "--config", cfg, "--snapshot", bigger, "--dry-run", "--output", "json")
	var plan planJSON
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil || code != ExitDiff || !plan.Changed || plan.Base != head ||
		!slices.Equal(plan.Files, []string{"ut-namespaces/cluster/waldur-genomics-pipeline/managednamespace-waldur-genomics-pipeline.yaml"}) {
		t.Errorf("dry run --output json: exit %d, %v, %+v", code, err, plan)
	}
	if code, _, stderr = run(t, "sync", "--config", cfg, "--snapshot", bigger); code != ExitOK {
		t.Fatalf("update: exit %d\n%s", code, stderr)
	}
	updated := gittest.Head(t, repo, "main")
	if got := changedPaths(t, repo, head, updated); !slices.Equal(got, []string{genomicsDir + "managednamespace-waldur-genomics-pipeline.yaml"}) {
		t.Errorf("the update commit changes %v", got)
	}
	if msg := gittest.Message(t, repo, updated); !strings.HasPrefix(msg, "waldur: ~1 tenants\n") || !strings.Contains(msg, "Waldur-Resource: "+genomics) {
		t.Errorf("update message:\n%s", msg)
	}

	// A terminated resource's tenant is pruned; the commit names the order.
	terminated := editSnapshot(t, func(s *waldur.Snapshot) {
		o, r := resource(s, genomics)
		r.Limits["cpu"] = "32"
		r.State = waldur.ResourceTerminating
		o.Orders = append(o.Orders, waldur.Order{UUID: terminateUUID, Type: waldur.OrderTerminate, State: waldur.OrderExecuting,
			MarketplaceResourceUUID: genomics, Created: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)})
	})
	if code, _, stderr = run(t, "sync", "--config", cfg, "--snapshot", terminated); code != ExitOK {
		t.Fatalf("prune: exit %d\n%s", code, stderr)
	}
	pruned := gittest.Head(t, repo, "main")
	for _, p := range changedPaths(t, repo, updated, pruned) {
		if !strings.HasPrefix(p, genomicsDir) {
			t.Errorf("the prune commit changes %s", p)
		}
	}
	files := gittest.Files(t, repo, "main")
	for p := range files {
		if strings.HasPrefix(p, genomicsDir) {
			t.Errorf("%s is still there", p)
		}
	}
	if msg := gittest.Message(t, repo, pruned); !strings.HasPrefix(msg, "waldur: -1 tenants\n") || !strings.Contains(msg, "Waldur-Order: "+terminateUUID) {
		t.Errorf("prune message:\n%s", msg)
	}
	for p, c := range outside {
		if files[p] != c {
			t.Errorf("%s outside git.path: %q", p, files[p])
		}
	}
	if n := len(gittest.Log(t, repo, "main")); n != 4 {
		t.Errorf("%d commits, want 4 (seed, first sync, update, prune)", n)
	}
}

// TestSyncNeverWipesOnAnEmptyWaldur fills the repository from a Waldur that
// has the example's resources, then syncs from a Waldur that answers with
// empty lists: the deletion guard refuses, the repository stays as it was,
// the report records the refusal. --allow-mass-prune lets it through.
func TestSyncNeverWipesOnAnEmptyWaldur(t *testing.T) {
	_, waldurCfg := serveExample(t)
	srv, repo, url := gitRepo(t)
	cfg := withGit(t, waldurCfg, srv, url)
	if code, _, stderr := run(t, "sync", "--config", cfg); code != ExitOK {
		t.Fatalf("first sync: exit %d\n%s", code, stderr)
	}
	head := gittest.Head(t, repo, "main")
	before := gittest.Files(t, repo, "main")

	empty := waldurtest.New(t, waldurtest.WithToken(os.Getenv("WALDUR_API_TOKEN")))
	empty.Seed(emptyOfferings(t)) // they exist, with nothing in them
	b, _ := os.ReadFile(cfg)
	emptyCfg := filepath.Join(filepath.Dir(cfg), "empty.yaml")
	writeFile(t, emptyCfg, regexp.MustCompile(`waldur_api_url: .*`).ReplaceAllString(string(b), "waldur_api_url: "+empty.URL()))

	code, stdout, stderr := run(t, "sync", "--config", emptyCfg)
	// 16: the example's 15 and the Create order the first sync approved.
	if code != ExitGuard || !strings.Contains(stderr, "refusing to remove 16 of 16 tenants") || !strings.Contains(stderr, "--allow-mass-prune") {
		t.Fatalf("exit %d, want %d\n%s", code, ExitGuard, stderr)
	}
	if gittest.Head(t, repo, "main") != head || len(gittest.Files(t, repo, "main")) != len(before) {
		t.Fatal("the repository changed")
	}
	rep := readReport(t, mustRead(t, filepath.Join(filepath.Dir(cfg), "report.json")))
	if rep.ExitCode != ExitGuard || rep.Commit != "" || len(rep.Stages) != 7 || !strings.Contains(rep.Stages[6].Error, "refusing to remove") {
		t.Errorf("report: exit %d, commit %q, stages %+v", rep.ExitCode, rep.Commit, rep.Stages)
	}
	if !strings.Contains(stdout, "FAILED: refusing") {
		t.Errorf("summary:\n%s", stdout)
	}

	// The dry run shows the plan and says sync would refuse it.
	code, stdout, _ = run(t, "render", "--config", emptyCfg, "--dry-run")
	if code != ExitGuard || !strings.Contains(stdout, "render:   -16") || !strings.Contains(stdout, "sync would refuse this") {
		t.Errorf("dry run: exit %d\n%.2000s", code, stdout)
	}

	code, _, stderr = run(t, "sync", "--config", emptyCfg, "--allow-mass-prune")
	files := gittest.Files(t, repo, "main")
	if code != ExitOK || len(files) != 1 || files["waldur/.waldur-gitops"] == "" {
		t.Errorf("--allow-mass-prune: exit %d, %d files left\n%s", code, len(files), stderr)
	}
}

// emptyOfferings is the example's offerings with nothing in them.
func emptyOfferings(t *testing.T) *waldur.State {
	t.Helper()
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	st := &waldur.State{}
	for _, o := range snap.Offerings {
		st.Offerings = append(st.Offerings, waldur.OfferingState{Name: o.Name, OfferingUUID: o.OfferingUUID})
	}
	return st
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSyncFailures: a failed Waldur read, wrong git credentials, a missing
// git.url and a partial render each end with their exit code; only the partial
// render commits.
func TestSyncFailures(t *testing.T) {
	partial := editSnapshot(t, func(s *waldur.Snapshot) {
		_, r := resource(s, genomics)
		r.Slug = "Not_Valid"
	})
	tests := []struct {
		name       string
		setup      func(t *testing.T, srv *gittest.Server, cfg string) []string
		code       int
		stderr     string
		wantCommit bool
	}{
		{"Waldur fails", func(t *testing.T, srv *gittest.Server, cfg string) []string {
			w, wcfg := serveExample(t)
			w.FailNext(1000, 403)
			return []string{"sync", "--config", withGit(t, wcfg, srv, srv.RepoURL("tenants.git"))}
		}, ExitWaldur, "403", false},
		{"wrong git password", func(t *testing.T, srv *gittest.Server, cfg string) []string {
			t.Setenv(gitPasswordEnv, "wrong-password-9876")
			return []string{"sync", "--config", cfg, "--snapshot", exampleSnapshot}
		}, ExitGit, "authentication required", false},
		{"no git.url", func(t *testing.T, srv *gittest.Server, cfg string) []string {
			b := mustRead(t, cfg)
			writeFile(t, cfg, regexp.MustCompile(`(?m)^  url: .*\n`).ReplaceAllString(string(b), ""))
			return []string{"sync", "--config", cfg, "--snapshot", exampleSnapshot}
		}, ExitUsage, "git.url is not set", false},
		{"partial render", func(t *testing.T, srv *gittest.Server, cfg string) []string {
			return []string{"sync", "--config", cfg, "--snapshot", partial}
		}, ExitPartial, `skipped ut-namespaces/3cfe5210e4db306c7aabcd8103b2ad22`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, repo, url := gitRepo(t)
			head := gittest.Commit(t, repo, "main", map[string]string{"README.md": "x\n"}, "seed")
			cfg := withGit(t, exampleConfig, srv, url)
			args := tc.setup(t, srv, cfg)
			code, stdout, stderr := run(t, args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, want %d; stderr lacks %q?\n%s", code, tc.code, tc.stderr, stderr)
			}
			if moved := gittest.Head(t, repo, "main") != head; moved != tc.wantCommit {
				t.Errorf("a commit was made: %v, want %v", moved, tc.wantCommit)
			}
			for _, out := range []string{stdout, stderr} {
				if strings.Contains(out, srv.Password()) || strings.Contains(out, "wrong-password-9876") {
					t.Error("a password is printed")
				}
			}
		})
	}
}

func TestSyncFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad sync output", []string{"sync", "--config", exampleConfig, "--output", "xml"}, "--output must be text, json or yaml"},
		{"dry run with --out", []string{"render", "--config", exampleConfig, "--dry-run", "--out", "x"}, "drop --out"},
		{"allow-mass-prune without dry run", []string{"render", "--config", exampleConfig, "--allow-mass-prune"}, "only goes with --dry-run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d\n%s", code, stderr)
			}
		})
	}
}
