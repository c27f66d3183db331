package cli

import (
	"bytes"
	"io"
	"os"
	"sync"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/show"
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

// progress is the terminal's show.Progress (engine.Engine.Progress).
type progress struct{ *show.Progress }

func newProgress(w io.Writer, colour bool) progress { return progress{show.NewProgress(w, colour)} }

func (p progress) stage(st report.Stage, cs changeset.Set) { p.Stage(st, cs) }
