package show

import (
	"fmt"
	"io"
	"slices"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/report"
)

// Progress prints a line per stage as it ends. Its counts are the
// summary's: a stage's line counts the entries of that stage's name; when a
// later stage adds entries under an earlier stage's name (the publish stage
// compares the tenants the render made), its line gives that stage's new
// counts too.
type Progress struct {
	w      io.Writer
	colour bool
	// byStage holds the entries of this run so far per stage name; shown
	// the stage names printed already. A name shown again starts a new run
	// (serve runs one engine many times).
	byStage map[string]*changeset.Set
	shown   []string
}

// NewProgress is the progress of runs on w, coloured with colour (a terminal).
func NewProgress(w io.Writer, colour bool) *Progress {
	return &Progress{w: w, colour: colour, byStage: map[string]*changeset.Set{}}
}

// Stage prints the line of a stage that ended, as the summary will: its
// duration and counts, after ✔ or ✗ (green or red) with colours, "ok" or
// "FAILED" without; the failure's cause is left to the summary and the
// error line, which say it once.
func (p *Progress) Stage(st report.Stage, cs changeset.Set) {
	if slices.Contains(p.shown, st.Name) {
		p.byStage, p.shown = map[string]*changeset.Set{}, nil
	}
	var touched []string
	for _, e := range cs.Entries {
		if p.byStage[e.Stage] == nil {
			p.byStage[e.Stage] = &changeset.Set{}
		}
		p.byStage[e.Stage].Add(e)
		if e.Stage != st.Name && slices.Contains(p.shown, e.Stage) && !slices.Contains(touched, e.Stage) {
			touched = append(touched, e.Stage)
		}
	}
	p.shown = append(p.shown, st.Name)
	status := p.counts(st.Name)
	if st.Error != "" {
		status = "failed"
	}
	for _, name := range touched {
		status += "; " + name + " now " + p.counts(name)
	}
	fmt.Fprintf(p.w, "%s %-9s %6.2fs  %s\n", p.mark(st.Error == ""), st.Name, st.DurationSeconds, status)
}

// counts is the summary of the entries seen under a stage name.
func (p *Progress) counts(name string) string {
	if s := p.byStage[name]; s != nil {
		return s.Summary()
	}
	return changeset.Set{}.Summary()
}

// mark is the sign of a stage's outcome.
func (p *Progress) mark(ok bool) string {
	switch {
	case !p.colour && ok:
		return "ok    "
	case !p.colour:
		return "FAILED"
	case ok:
		return "\x1b[32m✔\x1b[0m"
	}
	return "\x1b[31m✗\x1b[0m"
}
