package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/report"
)

// lineSink is stderr as the logs and the progress share it: each writes
// through a lineWriter of its own, and whole lines reach w one at a time,
// so neither cuts into the other's lines.
type lineSink struct {
	mu sync.Mutex
	w  io.Writer
}

// writer is a new writer into the sink.
func (s *lineSink) writer() *lineWriter { return &lineWriter{sink: s} }

// lineWriter keeps one writer's unfinished line until its newline and
// passes each finished line to the sink.
type lineWriter struct {
	mu   sync.Mutex
	sink *lineSink
	buf  []byte
}

// Write keeps p and passes on every line it finishes.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	end := bytes.LastIndexByte(l.buf, '\n')
	if end < 0 {
		return len(p), nil
	}
	l.sink.mu.Lock()
	_, err := l.sink.w.Write(l.buf[:end+1])
	l.sink.mu.Unlock()
	l.buf = l.buf[:copy(l.buf, l.buf[end+1:])]
	return len(p), err
}

// errOut is a new writer into stderr as the logs and the progress share it.
func (a *app) errOut() io.Writer {
	if a.errSink == nil {
		a.errSink = &lineSink{w: a.stderr}
	}
	return a.errSink.writer()
}

// isTTY reports whether w (or the stderr a lineWriter writes to) is a terminal.
func isTTY(w io.Writer) bool {
	if l, ok := w.(*lineWriter); ok {
		w = l.sink.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// colourOK reports whether w takes marks and colours: a terminal, and
// NO_COLOR (https://no-color.org) not set.
func colourOK(w io.Writer) bool { return os.Getenv("NO_COLOR") == "" && isTTY(w) }

// progress prints a line per stage as it ends. Its counts are the
// summary's: a stage's line counts the entries of that stage's name; when a
// later stage adds entries under an earlier stage's name (the publish stage
// compares the tenants the render made), its line gives that stage's new
// counts too.
type progress struct {
	w      io.Writer
	colour bool
	// byStage holds the entries of this run so far per stage name; shown
	// the stage names printed already. A name shown again starts a new run
	// (serve runs one engine many times).
	byStage map[string]*changeset.Set
	shown   []string
}

func newProgress(w io.Writer, colour bool) *progress {
	return &progress{w: w, colour: colour, byStage: map[string]*changeset.Set{}}
}

// stage prints the line of a stage that ended, as the summary will: its
// duration and counts, after ✔ or ✗ (green or red) with colours, "ok" or
// "FAILED" without; the failure's cause is left to the summary and the
// error line, which say it once.
func (p *progress) stage(st report.Stage, cs changeset.Set) {
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
func (p *progress) counts(name string) string {
	if s := p.byStage[name]; s != nil {
		return s.Summary()
	}
	return changeset.Set{}.Summary()
}

// mark is the sign of a stage's outcome.
func (p *progress) mark(ok bool) string {
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
