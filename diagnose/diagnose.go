// Package diagnose checks every connection a config names — the Waldur token
// and offering of each offering, read and write access to the GitOps
// repository, the Keycloak login and realm of each offering that uses
// Keycloak, and the clusters of the kubeconfigs given — and prints the result
// as a pass/fail table. Every check is a small function behind an interface, so
// each can be tested alone; nothing here changes anything anywhere.
package diagnose

import (
	"context"
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
	// Run performs the check; the detail is shown on success, the error on failure.
	Run func(ctx context.Context) (detail string, err error)
}

// Result is a check's outcome.
type Result struct {
	Name     string        `json:"name"`
	Target   string        `json:"target"`
	OK       bool          `json:"ok"`
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Options tune Run.
type Options struct {
	// Timeout bounds each check (default 30s).
	Timeout time.Duration
	// Concurrency is the number of checks run at once (default 4).
	Concurrency int
}

// Run runs the checks, a few at a time, each with its own time limit, and
// returns the results in the checks' order.
func Run(ctx context.Context, checks []Check, opts Options) []Result {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	out := make([]Result, len(checks))
	slots := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			out[i] = runOne(ctx, c, opts.Timeout)
		}()
	}
	wg.Wait()
	return out
}

// runOne runs a check. Its target, detail and error pass through the
// process-wide redactor (internal/redact) before anything else is done to
// them.
func runOne(ctx context.Context, c Check, timeout time.Duration) (res Result) {
	target := redact.String(c.Target)
	res = Result{Name: c.Name, Target: target}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			res.OK, res.Detail = false, oneLine(redact.String(fmt.Sprintf("check panicked: %v", p)))
		}
		res.Duration = time.Since(start)
	}()
	detail, err := c.Run(ctx)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return Result{Name: c.Name, Target: target, Detail: oneLine(redact.String(err.Error()))}
	}
	res.OK, res.Detail = true, oneLine(redact.String(detail))
	return res
}

// oneLine keeps a message on one table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Failed counts the failed results.
func Failed(rs []Result) int {
	n := 0
	for _, r := range rs {
		if !r.OK {
			n++
		}
	}
	return n
}

// WriteTable prints the results as an aligned table: check, target, PASS or
// FAIL, and the detail or the reason of the failure.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tTARGET\tRESULT\tDETAIL")
	for _, r := range rs {
		status := "pass"
		if !r.OK {
			status = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Target, status, r.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d check(s), %d failed\n", len(rs), Failed(rs))
	return err
}
