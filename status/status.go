// Package status builds the picture an operator looks at when something is
// wrong: the last runs, the tenants per offering, what waits and why (each
// entry with its typed cause), the deletion guard's last refusal, the event
// consumer and the leadership. serve's status page and /status.json and the
// status command show it; it is built from run reports, never from Waldur.
package status

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/capacity"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/offboard"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// Schema identifies the JSON of a Status.
const Schema = "waldur-gitops/status/v1"

// Leadership says whether this replica runs cycles and, when it stands by,
// which replica does.
type Leadership struct {
	// Leader is true for the replica that runs cycles (and for a serve
	// that does not elect: it is its own leader).
	Leader bool `json:"leader"`
	// Elected is true when serve elects a leader among replicas.
	Elected bool `json:"elected"`
	// Identity is this replica's, LeaderIdentity the leader's (when known).
	Identity       string `json:"identity,omitempty"`
	LeaderIdentity string `json:"leader_identity,omitempty"`
	// LeaderURL is the leader's status page, for a standby to link to.
	LeaderURL string `json:"leader_url,omitempty"`
}

// SingleReplica is the leadership of a serve without election: it leads.
func SingleReplica() Leadership { return Leadership{Leader: true} }

// Serving is the state of a running serve: whether a run is going on.
type Serving struct {
	// Health is /healthz's status: starting, ok, failing or stale.
	Health      string     `json:"health"`
	Since       time.Time  `json:"serving_since"`
	Running     bool       `json:"running"`
	RunStarted  *time.Time `json:"run_started,omitempty"`
	LastSuccess *time.Time `json:"last_success,omitempty"`
}

// Status is the whole picture.
type Status struct {
	Schema    string    `json:"schema"`
	Generated time.Time `json:"generated"`
	// Source is "serve" or the run report file the picture was read from.
	Source string `json:"source"`
	// Names is true when subjects that may name people (Keycloak members)
	// and the reasons of entries are shown; else they are counted only.
	Names      bool        `json:"names"`
	Leadership *Leadership `json:"leadership,omitempty"`
	Serving    *Serving    `json:"serving,omitempty"`
	// Runs are newest first.
	Runs    []Run     `json:"runs"`
	Tenants []Tenants `json:"tenants"`
	// OrdersWaiting, QuotaHeld, MembersWaiting, Offboarding and Held are
	// the last run's skipped, held, waiting and kept entries, each with its
	// cause: Held has those no other list takes.
	OrdersWaiting  []Item   `json:"orders_waiting"`
	ReviewBranches []Branch `json:"review_branches"`
	QuotaHeld      []Item   `json:"quota_held"`
	MembersWaiting []Item   `json:"members_waiting"`
	Offboarding    []Item   `json:"offboarding"`
	Held           []Item   `json:"held"`
	GuardRefusal   *Refusal `json:"guard_refusal,omitempty"`
	// Capacity is every capacity pool's account by resource, as the last
	// run that reached the capacity stage left it.
	Capacity []Pool                 `json:"capacity,omitempty"`
	Events   []events.OfferingState `json:"events,omitempty"`
	Detail   *RunEntry              `json:"detail,omitempty"`
}

// Run is one run of the list.
type Run struct {
	ID              int       `json:"id"`
	Command         string    `json:"command"`
	Started         time.Time `json:"started"`
	Finished        time.Time `json:"finished"`
	DurationSeconds float64   `json:"duration_seconds"`
	ExitCode        int       `json:"exit_code"`
	// Result is ok, partial or failed.
	Result     string  `json:"result"`
	Commit     string  `json:"commit,omitempty"`
	CommitLink string  `json:"commit_link,omitempty"`
	Stages     []Stage `json:"stages"`
	// Stopped says why and where a run was cut short.
	Stopped string `json:"stopped,omitempty"`
}

// Stage is one stage of a run: its duration, its changes as counts
// ("+1 ~2 =7 !1") and its failure.
type Stage struct {
	Name            string  `json:"name"`
	DurationSeconds float64 `json:"duration_seconds"`
	Changes         string  `json:"changes"`
	Error           string  `json:"error,omitempty"`
}

// Tenants counts the tenants of one offering.
type Tenants struct {
	Offering string `json:"offering"`
	Backend  string `json:"backend,omitempty"`
	Tenants  int    `json:"tenants"`
}

// Item is an entry with its cause, or, when names are not shown and the
// entries may name people, how many entries share a stage, kind, offering
// and cause.
type Item struct {
	Stage    string          `json:"stage"`
	Kind     string          `json:"kind"`
	Subject  string          `json:"subject,omitempty"`
	Offering string          `json:"offering,omitempty"`
	Action   string          `json:"action"`
	Cause    changeset.Cause `json:"cause,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Count    int             `json:"count"`
	// Since is when the subject began to wait (an order's creation).
	Since time.Time `json:"since,omitzero"`
}

// Pool is a capacity pool's account of one resource, its quantities as
// Kubernetes writes them; Error, for a pool whose cluster could not be
// read, stands for the rest.
type Pool struct {
	Pool        string `json:"pool"`
	Resource    string `json:"resource,omitempty"`
	Allocatable string `json:"allocatable,omitempty"`
	Overcommit  string `json:"overcommit,omitempty"`
	Committed   string `json:"committed,omitempty"`
	Waiting     string `json:"requested_by_waiting,omitempty"`
	Free        string `json:"free,omitempty"`
	// Sold is committed ÷ (allocatable × overcommit), in percent.
	Sold  int    `json:"sold_percent"`
	Error string `json:"error,omitempty"`
}

// pools shows a run's capacity lines.
func pools(lines []report.PoolLine, names bool) []Pool {
	var out []Pool
	for _, l := range lines {
		if l.Error != "" {
			out = append(out, Pool{Pool: l.Pool, Error: scrub(l.Error, names)})
			continue
		}
		p := Pool{Pool: l.Pool, Resource: l.Resource, Allocatable: capacity.Format(l.Resource, l.Allocatable),
			Overcommit: strconv.FormatFloat(l.Overcommit, 'g', -1, 64), Committed: capacity.Format(l.Resource, l.Committed),
			Waiting: capacity.Format(l.Resource, l.Waiting), Free: capacity.Format(l.Resource, l.Free)}
		if sell := l.Allocatable * l.Overcommit; sell > 0 {
			p.Sold = int(math.Round(100 * l.Committed / sell))
		}
		out = append(out, p)
	}
	return out
}

// Branch is a review branch waiting for a person to merge it.
type Branch struct {
	Name       string    `json:"name"`
	Commit     string    `json:"commit"`
	CommitLink string    `json:"commit_link,omitempty"`
	Opened     time.Time `json:"opened,omitzero"`
}

// Refusal is the deletion guard's last refusal among the runs kept.
type Refusal struct {
	Run   int       `json:"run"`
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// RunEntry is one run in full: every entry that is not unchanged.
type RunEntry struct {
	Run     Run    `json:"run"`
	Changes []Item `json:"changes"`
}

// Options are what a Status is built with beside the runs.
type Options struct {
	// Names shows subjects that may name people and the entries' reasons.
	Names      bool
	Now        time.Time
	Source     string
	Leadership *Leadership
	Serving    *Serving
	Events     []events.OfferingState
}

// Build makes the picture from recs, newest first: the list of runs, and
// the lists of the newest run.
func Build(recs []Record, o Options) Status {
	s := Status{Schema: Schema, Generated: o.Now.UTC(), Source: o.Source, Names: o.Names, Leadership: o.Leadership,
		Serving: o.Serving, Events: o.Events, Runs: []Run{}, Tenants: tenants(recs),
		OrdersWaiting: []Item{}, ReviewBranches: []Branch{}, QuotaHeld: []Item{}, MembersWaiting: []Item{}, Offboarding: []Item{}, Held: []Item{}}
	for _, r := range recs {
		s.Runs = append(s.Runs, runOf(r, o.Names))
		if s.GuardRefusal == nil && r.Report.ExitCode == failure.ExitGuard {
			s.GuardRefusal = &Refusal{Run: r.ID, At: r.Report.Finished, Error: scrub(failedStage(r.Report), o.Names)}
		}
	}
	if len(recs) == 0 {
		return s
	}
	last := recs[0]
	for _, b := range last.Report.ReviewBranches {
		s.ReviewBranches = append(s.ReviewBranches, Branch{Name: b.Name, Commit: b.Commit, CommitLink: link(last.CommitURL, b.Commit), Opened: b.Opened})
	}
	s.sort(last.Report.Changes, o.Names)
	s.Offboarding = offboarding(last.Report.Offboarding, o.Names)
	for _, r := range recs {
		if reached(r.Report, "capacity") {
			s.Capacity = pools(r.Report.Capacity, o.Names)
			break
		}
	}
	return s
}

// reached reports whether a run ran a stage.
func reached(rep *report.Run, stage string) bool {
	for _, st := range rep.Stages {
		if st.Name == stage {
			return true
		}
	}
	return false
}

// offboarding lists the users of recs whose offboarding is in flight (not
// yet Deleted): with names each user, else a count per offering, state and
// cause.
func offboarding(recs []report.Offboard, names bool) []Item {
	out := []Item{}
	counted := map[Item]int{}
	for _, r := range recs {
		if r.State == waldur.OfferingUserDeleted {
			continue
		}
		it := Item{Stage: offboard.Stage, Kind: offboard.KindOfferingUser, Offering: r.Offering, Action: r.State, Cause: r.Cause, Count: 1}
		if names {
			it.Subject, it.Reason, it.Since = r.Username, r.Reason, r.RequestedAt
			out = append(out, it)
			continue
		}
		it.Count = 0
		if i, ok := counted[it]; ok {
			out[i].Count++
			continue
		}
		counted[it] = len(out)
		it.Count = 1
		out = append(out, it)
	}
	return out
}

// Detail is the picture with rec in full.
func Detail(rec Record, s Status) Status {
	s.Detail = &RunEntry{Run: runOf(rec, s.Names), Changes: items(rec.Report.Changes, s.Names, func(e changeset.Entry) bool {
		return e.Action != changeset.Unchanged
	})}
	return s
}

// sort puts each entry of the last run with a cause (or skipped) in its list.
func (s *Status) sort(changes []changeset.Entry, names bool) {
	orders := map[string]bool{}
	var ord, quota, members, held []changeset.Entry
	for _, e := range changes {
		switch {
		case e.Cause == "" && e.Action != changeset.Skip:
		case e.Kind == offboard.KindOfferingUser:
			// Listed from the run's offboarding records.
		case e.Kind == "Order":
			// The approve and orders stages may both name an order: once.
			if id := strings.Join(e.Orders, ","); id == "" || !orders[id] {
				orders[id] = true
				ord = append(ord, e)
			}
		case e.Cause == changeset.CauseQuotaHeld:
			quota = append(quota, e)
		case e.Kind == keycloak.KindMembership:
			members = append(members, e)
		default:
			held = append(held, e)
		}
	}
	all := func(changeset.Entry) bool { return true }
	s.OrdersWaiting = items(ord, names, all)
	s.QuotaHeld = items(quota, names, all)
	s.MembersWaiting = items(members, names, all)
	s.Held = items(held, names, all)
}

// personal reports whether e's subject or reason may name a person.
func personal(e changeset.Entry) bool {
	return e.Stage == keycloak.Stage || e.Kind == keycloak.KindMembership ||
		e.Cause == changeset.CauseMemberLeftOut || e.Cause == changeset.CauseUserNotFound
}

// items lists the entries keep takes; without names, the reasons are left
// out and the entries that may name people are counted per stage, kind,
// offering, action and cause.
func items(entries []changeset.Entry, names bool, keep func(changeset.Entry) bool) []Item {
	out := []Item{}
	counted := map[Item]int{}
	for _, e := range entries {
		if !keep(e) {
			continue
		}
		it := Item{Stage: e.Stage, Kind: e.Kind, Subject: e.Subject, Offering: e.Offering, Action: string(e.Action), Cause: e.Cause, Count: 1, Since: e.Since}
		switch {
		case names:
			it.Reason = e.Reason
		case personal(e):
			it.Subject, it.Count, it.Since = "", 0, time.Time{}
			if i, ok := counted[it]; ok {
				out[i].Count++
				continue
			}
			counted[it] = len(out)
			it.Count = 1
		}
		out = append(out, it)
	}
	return out
}

// runOf is the list row of a run.
func runOf(r Record, names bool) Run {
	rep := r.Report
	out := Run{ID: r.ID, Command: rep.Command, Started: rep.Started, Finished: rep.Finished,
		DurationSeconds: rep.Finished.Sub(rep.Started).Seconds(), ExitCode: rep.ExitCode, Result: result(rep.ExitCode),
		Commit: rep.Commit, CommitLink: link(r.CommitURL, rep.Commit), Stages: []Stage{}}
	for _, st := range rep.Stages {
		cs := changeset.Set{Entries: slices.DeleteFunc(slices.Clone(rep.Changes), func(e changeset.Entry) bool { return e.Stage != st.Name })}
		out.Stages = append(out.Stages, Stage{Name: st.Name, DurationSeconds: st.DurationSeconds, Changes: cs.Summary(), Error: scrub(st.Error, names)})
	}
	if rep.Stopped != nil {
		out.Stopped = rep.Stopped.Line()
	}
	return out
}

// result is the result word of an exit code, as the metrics label it.
func result(code int) string {
	switch code {
	case failure.ExitOK:
		return "ok"
	case failure.ExitPartial:
		return "partial"
	}
	return "failed"
}

// failedStage is the error of the run's failed stage.
func failedStage(rep *report.Run) string {
	for _, st := range rep.Stages {
		if st.Error != "" {
			return st.Error
		}
	}
	return ""
}

// tenants counts the tenants of the newest run that rendered, per offering.
func tenants(recs []Record) []Tenants {
	for _, r := range recs {
		count := map[string]int{}
		for _, e := range r.Report.Changes {
			if e.Stage != "render" || e.Kind != "Tenant" || e.Action == changeset.Delete || e.Action == changeset.Skip {
				continue
			}
			off, _, _ := strings.Cut(e.Subject, "/")
			count[off]++
		}
		if len(count) == 0 {
			continue
		}
		out := make([]Tenants, 0, len(count))
		for off, n := range count {
			out = append(out, Tenants{Offering: off, Backend: r.Backends[off], Tenants: n})
		}
		slices.SortFunc(out, func(a, b Tenants) int { return cmp.Compare(a.Offering, b.Offering) })
		return out
	}
	return []Tenants{}
}

// link is a commit's link by the template of serve.commit_url.
func link(template, commit string) string {
	if template == "" || commit == "" {
		return ""
	}
	return strings.ReplaceAll(template, "{commit}", commit)
}

// email matches an e-mail address.
var email = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)

// scrub hides e-mail addresses in an error when names are not shown.
func scrub(s string, names bool) string {
	if names {
		return s
	}
	return email.ReplaceAllString(s, "[e-mail]")
}
