package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
)

func TestRecordAndWrite(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	r := New("sync", "v1", false, t0)
	_ = r.Record("render", func() (changeset.Result, error) {
		return changeset.Result{Changes: changeset.Set{Entries: []changeset.Entry{
			{Stage: "render", Kind: "Tenant", Subject: "o/cluster/a", Action: changeset.Create},
			{Stage: "render", Kind: "Tenant", Subject: "o/cluster/b", Action: changeset.Unchanged},
		}}}, nil
	})
	err := r.Record("git", func() (changeset.Result, error) {
		return changeset.Result{Calls: map[string]int{"push": 2}}, errors.New("push rejected")
	})
	if err == nil || err.Error() != "push rejected" {
		t.Fatalf("Record returned %v", err)
	}
	r.Commit = "abc123"
	r.Finish(6, t0.Add(1500*time.Millisecond))

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back["schema"] != Schema || back["exit_code"].(float64) != 6 || back["commit"] != "abc123" {
		t.Errorf("json: %v", back)
	}
	stages := back["stages"].([]any)
	if len(stages) != 2 || stages[1].(map[string]any)["error"] != "push rejected" || stages[1].(map[string]any)["calls"].(map[string]any)["push"].(float64) != 2 {
		t.Errorf("stages: %v", stages)
	}
	if back["counts"].(map[string]any)["render"].(map[string]any)["create"].(float64) != 1 {
		t.Errorf("counts: %v", back["counts"])
	}

	var sum bytes.Buffer
	if err := r.WriteSummary(&sum); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"waldur-gitops sync: 1.5s", "render", "+1 =1", "git", "FAILED: push rejected", "+ Tenant o/cluster/a", "commit abc123"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	if strings.Contains(sum.String(), "o/cluster/b") {
		t.Errorf("summary lists unchanged tenants:\n%s", sum.String())
	}
}

// The summary lists at most SummaryEntries changes and says where the rest
// are: the report file when one was written, otherwise --output json. It
// never points to a file that is not there; the JSON does not carry the path.
func TestSummaryPointsToTheRest(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	newRun := func(n int) *Run {
		r := New("sync", "v1", false, t0)
		var cs changeset.Set
		for i := range n {
			cs.Entries = append(cs.Entries, changeset.Entry{Stage: "render", Kind: "Tenant", Subject: fmt.Sprintf("o/cluster/t%02d", i), Action: changeset.Create})
		}
		r.Add(cs)
		r.Finish(0, t0.Add(time.Second))
		return r
	}
	summary := func(r *Run) string {
		var b bytes.Buffer
		if err := r.WriteSummary(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, file string
		entries    int
		want       string
	}{
		{"no report file", "", SummaryEntries + 5, "  … and 5 more: run with --output json to see them all\n"},
		{"report file written", "/var/run/waldur-gitops/report.json", SummaryEntries + 1, "  … and 1 more: the run report /var/run/waldur-gitops/report.json lists them all\n"},
		{"everything shown", "/r.json", SummaryEntries, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(tc.entries)
			r.ReportFile = tc.file
			got := summary(r)
			if n := strings.Count(got, "  + Tenant "); n != min(tc.entries, SummaryEntries) {
				t.Errorf("%d entries listed, want %d", n, min(tc.entries, SummaryEntries))
			}
			if tc.want == "" && strings.Contains(got, "more:") || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("summary does not end with %q:\n%s", tc.want, got)
			}
			if strings.Contains(got, "JSON report") {
				t.Errorf("summary points to a JSON report without naming it:\n%s", got)
			}
			var js bytes.Buffer
			if err := r.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if tc.file != "" && strings.Contains(js.String(), tc.file) {
				t.Errorf("the JSON carries the report file's path:\n%.300s", js.String())
			}
		})
	}
}
