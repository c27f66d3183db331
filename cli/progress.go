package cli

import (
	"io"
	"os"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/show"
)

// errOut is a new writer into stderr as the logs and the progress share it.
func (a *app) errOut() io.Writer {
	if a.errSink == nil {
		a.errSink = show.NewLineSink(a.stderr)
	}
	return a.errSink.Writer()
}

// isTTY reports whether w (or the stderr a show.LineSink writes to) is a terminal.
func isTTY(w io.Writer) bool {
	f, ok := show.Underlying(w).(*os.File)
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
