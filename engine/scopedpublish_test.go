package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/synth"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/templates"
	"github.com/waldur/waldur-gitops/waldur"
)

// scopedRig is one engine kept across runs, as serve keeps it (its render
// remembering the last, its Git publisher the last publish), beside a fresh
// engine for every run that renders and publishes in full, each on a bare
// repository of its own.
type scopedRig struct {
	cfg          config.Config
	st           *waldur.State
	tpls         map[string][]*templates.Template
	kept         *engine.Engine
	keptRepo     string
	freshRepo    string
	log          bytes.Buffer
	rng          *rand.Rand
	added        int
	scoped, full int
	refused      int
	undo         func()             // puts back what the last event changed, after a refusal
	want         publish.ScopeCause // the cause the next publish must give for a whole compare
	lastOK       bool               // the last run succeeded: the publisher remembers it
	inTree       map[string]bool    // the resources with a tenant after the last run
}

func newScopedRig(t *testing.T, seed uint64) *scopedRig {
	opts := synth.Options{Tenants: 60, Seed: seed, BackendTypes: []string{config.BackendNamespace}, DisableKeycloak: true}
	loaded, err := synth.Config(opts, "synth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := &scopedRig{cfg: *loaded.Config, st: synth.Generate(opts), rng: rand.New(rand.NewPCG(seed, 29))}
	if r.tpls, err = render.LoadTemplates(&r.cfg); err != nil {
		t.Fatal(err)
	}
	r.cfg.Git.Branch, r.cfg.Git.Path, r.cfg.Git.AuthorName, r.cfg.Git.AuthorEmail = "main", "waldur", "test", "test@example.org"
	dir := t.TempDir()
	r.keptRepo, r.freshRepo = filepath.Join(dir, "kept.git"), filepath.Join(dir, "fresh.git")
	gittest.InitBare(t, r.keptRepo, "main")
	gittest.InitBare(t, r.freshRepo, "main")
	cfg := r.cfg
	cfg.Git.URL = r.keptRepo
	log := slog.New(slog.NewJSONHandler(&r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rdr := render.New(&cfg, r.tpls).Remembering(render.NewMemory(nil)).Render
	r.kept = engine.New(engine.Seams{Source: memSource{r.st}, Publisher: &publish.Git{Config: &cfg, Log: log}}, rdr, scopedGuard, nil)
	return r
}

// scopedGuard refuses a run that takes access from a whole team of a
// project with several tenants, so that refusals are compared too.
var scopedGuard = guard.Options{MaxFraction: 0.02, MinCount: 2}

// run syncs with both engines and fails t when the pushed trees, the
// commit messages or the reports' entries differ.
func (r *scopedRig) run(t *testing.T, step string) {
	t.Helper()
	r.log.Reset()
	got := r.kept.Run(context.Background(), engine.Request{Command: "sync"})
	cfg := r.cfg
	cfg.Git.URL = r.freshRepo
	fresh := engine.New(engine.Seams{Source: memSource{r.st}, Publisher: &publish.Git{Config: &cfg}}, render.New(&cfg, r.tpls).Render, scopedGuard, nil)
	want := fresh.Run(context.Background(), engine.Request{Command: "sync"})
	if fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
		t.Fatalf("%s: error %v, a full publish: %v", step, got.Err, want.Err)
	}
	log := r.log.String()
	wasOK := r.lastOK
	r.lastOK = got.Err == nil
	if r.want != "" && wasOK && got.Err == nil && !strings.Contains(log, `"cause":"`+string(r.want)+`"`) {
		t.Fatalf("%s: the publish does not say it compared in full for %s:\n%s", step, r.want, log)
	}
	switch {
	case strings.Contains(log, `"msg":"published what changed"`):
		r.scoped++
	case strings.Contains(log, `"msg":"published in full"`):
		r.full++
	}
	if a, b := tree(t, r.keptRepo), tree(t, r.freshRepo); a != b {
		t.Fatalf("%s: pushed tree %s, a full publish's %s\n%s", step, a, b, r.log.String())
	}
	if got.Err != nil {
		r.refused++
		if undo := r.undo; undo != nil {
			r.undo, r.want = nil, ""
			undo()
			r.run(t, step+", put back")
		}
		return
	}
	if a, b := entries(t, got.Report.Changes), entries(t, want.Report.Changes); a != b {
		t.Fatalf("%s: report entries differ from a full publish's:\n%s\nwant\n%s", step, a, b)
	}
	r.inTree = map[string]bool{}
	for _, e := range got.Report.Changes {
		if e.Kind == "Tenant" && e.Action != changeset.Delete {
			r.inTree[e.Resource] = true
		}
	}
	if (got.Report.Commit == "") != (want.Report.Commit == "") {
		t.Fatalf("%s: commit %q, a full publish's %q", step, got.Report.Commit, want.Report.Commit)
	}
	if got.Report.Commit != "" && gittest.Message(t, r.keptRepo, got.Report.Commit) != gittest.Message(t, r.freshRepo, want.Report.Commit) {
		t.Fatalf("%s: commit messages differ", step)
	}
}

func tree(t *testing.T, repo string) string {
	return strings.TrimSpace(gittest.Git(t, repo, "rev-parse", "main^{tree}"))
}

// entries is the report's entries but the commit's (whose subject names
// the commit), as JSON.
func entries(t *testing.T, es []changeset.Entry) string {
	var keep []changeset.Entry
	for _, e := range es {
		if e.Kind != "Commit" {
			keep = append(keep, e)
		}
	}
	b, err := json.MarshalIndent(keep, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// event changes the state as one random Waldur event would, or the branch
// as another writer would; it says what it did.
func (r *scopedRig) event(t *testing.T) string {
	r.undo, r.want = nil, ""
	o := &r.st.Offerings[r.rng.IntN(len(r.st.Offerings))]
	if len(o.Resources) == 0 {
		return "nothing"
	}
	res := &o.Resources[r.rng.IntN(len(o.Resources))]
	switch k := r.rng.IntN(10); {
	case k < 4:
		for c := range res.Limits {
			res.Limits[c] = waldur.Amount(fmt.Sprint(1 + r.rng.IntN(64)))
		}
		return "limits of " + string(res.UUID)
	case k < 6:
		n := *res
		r.added++
		n.UUID = waldur.UUID(fmt.Sprintf("%032x", r.rng.Uint64()))
		n.Name, n.Slug, n.BackendID = fmt.Sprintf("added-%d", r.added), fmt.Sprintf("added-%d", r.added), ""
		n.Limits = maps.Clone(res.Limits)
		o.Resources = append(o.Resources, n)
		return "new resource " + string(n.UUID)
	case k < 7:
		i := r.rng.IntN(len(o.Resources))
		id := o.Resources[i].UUID
		o.Resources = append(o.Resources[:i:i], o.Resources[i+1:]...)
		if r.inTree[string(id)] {
			r.want = publish.ScopeTenantsRemoved
		}
		return "resource gone " + string(id)
	case k < 8:
		team := o.Teams[res.ProjectUUID]
		if len(team) == 0 {
			return "nothing"
		}
		o.Teams[res.ProjectUUID] = team[1:]
		return "a member leaves project " + string(res.ProjectUUID)
	case k < 9:
		files := map[string]string{"README.md": fmt.Sprintf("edited by hand %d\n", r.rng.IntN(1000))}
		if r.rng.IntN(2) == 0 { // a tenant's file, which the next publish must put back
			paths := slices.Sorted(maps.Keys(gittest.Files(t, r.keptRepo, "main")))
			files = map[string]string{paths[r.rng.IntN(len(paths))]: "edited by hand\n"}
		}
		gittest.Commit(t, r.keptRepo, "main", files, "hand edit")
		gittest.Commit(t, r.freshRepo, "main", files, "hand edit")
		r.want = publish.ScopeTipMoved
		return "hand edit"
	case k < 10:
		if len(o.Teams[res.ProjectUUID]) == 0 {
			return "nothing"
		}
		team := o.Teams[res.ProjectUUID]
		o.Teams[res.ProjectUUID] = nil
		r.undo = func() { o.Teams[res.ProjectUUID] = team }
		return "the team of project " + string(res.ProjectUUID) + " leaves"
	}
	return "nothing"
}

// TestScopedPublishMatchesFull: over seeded random events, the engine kept
// across runs, which publishes only the tenants its render re-rendered,
// pushes the same tree with the same commit message and reports the same
// entries as a fresh engine that renders and compares everything; and it
// does take the scoped path.
func TestScopedPublishMatchesFull(t *testing.T) {
	for _, seed := range []uint64{1, 29, 2026} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := newScopedRig(t, seed)
			r.run(t, "first run")
			for i := range 30 {
				what := r.event(t)
				r.run(t, fmt.Sprintf("event %d (%s)", i, what))
			}
			t.Logf("scoped publishes %d, full %d, refused %d", r.scoped, r.full, r.refused)
			if r.scoped < 10 || r.full < 2 {
				t.Fatalf("scoped publishes %d, full %d: the events did not exercise both", r.scoped, r.full)
			}
		})
	}
}
