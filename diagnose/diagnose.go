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

// WriteTable prints the results as an aligned table: check, the offerings it
// serves ("all" for the shared GitOps repository), target, the credential it
// tests, pass, FAIL or skip, and the detail or the reason.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOFFERING\tTARGET\tCREDENTIAL\tRESULT\tDETAIL")
	for _, r := range rs {
		status := map[string]string{StatusPass: "pass", StatusFail: "FAIL", StatusSkipped: "skip"}[r.Status]
		offerings := strings.Join(r.Offerings, ", ")
		if offerings == "" {
			offerings = "all"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, offerings, r.Target, cmpOr(r.Credential, "-"), status, r.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d check(s), %d failed, %d skipped\n", len(rs), Failed(rs), Skipped(rs))
	return err
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
