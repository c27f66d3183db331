// Package diagnose checks every connection a config names — the Waldur token
// and offering of each offering, read and write access to the GitOps
// repository, the Keycloak login and realm of each offering that uses
// Keycloak, and the clusters the offerings use (their kubeconfig_path, else
// client-go's default rules: $KUBECONFIG, ~/.kube/config, the pod's service
// account) — and prints the result as a table: one row per check naming the
// offerings it serves and the credential it tests, pass, FAIL, or skip when
// an earlier check it needs failed. Every check is a small function behind an
// interface, so each can be tested alone; nothing here changes anything
// anywhere.
package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/waldur/waldur-gitops/internal/redact"
)

// Check is one connection check.
type Check struct {
	// Name says what is checked ("waldur token", "git write", …).
	Name string
	// Target says against what (an offering, a URL, a kubeconfig).
	Target string
	// Offerings are the config names of the offerings the checked connection
	// serves (empty: every offering, as for the GitOps repository).
	Offerings []string
	// Credential names the credential the check tests, by its config key and
	// where it is read from — never its value.
	Credential string
	// ID names the check for Needs; empty: no check needs it.
	ID string
	// Needs is the ID of an earlier check this one cannot run without: when
	// that one does not pass, this one is skipped with the reason.
	Needs string
	// Run performs the check; the detail is shown on success, the error on
	// failure. An error made by Skip skips the check instead.
	Run func(ctx context.Context) (detail string, err error)
}

// Statuses of a Result.
const (
	StatusPass    = "pass"
	StatusFail    = "fail"
	StatusSkipped = "skipped"
)

// Result is a check's outcome.
type Result struct {
	Name       string   `json:"name"`
	Target     string   `json:"target"`
	Offerings  []string `json:"offerings,omitempty"`
	Credential string   `json:"credential,omitempty"`
	// OK is true for a passed check; Status tells a failed one from a skipped one.
	OK       bool          `json:"ok"`
	Status   string        `json:"status"`
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// skipError is the error of Skip.
type skipError struct{ reason string }

func (e *skipError) Error() string { return "skipped: " + e.reason }

// Skip is the error a check's Run returns when it cannot run at all and that
// is no failure (nothing to check); the row says "skipped: reason".
func Skip(reason string) error { return &skipError{reason} }

// Options tune Run.
type Options struct {
	// Timeout bounds each check (default 30s).
	Timeout time.Duration
	// Concurrency is the number of checks run at once (default 4).
	Concurrency int
}

// Run runs the checks, a few at a time, each with its own time limit, and
// returns the results in the checks' order. A check whose Needs did not pass
// is not run: its result says "skipped: <that check> failed".
func Run(ctx context.Context, checks []Check, opts Options) []Result {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	out := make([]Result, len(checks))
	done := make([]chan struct{}, len(checks))
	byID := map[string]int{}
	for i, c := range checks {
		done[i] = make(chan struct{})
		if c.ID != "" {
			byID[c.ID] = i
		}
	}
	slots := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			if j, ok := byID[c.Needs]; ok && c.Needs != "" && j != i {
				<-done[j] // waited for before taking a slot: no deadlock
				if !out[j].OK {
					out[i] = skipped(c, out[j])
					return
				}
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			out[i] = runOne(ctx, c, opts.Timeout)
		}()
	}
	wg.Wait()
	return out
}

// skipped is the result of a check whose prerequisite did not pass.
func skipped(c Check, need Result) Result {
	res := newResult(c)
	res.Status = StatusSkipped
	what := "failed"
	if need.Status == StatusSkipped {
		what = "was skipped"
	}
	res.Detail = fmt.Sprintf("skipped: %s %s", need.Name, what)
	return res
}

// newResult is a check's result before it ran, redacted.
func newResult(c Check) Result {
	return Result{Name: c.Name, Target: redact.String(c.Target), Offerings: c.Offerings, Credential: redact.String(c.Credential)}
}

// runOne runs a check. Its target, detail and error pass through the
// process-wide redactor (internal/redact) before anything else is done to
// them.
func runOne(ctx context.Context, c Check, timeout time.Duration) (res Result) {
	res = newResult(c)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			res.OK, res.Status, res.Detail = false, StatusFail, oneLine(redact.String(fmt.Sprintf("check panicked: %v", p)))
		}
		res.Duration = time.Since(start)
	}()
	detail, err := c.Run(ctx)
	var skip *skipError
	switch {
	case errors.As(err, &skip):
		res.Status, res.Detail = StatusSkipped, oneLine(redact.String(skip.Error()))
	case err != nil:
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		res.Status, res.Detail = StatusFail, oneLine(redact.String(err.Error()))
	default:
		res.OK, res.Status, res.Detail = true, StatusPass, oneLine(redact.String(detail))
	}
	return res
}

// oneLine keeps a message on one table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Failed counts the failed results (a skipped check is not failed).
func Failed(rs []Result) int { return count(rs, StatusFail) }

// Skipped counts the skipped results.
func Skipped(rs []Result) int { return count(rs, StatusSkipped) }

func count(rs []Result, status string) int {
	n := 0
	for _, r := range rs {
		if r.Status == status {
			n++
		}
	}
	return n
}

// TableWidth is the width WriteTable fits its lines in.
const TableWidth = 100

// WriteTable prints the results in TableWidth columns: per check a row with
// the check, the offerings it serves ("all" for the shared GitOps
// repository), pass, FAIL or skip, and the detail or the reason, then the
// target and the credential it tests on lines of their own under the detail.
// A value too long for its column is wrapped.
func WriteTable(w io.Writer, rs []Result) error {
	nameW, offW := len("CHECK"), len("OFFERING")
	for _, r := range rs {
		nameW = max(nameW, min(utf8.RuneCountInString(r.Name), 20))
		offW = max(offW, min(utf8.RuneCountInString(offeringsOf(r)), 16))
	}
	detailW := TableWidth - nameW - offW - len("RESULT") - 3*2
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOFFERING\tRESULT\tDETAIL")
	for _, r := range rs {
		detail := wrap(cmpOr(r.Detail, "-"), detailW)
		detail = append(detail, wrap("target: "+r.Target, detailW)...)
		if r.Credential != "" {
			detail = append(detail, wrapParts("credential: ", strings.Split(r.Credential, ", "), detailW)...)
		}
		cols := [][]string{wrap(r.Name, nameW), wrap(offeringsOf(r), offW), {statusWord(r)}, detail}
		writeRows(tw, cols)
	}
	return finishTable(w, tw, rs)
}

// WriteWideTable prints the results one line per check, however long:
// check, offerings, target, credential, result and detail (-o wide).
func WriteWideTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOFFERING\tTARGET\tCREDENTIAL\tRESULT\tDETAIL")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, offeringsOf(r), r.Target, cmpOr(r.Credential, "-"), statusWord(r), r.Detail)
	}
	return finishTable(w, tw, rs)
}

// finishTable flushes the table and prints the counts under it.
func finishTable(w io.Writer, tw *tabwriter.Writer, rs []Result) error {
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d check(s), %d failed, %d skipped\n", len(rs), Failed(rs), Skipped(rs))
	return err
}

// writeRows writes one table row of wrapped cells: as many lines as its
// tallest cell, the others left empty.
func writeRows(tw io.Writer, cols [][]string) {
	height := 0
	for _, c := range cols {
		height = max(height, len(c))
	}
	for i := range height {
		cells := make([]string, len(cols))
		for j, c := range cols {
			if i < len(c) {
				cells[j] = c[i]
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
}

// statusWord is a result's word in the tables.
func statusWord(r Result) string {
	return map[string]string{StatusPass: "pass", StatusFail: "FAIL", StatusSkipped: "skip"}[r.Status]
}

// offeringsOf lists the offerings a result serves, "all" when it serves every one.
func offeringsOf(r Result) string {
	return cmpOr(strings.Join(r.Offerings, ", "), "all")
}

// wrapParts writes the comma-separated parts after prefix, as many on a
// line as fit, breaking lines between parts (and inside a part too long).
func wrapParts(prefix string, parts []string, width int) []string {
	var lines []string
	line := prefix + parts[0]
	for _, p := range parts[1:] {
		if utf8.RuneCountInString(line)+2+utf8.RuneCountInString(p) <= width {
			line += ", " + p
			continue
		}
		lines = append(lines, wrap(line+",", width)...)
		line = "  " + p
	}
	return append(lines, wrap(line, width)...)
}

// wrap breaks s into lines of at most width characters, at spaces where it
// can and inside a word longer than a line.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for r := []rune(word); len(r) > width; r = []rune(word) {
			if line != "" {
				lines, line = append(lines, line), ""
			}
			lines, word = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
