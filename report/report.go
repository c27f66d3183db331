// Package report builds the run report every command that changes something
// leaves behind: per-stage durations, API calls and errors, the change set, the
// commit made (if any), as JSON for machines and as a one-screen summary.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/atomicfile"
	"github.com/waldur/waldur-gitops/internal/causes"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// Schema identifies the report format.
const Schema = "waldur-gitops/run-report/v1"

// Run is the report of one run.
type Run struct {
	Schema   string    `json:"schema"`
	Version  string    `json:"version"`
	Command  string    `json:"command"`
	DryRun   bool      `json:"dry_run"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Stages are in the order they ran.
	Stages []Stage `json:"stages"`
	// Commit is the SHA of the commit this run pushed, empty when none.
	Commit string `json:"commit,omitempty"`
	// ReviewBranches are the review branches open after the run, whose
	// changes wait for a person to merge them; omitted when none.
	ReviewBranches []ReviewBranch `json:"review_branches,omitempty"`
	// Capacity is every capacity pool's account, one line per resource
	// (the capacity stage); omitted when no offering has a capacity section.
	Capacity []PoolLine `json:"capacity,omitempty"`
	// Counts are the numbers of entries per stage and action.
	Counts map[string]map[changeset.Action]int `json:"counts"`
	// Changes lists every entry, skipped resources included.
	Changes []changeset.Entry `json:"changes"`
	// Stopped is set when the run was cut short by its deadline or a
	// signal: the run is incomplete, and the next run continues from what
	// it finished. Omitted for a run that ran to its end.
	Stopped *Stop `json:"stopped,omitempty"`
	// Offboarding lists the offering users Waldur asked to delete that the
	// run worked on (claimed, proved, reported, or left alone), sorted by
	// offering and user; omitted when none.
	Offboarding []Offboard `json:"offboarding,omitempty"`
	// ExitCode is the process exit code the run ends with.
	ExitCode int `json:"exit_code"`
	// ReportFile is the file this report was written to, set once it has
	// been; the summary points to it for what it has no room for. It is not
	// part of the JSON.
	ReportFile string `json:"-"`
}

// PoolLine is a capacity pool's account of one resource, in the
// resource's base unit (cores, bytes, devices).
type PoolLine struct {
	Pool string `json:"pool"`
	// Cluster names the kubeconfig its Nodes were read through ("" when
	// every total is fixed); Nodes is how many count.
	Cluster  string `json:"cluster,omitempty"`
	Nodes    int    `json:"nodes,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Allocatable is the total; Allocatable × Overcommit may be sold.
	Allocatable float64 `json:"allocatable"`
	Overcommit  float64 `json:"overcommit"`
	// Committed is what the rendered quotas reserve, Waiting what the
	// orders left waiting would add, Free what is left to sell.
	Committed float64 `json:"committed"`
	Waiting   float64 `json:"requested_by_waiting"`
	Free      float64 `json:"free"`
	// Error is why the pool's cluster could not be read (no other field
	// but Pool and Cluster is set then).
	Error string `json:"error,omitempty"`
}

// ReviewBranch is one open review branch.
type ReviewBranch struct {
	// Name is the branch, waldur-gitops/review/<digest>.
	Name string `json:"name"`
	// Commit is its tip; Opened the tip's commit time (omitted when unknown).
	Commit string    `json:"commit"`
	Opened time.Time `json:"opened,omitzero"`
}

// Offboard is one offering user in the deletion workflow, as the run left
// them.
type Offboard struct {
	// Offering is the offering's config name; OfferingUser the offering
	// user's UUID; Username the offering username.
	Offering     string `json:"offering"`
	OfferingUser string `json:"offering_user"`
	Username     string `json:"username,omitempty"`
	// State is the user's state in Waldur after the run (in a dry run: what
	// it would be): Requested deletion (claim refused or failed), Deleting,
	// Deleted or Error deleting.
	State string `json:"state"`
	// Cause says why a user is not Deleted yet; Reason says it for people.
	Cause  changeset.Cause `json:"cause,omitempty"`
	Reason string          `json:"reason,omitempty"`
	// RequestedAt is when the tool first saw the request (omitted when
	// unknown); ClaimedAt when this process claimed it (omitted when an
	// earlier process did).
	RequestedAt time.Time `json:"requested_at,omitzero"`
	ClaimedAt   time.Time `json:"claimed_at,omitzero"`
	// Commit is the commit of the GitOps repository that holds the removal
	// (GitOps mode); Verified says where the removal was seen in effect:
	// "applied" (apply), "cluster" (GitOps: the cluster's objects no
	// longer name the user), "branch" (the commit is on the branch, not
	// verified at the cluster).
	Commit   string `json:"commit,omitempty"`
	Verified string `json:"verified,omitempty"`
	// AccessEndedAt is when the user's access ended: when the removal was
	// seen in effect, plus the realm's access-token lifespan (tokens issued
	// before stay valid until they expire). Set once the user is Deleted.
	AccessEndedAt time.Time `json:"access_ended_at,omitzero"`
}

// Stop says why and where a run was cut short, what it had finished and
// what it left for the next run.
type Stop struct {
	// By is "deadline", "interrupt" or "lease" (serve's replica lost its
	// leader Lease).
	By string `json:"by"`
	// Signal names the signal of an interrupt (SIGINT, SIGTERM).
	Signal string `json:"signal,omitempty"`
	// TimeoutSeconds is the deadline's length, for a deadline.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// During is the stage in progress when the run was stopped; empty when
	// it stopped between stages.
	During string `json:"during,omitempty"`
	// Done says what had taken effect: the commit pushed, the apply made.
	Done string `json:"done"`
	// Pending lists the stages left unfinished (During first) or not run.
	Pending []string `json:"pending"`
}

// Line is the one line that tells a person of the stop: "interrupted
// during keycloak: commit 1a2b pushed; pending: keycloak, orders".
func (s *Stop) Line() string {
	what := "interrupted"
	switch s.By {
	case "deadline":
		what = fmt.Sprintf("deadline of %s reached", time.Duration(s.TimeoutSeconds*float64(time.Second)))
	case "lease":
		what = "leader lease lost"
	}
	if s.During != "" {
		what += " during " + s.During
	}
	pending := "nothing"
	if len(s.Pending) > 0 {
		pending = strings.Join(s.Pending, ", ")
	}
	return fmt.Sprintf("%s: %s; pending: %s", what, s.Done, pending)
}

// Stage is one stage of the pipeline.
type Stage struct {
	Name            string  `json:"name"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Calls counts API calls by kind (e.g. "resources.list"), where the stage makes any.
	Calls map[string]int `json:"calls,omitempty"`
	// Error is the stage's failure, empty on success.
	Error string `json:"error,omitempty"`
}

// New starts a report.
func New(command, version string, dryRun bool, now time.Time) *Run {
	return &Run{Schema: Schema, Command: command, Version: version, DryRun: dryRun, Started: now.UTC(), Counts: map[string]map[changeset.Action]int{}}
}

// Record runs one stage, timing it and keeping its changes, calls and error.
// The stage's error is returned unchanged.
func (r *Run) Record(name string, fn func() (changeset.Result, error)) error {
	start := time.Now()
	res, err := fn()
	cs := res.Changes
	st := Stage{Name: name, DurationSeconds: time.Since(start).Seconds(), Calls: res.Calls}
	if err != nil {
		st.Error = redact.String(err.Error())
	}
	r.Stages = append(r.Stages, st)
	r.Add(cs)
	return err
}

// Add keeps entries produced outside Record. Reasons pass the one redactor:
// they quote servers' answers.
func (r *Run) Add(cs changeset.Set) {
	for i, e := range cs.Entries {
		if e.Reason != "" {
			cs.Entries[i].Reason = redact.String(e.Reason)
		}
		if r.Counts[e.Stage] == nil {
			r.Counts[e.Stage] = map[changeset.Action]int{}
		}
		r.Counts[e.Stage][e.Action]++
	}
	r.Changes = append(r.Changes, cs.Entries...)
}

// Finish stamps the end time and exit code.
func (r *Run) Finish(exitCode int, now time.Time) {
	r.ExitCode = exitCode
	r.Finished = now.UTC()
	if r.Changes == nil {
		r.Changes = []changeset.Entry{}
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Run) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// summaryLine is a line of the summary's changes: an entry without a
// reason (text), or the sign and kind (prefix) and the subjects and reason
// of the entries it stands for.
type summaryLine struct {
	text, prefix string
	item         causes.Item
	entries      int
}

// lineText is the text of a summary line; a reason the failed stage's line
// gives already is not repeated.
func (r *Run) lineText(l summaryLine) string {
	if l.text != "" {
		return l.text
	}
	item := causes.Item{Context: l.item.Context, Message: r.saidAbove(l.item.Message)}
	return l.prefix + causes.Grouped{Item: item}.String()
}

// entryLines are the summary's lines of the changes that are not
// "unchanged", one per entry, except that the entries of one action and kind
// whose different reasons end in one cause (a login refused in each realm, a
// 401 for each offering) are one line saying it once, and a reason a failed
// stage's line gives already is not repeated.
func (r *Run) entryLines() []summaryLine {
	type kind struct {
		action changeset.Action
		kind   string
	}
	var order []kind
	grouped := map[kind][]causes.Item{}
	for _, e := range r.Changes {
		k := kind{e.Action, e.Kind}
		switch {
		case e.Action == changeset.Unchanged:
			continue
		case e.Reason == "":
			k.kind = "\x00" + e.String() // a line of its own, whatever its kind
		case grouped[k] != nil:
			grouped[k] = append(grouped[k], causes.Item{Context: e.Subject, Message: e.Reason})
			continue
		}
		order = append(order, k)
		grouped[k] = []causes.Item{{Context: e.Subject, Message: e.Reason}}
	}
	var lines []summaryLine
	for _, k := range order {
		if strings.HasPrefix(k.kind, "\x00") {
			lines = append(lines, summaryLine{text: k.kind[1:], entries: 1})
			continue
		}
		prefix := changeset.Entry{Action: k.action, Kind: k.kind}.String()
		items := grouped[k]
		for _, g := range causes.Group(items) {
			if len(g.Members) > 1 && g.Message == items[g.Members[0]].Message {
				// The same words for each (an order waiting for the
				// cluster): a statement per entry, not a shared failure.
				for _, i := range g.Members {
					lines = append(lines, summaryLine{prefix: prefix, item: items[i], entries: 1})
				}
				continue
			}
			lines = append(lines, summaryLine{prefix: prefix, item: g.Item, entries: len(g.Members)})
		}
	}
	return lines
}

// saidAbove shortens a reason that ends in a failed stage's error, which the
// stage's line says already.
func (r *Run) saidAbove(reason string) string {
	for _, st := range r.Stages {
		if st.Error == "" {
			continue
		}
		said := st.Error + "\n" + causes.Lines(st.Error)
		if t := causes.QuotedTail(reason, said); t != "" {
			if head := strings.TrimSuffix(strings.TrimSuffix(reason, t), ": "); head != "" && head != "failed" {
				return head + ": as the " + st.Name + " line above says"
			}
			return "failed, as the " + st.Name + " line above says"
		}
	}
	return reason
}

// SummaryEntries is how many changes the summary lists at most.
const SummaryEntries = 40

// WriteSummary writes the one-screen human summary: a line per stage, the
// changes that are not "unchanged" (at most SummaryEntries, then how many
// more and where to see them: the report file when one was written, else
// --output json), and the commit.
func (r *Run) WriteSummary(w io.Writer) error {
	var b strings.Builder
	mode := ""
	if r.DryRun {
		mode = " (dry run)"
	}
	fmt.Fprintf(&b, "waldur-gitops %s%s: %s\n", r.Command, mode, r.Finished.Sub(r.Started).Round(time.Millisecond))
	byStage := map[string][]changeset.Entry{} // one pass, not one copy of every entry per stage
	for _, e := range r.Changes {
		byStage[e.Stage] = append(byStage[e.Stage], e)
	}
	for _, st := range r.Stages {
		status := changeset.Set{Entries: byStage[st.Name]}.Summary()
		if st.Error != "" {
			// A cause several realms or offerings share is said once.
			status = "FAILED: " + strings.ReplaceAll(causes.Lines(st.Error), "\n", "\n"+strings.Repeat(" ", 28))
		}
		fmt.Fprintf(&b, "  %-9s %6.2fs  %s\n", st.Name, st.DurationSeconds, status)
	}
	shown, more := 0, 0
	for _, l := range r.entryLines() {
		if shown == SummaryEntries {
			more += l.entries
			continue
		}
		fmt.Fprintf(&b, "  %s\n", r.lineText(l))
		shown++
	}
	if more > 0 {
		where := "run with --output json to see them all"
		if r.ReportFile != "" {
			where = "the run report " + r.ReportFile + " lists them all"
		}
		fmt.Fprintf(&b, "  … and %d more: %s\n", more, where)
	}
	if r.Commit != "" {
		fmt.Fprintf(&b, "commit %s\n", r.Commit)
	}
	if r.Stopped != nil {
		fmt.Fprintf(&b, "incomplete, %s\n", r.Stopped.Line())
	}
	for _, rb := range r.ReviewBranches {
		age := ""
		if !rb.Opened.IsZero() {
			age = fmt.Sprintf(", open for %s", r.Finished.Sub(rb.Opened).Round(time.Minute))
		}
		fmt.Fprintf(&b, "review branch %s waits for a person to merge it%s\n", rb.Name, age)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFile writes the run report to path (atomically), if path is set, and
// notes the file in the report for the summary to point at.
func (r *Run) WriteFile(path string) error {
	if path == "" {
		return nil
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		return err
	}
	if err := atomicfile.Write(path, b.Bytes()); err != nil {
		return fmt.Errorf("write the run report: %w", err)
	}
	r.ReportFile = path
	return nil
}
