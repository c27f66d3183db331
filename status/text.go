package status

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// TextItems is how many entries of each list the text shows at most.
const TextItems = 20

// WriteText prints the picture for a terminal: the leadership and serve's
// state, the newest run with its stages, the older runs a line each, then
// every list, each entry with its cause.
func WriteText(w io.Writer, s Status) error {
	var b strings.Builder
	fmt.Fprintf(&b, "waldur-gitops status from %s at %s\n", s.Source, s.Generated.Format(time.RFC3339))
	if l := s.Leadership; l != nil {
		fmt.Fprintf(&b, "leadership: %s\n", LeaderLine(*l))
	}
	if sv := s.Serving; sv != nil {
		line := "idle"
		if sv.Running && sv.RunStarted != nil {
			line = "a run is going on since " + sv.RunStarted.Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "serve: %s, %s, serving since %s\n", sv.Health, line, sv.Since.Format(time.RFC3339))
	}
	for _, ev := range s.Events {
		state := "disconnected"
		if ev.Connected {
			state = "connected"
		}
		fmt.Fprintf(&b, "events %s: %s, %d received, %d reconnects", ev.Offering, state, ev.Received, ev.Reconnects)
		if ev.LastError != "" {
			fmt.Fprintf(&b, ", last error: %s", ev.LastError)
		}
		b.WriteString("\n")
	}
	writeRuns(&b, s.Runs)
	writeTenants(&b, s.Tenants)
	writeItems(&b, "Orders waiting", s.OrdersWaiting)
	b.WriteString("\nReview branches waiting for a merge:")
	if len(s.ReviewBranches) == 0 {
		b.WriteString(" none\n")
	} else {
		b.WriteString("\n")
	}
	for _, rb := range s.ReviewBranches {
		age := ""
		if !rb.Opened.IsZero() {
			age = ", open for " + s.Generated.Sub(rb.Opened).Round(time.Minute).String()
		}
		fmt.Fprintf(&b, "  %s at %s%s\n", rb.Name, short(rb.Commit), age)
	}
	writeCapacity(&b, s.Capacity)
	writeItems(&b, "Quota cuts held", s.QuotaHeld)
	writeItems(&b, "Keycloak members waiting", s.MembersWaiting)
	writeItems(&b, "Offboarding in flight", s.Offboarding)
	writeItems(&b, "Other entries held, waiting or kept", s.Held)
	if g := s.GuardRefusal; g != nil {
		fmt.Fprintf(&b, "\nDeletion guard: refused run %d at %s: %s\n", g.Run, g.At.Format(time.RFC3339), g.Error)
	} else {
		b.WriteString("\nDeletion guard: no refusal among these runs\n")
	}
	if !s.Names {
		b.WriteString("\n(names and reasons hidden: counts and causes only)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// LeaderLine says who leads: "this replica", "this replica (no election)"
// or "standby; the leader is X at URL".
func LeaderLine(l Leadership) string {
	switch {
	case l.Leader && !l.Elected:
		return "this replica leads (single replica, no election)"
	case l.Leader:
		return "this replica (" + l.Identity + ") leads"
	}
	who := l.LeaderIdentity
	if who == "" {
		who = "unknown"
	}
	line := "standby (" + l.Identity + "); the leader is " + who
	if l.LeaderURL != "" {
		line += " at " + l.LeaderURL
	}
	return line
}

func writeRuns(b *strings.Builder, runs []Run) {
	b.WriteString("\nLast runs:")
	if len(runs) == 0 {
		b.WriteString(" none yet\n")
		return
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  RUN\tFINISHED\tRESULT\tEXIT\tDURATION\tCOMMIT")
	for _, r := range runs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\n", runName(r), r.Finished.Format(time.RFC3339), r.Result, r.ExitCode,
			(time.Duration(r.DurationSeconds * float64(time.Second))).Round(time.Millisecond), orDash(short(r.Commit)))
	}
	_ = tw.Flush()
	fmt.Fprintf(b, "\nStages of run %s:\n", runName(runs[0]))
	for _, st := range runs[0].Stages {
		status := st.Changes
		if st.Error != "" {
			status = "FAILED: " + strings.ReplaceAll(st.Error, "\n", " ")
		}
		fmt.Fprintf(b, "  %-9s %6.2fs  %s\n", st.Name, st.DurationSeconds, status)
	}
	if runs[0].Stopped != "" {
		fmt.Fprintf(b, "  incomplete, %s\n", runs[0].Stopped)
	}
	if runs[0].CommitLink != "" {
		fmt.Fprintf(b, "  commit %s\n", runs[0].CommitLink)
	}
}

func runName(r Run) string {
	if r.ID == 0 {
		return "last"
	}
	return fmt.Sprintf("#%d", r.ID)
}

func writeTenants(b *strings.Builder, ts []Tenants) {
	b.WriteString("\nTenants:")
	if len(ts) == 0 {
		b.WriteString(" none rendered\n")
		return
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  OFFERING\tBACKEND\tTENANTS")
	for _, t := range ts {
		fmt.Fprintf(tw, "  %s\t%s\t%d\n", t.Offering, orDash(t.Backend), t.Tenants)
	}
	_ = tw.Flush()
}

func writeItems(b *strings.Builder, title string, items []Item) {
	fmt.Fprintf(b, "\n%s:", title)
	if len(items) == 0 {
		b.WriteString(" none\n")
		return
	}
	b.WriteString("\n")
	for i, it := range items {
		if i == TextItems {
			fmt.Fprintf(b, "  … and %d more (-o json lists them all)\n", len(items)-TextItems)
			break
		}
		b.WriteString("  " + ItemLine(it) + "\n")
	}
}

// ItemLine is an item on one line: "[cause] orders Order <subject>: reason",
// or with a count instead of the subject.
func ItemLine(it Item) string {
	cause := string(it.Cause)
	if cause == "" {
		cause = "-"
	}
	line := fmt.Sprintf("[%s] %s %s", cause, it.Stage, it.Kind)
	if it.Subject != "" {
		line += " " + it.Subject
	} else {
		line += fmt.Sprintf(" ×%d", it.Count)
	}
	if it.Offering != "" && it.Subject == "" {
		line += " (" + it.Offering + ")"
	}
	if !it.Since.IsZero() {
		line += " (since " + it.Since.UTC().Format(time.RFC3339) + ")"
	}
	if it.Reason != "" {
		line += ": " + it.Reason
	}
	return line
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeCapacity prints every capacity pool's account, a line per resource.
func writeCapacity(b *strings.Builder, pools []Pool) {
	if len(pools) == 0 {
		return
	}
	b.WriteString("\nCapacity:\n")
	for _, p := range pools {
		if p.Error != "" {
			fmt.Fprintf(b, "  %s: unknown: %s\n", p.Pool, p.Error)
			continue
		}
		fmt.Fprintf(b, "  %s %s: %d%% sold; allocatable %s × overcommit %s, committed %s, requested by waiting orders %s, free %s\n",
			p.Pool, p.Resource, p.Sold, p.Allocatable, p.Overcommit, p.Committed, p.Waiting, p.Free)
	}
}
