package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/apply"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// syncFlags are the flags of sync, and those render --dry-run shares with it.
type syncFlags struct {
	snapshot       string
	dryRun         bool
	allowMassPrune bool
	json           bool
	validateServer bool
	kubeconfig     string
	// quiet (serve) logs the summary and the skipped resources instead of
	// printing them.
	quiet bool
}

func init() { register((*app).syncCommand) }

func (a *app) syncCommand() *cobra.Command {
	var f syncFlags
	var output string
	cmd := &cobra.Command{
		Use:   "sync --config C [--snapshot state.json] [--dry-run] [--allow-mass-prune]",
		Short: "Render Waldur state and commit it to the GitOps repository",
		Long: `Sync runs the whole cycle: read Waldur (or a snapshot), approve the
pending-provider orders (auto_approve), render, optionally validate every
object with a server-side dry run (--validate-server), check the mass-deletion
guard, commit the rendered tree to git.path on git.branch of git.url and push,
reconcile the Keycloak groups, and finally mark the executing orders whose
effect is now in Git done (or erred). An unchanged tree makes no commit. A push
that loses a race with another writer is redone on the new tip
(git.push_retries times); nothing is ever force-pushed. A Keycloak failure
fails the run but never reverts the commit, and the orders still advance.

The run report (stages, durations, counts, the commit) goes to the config's
report file, and to stdout as JSON with --output json; otherwise a summary is
printed. With --dry-run nothing is committed or written: the output is that of
render --dry-run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "text":
			case "json":
				f.json = true
			default:
				return withCode(ExitUsage, fmt.Errorf("--output must be text or json, got %q", output))
			}
			return a.runSync(cmd.Context(), "sync", f)
		},
	}
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "read Waldur state from this snapshot file instead of the API")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would be committed (exit 1 if anything), change nothing")
	cmd.Flags().BoolVar(&f.allowMassPrune, "allow-mass-prune", false, "let this run remove more tenants than deletion_guard allows")
	cmd.Flags().StringVar(&output, "output", "text", "output format: text (human) or json (the run report, or the change set with --dry-run)")
	cmd.Flags().BoolVar(&f.validateServer, "validate-server", false, "server-side dry-run every rendered object before committing; a rejected object blocks the commit")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --validate-server (default: the config's kubeconfig keys, then client-go's rules)")
	return cmd
}

// syncRun is what one sync, or one dry run, carries from stage to stage.
type syncRun struct {
	a      *app
	cfg    *config.Loaded
	flags  syncFlags
	state  *waldur.State
	result *render.Result
	repo   *gitsync.Repo
	// writer is repo, fetching in the background from the start of the run.
	writer gitsync.Writer

	// Filled by the git stage: the owned directory in the repository and the
	// tree planned for it, the tenant changes between them, and the commit.
	prev, next render.Tree
	tenants    changeset.Set
	commit     string
	// guardErr is the deletion guard's refusal in a dry run, which goes on to
	// show the diff.
	guardErr error
}

// syncStage is one step of the cycle. A stage returns its change-set entries
// (with its own Stage name), its API call counts and an error carrying the exit
// code; in a dry run it must change nothing and report what it would do.
type syncStage struct {
	name string
	run  func(r *syncRun, ctx context.Context) (changeset.Set, map[string]int, error)
	// goOn lets the stages after this one run when it fails: a Keycloak outage
	// must not keep the Waldur orders of a pushed commit from advancing.
	goOn bool
}

// syncStages run in order; the first failure ends the run, unless the stage
// says to go on.
var syncStages = []syncStage{
	{name: "waldur", run: (*syncRun).readWaldur},
	{name: "approve", run: (*syncRun).orderApproval},
	{name: "render", run: (*syncRun).render},
	{name: "validate", run: (*syncRun).validateServer},
	{name: "git", run: (*syncRun).git},
	{name: "keycloak", run: (*syncRun).keycloak, goOn: true},
	{name: "orders", run: (*syncRun).orderFeedback},
}

// orderApproval approves (or rejects) pending-provider orders before the
// render that is committed, so an approved Create lands in this run's commit.
// A snapshot says nothing about Waldur's orders now, so it is skipped then.
func (r *syncRun) orderApproval(ctx context.Context) (changeset.Set, map[string]int, error) {
	if r.flags.snapshot != "" {
		return changeset.Set{}, nil, nil
	}
	return approveOrders(ctx, r.cfg.Config, r.a.log, r.state, r.flags.dryRun)
}

// validateServer server-side dry-runs every rendered object when
// --validate-server is set; a rejected object blocks the commit.
func (r *syncRun) validateServer(ctx context.Context) (changeset.Set, map[string]int, error) {
	if !r.flags.validateServer {
		return changeset.Set{}, nil, nil
	}
	res, err := apply.ValidateServer(ctx, r.cfg.Config, r.result, apply.Options{Kubeconfig: r.flags.kubeconfig, Log: r.a.log})
	if res == nil {
		return changeset.Set{}, nil, withCode(ExitApply, err)
	}
	return res.Changes, res.Calls, withCode(ExitApply, err)
}

// keycloak reconciles the Keycloak groups after the push: groups of tenants
// still in Git are kept, so a group goes only once its manifests are gone.
func (r *syncRun) keycloak(ctx context.Context) (changeset.Set, map[string]int, error) {
	return r.a.keycloakStage(ctx, r.cfg.Config, r.result, keycloakRun{dryRun: r.flags.dryRun, allowMassPrune: r.flags.allowMassPrune, inGit: r.next})
}

// orderFeedback marks the executing orders whose effect is now in Git done (or
// erred), after the push. A snapshot run leaves Waldur alone.
func (r *syncRun) orderFeedback(ctx context.Context) (changeset.Set, map[string]int, error) {
	if r.flags.snapshot != "" {
		return changeset.Set{}, nil, nil
	}
	return finishOrders(ctx, r.cfg.Config, r.a.log, r.state, r.result, r.next, r.flags.dryRun)
}

// runSync runs one sync (or dry run) and, unless it is a dry run, pushes its
// metrics to the Pushgateway when the config names one.
func (a *app) runSync(ctx context.Context, command string, f syncFlags) error {
	ctx, tally := waldur.WithTally(ctx)
	out, err := a.syncCycle(ctx, command, f)
	if out != nil && out.rep != nil && !f.dryRun {
		a.pushMetrics(ctx, out.cfg, out.rep, tally.Stats())
	}
	return err
}

// syncOutcome is what one sync cycle leaves: the config it ran with and its
// report (nil for a dry run).
type syncOutcome struct {
	cfg *config.Loaded
	rep *report.Run
}

// syncCycle runs the stages of one sync. The outcome is nil when the config
// could not be loaded.
func (a *app) syncCycle(ctx context.Context, command string, f syncFlags) (*syncOutcome, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	out := &syncOutcome{cfg: cfg}
	r := &syncRun{a: a, cfg: cfg, flags: f}
	rep := report.New(command, version.String(), f.dryRun, time.Now())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if wait := r.prefetch(ctx); wait != nil {
		defer wait()
		defer cancel() // runs before wait
	}
	var runErr error
	for _, st := range syncStages {
		err := rep.Record(st.name, func() (changeset.Set, map[string]int, error) { return st.run(r, ctx) })
		if err != nil && runErr == nil {
			runErr = err
		}
		if err != nil && !st.goOn {
			break
		}
	}
	if runErr == nil && r.result != nil && len(r.result.Skipped) > 0 {
		for _, e := range r.result.Changes.ByAction(changeset.Skip) {
			if f.quiet {
				a.log.Warn("skipped", "subject", e.Subject, "reason", e.Reason)
			} else {
				fmt.Fprintf(a.stderr, "skipped %s: %s\n", e.Subject, e.Reason)
			}
		}
		runErr = withCode(ExitPartial, fmt.Errorf("%d resource(s) skipped, the rest synced", len(r.result.Skipped)))
	}
	if f.dryRun {
		return out, r.finishDryRun(rep, runErr)
	}
	rep.Commit = r.commit
	rep.Finish(exitCode(runErr), time.Now())
	if err := r.writeReport(rep); err != nil && runErr == nil {
		runErr = withCode(ExitRender, err)
		// The report file holds the code before this failure; the metrics
		// and the process exit tell the truth.
		rep.ExitCode = ExitRender
	}
	out.rep = rep
	return out, runErr
}

// exitCode is the code Main will exit with for err.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitUsage
}

// readWaldur reads the Waldur state. A failed or partial read ends the run
// here, long before anything could be committed.
func (r *syncRun) readWaldur(ctx context.Context) (changeset.Set, map[string]int, error) {
	st, err := readState(ctx, r.cfg.Config, r.flags.snapshot, r.a.log)
	r.state = st
	return changeset.Set{}, nil, err
}

func (r *syncRun) render(context.Context) (changeset.Set, map[string]int, error) {
	tpls, err := render.LoadTemplates(r.cfg.Config)
	if err != nil {
		return changeset.Set{}, nil, withCode(ExitUsage, err)
	}
	start := time.Now()
	res, err := render.New(r.cfg.Config, tpls).Render(r.state)
	if err != nil {
		return changeset.Set{}, nil, withCode(ExitUsage, err)
	}
	r.a.log.Info("rendered", "tenants", len(res.Tenants), "groups", len(res.Groups), "skipped", len(res.Skipped), "duration", time.Since(start).Round(time.Millisecond).String())
	r.result = res
	return res.Changes, nil, nil
}

// prefetch opens the repository and starts fetching it, so that the Git
// round trip overlaps with reading Waldur and rendering. It returns the
// function that waits for the fetch to end, nil when the repository cannot be
// opened (the git stage reports why).
func (r *syncRun) prefetch(ctx context.Context) func() {
	repo, err := r.openRepo()
	if err != nil {
		return nil
	}
	var wait func()
	r.repo = repo
	r.writer, wait = gitsync.Prefetch(ctx, repo)
	return wait
}

func (r *syncRun) openRepo() (*gitsync.Repo, error) {
	opts, err := gitsync.OptionsFromConfig(r.cfg.Git)
	if err != nil {
		return nil, err
	}
	opts.Log = r.a.log
	return gitsync.Open(opts)
}

// git compares the rendered tree with the repository and, unless this is a dry
// run, commits and pushes it.
func (r *syncRun) git(ctx context.Context) (changeset.Set, map[string]int, error) {
	if r.writer == nil {
		repo, err := r.openRepo()
		if err != nil {
			return changeset.Set{}, nil, withCode(ExitUsage, err)
		}
		r.repo, r.writer = repo, repo
	}
	if r.flags.dryRun {
		return r.gitDryRun(ctx)
	}
	res, err := gitsync.Sync(ctx, r.writer, r.plan, r.cfg.Git.Retries())
	calls := map[string]int{"fetch": res.Attempts, "push": res.Attempts}
	cs := r.tenants
	if err != nil {
		// Sync fails in the plan only when the deletion guard refuses.
		if errors.As(err, new(*guard.Error)) {
			return cs, calls, withCode(ExitGuard, err)
		}
		return cs, calls, withCode(ExitGit, err)
	}
	e := changeset.Entry{Stage: "git", Kind: "Commit", Subject: r.cfg.Git.Branch + " " + res.Commit, Action: changeset.Create}
	if res.Commit == "" {
		e.Subject, e.Action = r.cfg.Git.Branch+" "+res.Parent, changeset.Unchanged
		calls["push"] = res.Attempts - 1
	}
	cs.Add(e)
	r.commit = res.Commit
	return cs, calls, nil
}

// plan builds the tree to commit on the files the repository holds now, and
// checks the deletion guard against them. Sync calls it again after a lost
// race, so the change set always describes the commit actually made.
func (r *syncRun) plan(cur render.Tree) (render.Tree, string, error) {
	next := r.layout().Apply(r.result.Tree(cur))
	cs := r.result.Compare(cur, next)
	r.prev, r.next, r.tenants = cur, next, cs
	existing := 0
	for _, e := range cs.Entries {
		if e.Action != changeset.Create {
			existing++
		}
	}
	opts := guard.Options{MaxFraction: *r.cfg.DeletionGuard.MaxFraction, MinCount: *r.cfg.DeletionGuard.MinCount, Allow: r.flags.allowMassPrune}
	if err := guard.Check(cs, existing, opts); err != nil {
		return nil, "", err
	}
	msg := cs
	msg.Merge(r.result.Changes)
	return next, gitsync.Message(msg), nil
}

// layout is the Flux shard layer the config asks for.
func (r *syncRun) layout() gitsync.FluxLayout {
	l := gitsync.FluxLayout{Shards: r.cfg.Git.FluxShards, RepoPath: r.cfg.Git.Path}
	for i := range r.cfg.Offerings {
		o := &r.cfg.Offerings[i]
		targets := []string{render.TargetCluster}
		if o.BackendType == config.BackendRancher {
			targets = []string{render.TargetManagement, render.TargetDownstream}
		}
		for _, t := range targets {
			l.Targets = append(l.Targets, gitsync.FluxTarget{Offering: o.DirName(), Target: t})
		}
	}
	return l
}

// gitDryRun fetches the branch and plans the tree on it, committing nothing.
func (r *syncRun) gitDryRun(ctx context.Context) (changeset.Set, map[string]int, error) {
	calls := map[string]int{"fetch": 1}
	if err := r.writer.Fetch(ctx); err != nil {
		return changeset.Set{}, calls, withCode(ExitGit, err)
	}
	cur, err := r.writer.Current(ctx)
	if err != nil {
		return changeset.Set{}, calls, withCode(ExitGit, err)
	}
	if _, _, err := r.plan(cur); err != nil {
		// The plan fails only when the deletion guard refuses.
		r.guardErr = withCode(ExitGuard, err)
	}
	cs := r.tenants
	e := changeset.Entry{Stage: "git", Kind: "Commit", Subject: r.cfg.Git.Branch + " on " + r.repo.Tip(), Action: changeset.Unchanged}
	if r.repo.Tip() == "" {
		e.Subject = r.cfg.Git.Branch + " (a new branch)"
	}
	if len(gitsync.ChangedFiles(r.prev, r.next)) > 0 {
		e.Action = changeset.Create
	}
	cs.Add(e)
	return cs, calls, nil
}

// finishDryRun prints the plan and picks the exit code: an error (2 and up)
// first, then 1 when anything would change, else 0.
func (r *syncRun) finishDryRun(rep *report.Run, runErr error) error {
	if r.next == nil {
		// The git stage did not get to plan: nothing to show.
		return runErr
	}
	changes := changeset.Set{Entries: rep.Changes}
	if err := r.printPlan(changes); err != nil {
		return withCode(ExitRender, err)
	}
	switch {
	case r.guardErr != nil:
		return r.guardErr
	case runErr != nil:
		return runErr
	case changes.Changed():
		return withCode(ExitDiff, errors.New("differences found"))
	}
	return nil
}

// planJSON is the machine output of a dry run.
type planJSON struct {
	DryRun     bool                                `json:"dry_run"`
	Repository string                              `json:"repository"`
	Branch     string                              `json:"branch"`
	Path       string                              `json:"path"`
	Base       string                              `json:"base,omitempty"`
	Changed    bool                                `json:"changed"`
	Files      []string                            `json:"files"`
	Guard      string                              `json:"guard,omitempty"`
	Summary    map[string]map[changeset.Action]int `json:"summary"`
	Changes    []changeset.Entry                   `json:"changes"`
}

// printPlan prints what a sync would do: for people the unified diff of the
// repository and a per-stage list of changes; for machines the change set. It
// takes the change set of every stage, so that stages other than git (Keycloak)
// show their operations in the same plan.
func (r *syncRun) printPlan(changes changeset.Set) error {
	// Stages in the order they ran, entries sorted within each.
	var stages []string
	for _, e := range changes.Entries {
		if !slices.Contains(stages, e.Stage) {
			stages = append(stages, e.Stage)
		}
	}
	slices.SortStableFunc(changes.Entries, func(a, b changeset.Entry) int {
		return cmp.Or(cmp.Compare(slices.Index(stages, a.Stage), slices.Index(stages, b.Stage)),
			cmp.Compare(a.Subject, b.Subject), cmp.Compare(a.Kind, b.Kind))
	})
	files := gitsync.ChangedFiles(r.prev, r.next)
	if r.flags.json {
		p := planJSON{DryRun: true, Repository: r.repo.URL(), Branch: r.cfg.Git.Branch, Path: r.cfg.Git.Path, Base: r.repo.Tip(),
			Changed: changes.Changed(), Files: files, Summary: map[string]map[changeset.Action]int{}, Changes: changes.Entries}
		if p.Files == nil {
			p.Files = []string{}
		}
		if p.Changes == nil {
			p.Changes = []changeset.Entry{}
		}
		if r.guardErr != nil {
			p.Guard = r.guardErr.Error()
		}
		for _, e := range changes.Entries {
			if p.Summary[e.Stage] == nil {
				p.Summary[e.Stage] = map[changeset.Action]int{}
			}
			p.Summary[e.Stage][e.Action]++
		}
		enc := json.NewEncoder(r.a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	w := r.a.stdout
	if err := gitsync.WriteDiff(w, r.cfg.Git.Path, r.prev, r.next, isTerminal(w)); err != nil {
		return err
	}
	if len(files) > 0 {
		fmt.Fprintln(w)
	}
	for _, stage := range stages {
		sub := changeset.Set{Entries: changes.Filter(func(e changeset.Entry) bool { return e.Stage == stage })}
		for _, e := range sub.Entries {
			if e.Action != changeset.Unchanged {
				fmt.Fprintf(w, "%s\n", e)
			}
		}
	}
	for _, stage := range stages {
		sub := changeset.Set{Entries: changes.Filter(func(e changeset.Entry) bool { return e.Stage == stage })}
		fmt.Fprintf(w, "%-9s %s\n", stage+":", sub.Summary())
	}
	where := fmt.Sprintf("%s %s:%s", r.repo.URL(), r.cfg.Git.Branch, r.cfg.Git.Path)
	if len(files) == 0 {
		fmt.Fprintf(w, "%s: no changes\n", where)
	} else {
		fmt.Fprintf(w, "%s: %d file(s) would change\n", where, len(files))
	}
	if r.guardErr != nil {
		fmt.Fprintf(w, "sync would refuse this: %v\n", r.guardErr)
	}
	return nil
}

// writeReport writes the run report to the config's report file and prints
// it: as JSON with --output json, as a summary otherwise.
func (r *syncRun) writeReport(rep *report.Run) error {
	if r.cfg.Report != "" {
		var b strings.Builder
		if err := rep.WriteJSON(&b); err != nil {
			return err
		}
		if err := writeFileAtomic(r.cfg.Report, []byte(b.String())); err != nil {
			return fmt.Errorf("write the run report: %w", err)
		}
	}
	switch {
	case r.flags.quiet:
		return nil
	case r.flags.json:
		return rep.WriteJSON(r.a.stdout)
	}
	return rep.WriteSummary(r.a.stdout)
}

// isTerminal reports whether w is a terminal that takes colours.
func isTerminal(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
