package metrics_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/metrics/metricstest"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// families renders what g gathers in the text format and parses it back.
func families(t *testing.T, g prometheus.Gatherer) metricstest.Set {
	t.Helper()
	fams, err := metricstest.Gather(g)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func parse(t *testing.T, r io.Reader) metricstest.Set {
	t.Helper()
	fams, err := metricstest.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

type sample struct {
	name   string
	labels map[string]string
	want   float64
	absent bool
}

func check(t *testing.T, fams metricstest.Set, samples []sample) {
	t.Helper()
	for _, s := range samples {
		got, ok := fams.Value(s.name, s.labels)
		switch {
		case s.absent && ok:
			t.Errorf("%s%v = %v, want no such sample", s.name, s.labels, got)
		case !s.absent && !ok:
			t.Errorf("%s%v missing", s.name, s.labels)
		case !s.absent && got != s.want:
			t.Errorf("%s%v = %v, want %v", s.name, s.labels, got, s.want)
		}
	}
}

var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// okRun is a successful run with a commit, two Keycloak groups, a skipped
// resource and Waldur and Keycloak traffic.
func okRun() metrics.Run {
	rep := report.New("sync", "test", false, t0)
	rep.Stages = []report.Stage{
		{Name: "waldur", DurationSeconds: 1.5},
		{Name: "render", DurationSeconds: 0.25},
		{Name: "git", DurationSeconds: 2, Calls: map[string]int{"fetch": 1, "push": 1}},
		{Name: "keycloak", DurationSeconds: 0.5, Calls: map[string]int{
			keycloak.CallListGroups: 3, keycloak.CallCreateGroup: 2, keycloak.CallRetries: 1,
			keycloak.CallErrorPrefix + keycloak.CallListGroups: 1, keycloak.CallWritePrefix + keycloak.CallCreateGroup: 1,
		}},
	}
	rep.ReviewBranches = []report.ReviewBranch{{Name: "waldur-gitops/review/0123456789ab", Commit: "c0ffee", Opened: t0.Add(-time.Hour)}}
	rep.Add(changeset.Set{Entries: []changeset.Entry{
		{Stage: "render", Kind: "Tenant", Subject: "a/cluster/x", Action: changeset.Create},
		{Stage: "render", Kind: "Tenant", Subject: "a/cluster/y", Action: changeset.Create},
		{Stage: "render", Kind: "Tenant", Subject: "a/cluster/z", Action: changeset.Unchanged},
		{Stage: "render", Kind: "Resource", Subject: "a/bad", Action: changeset.Skip, Reason: "invalid resource limits: cpu=\"x\" is not a number", Cause: changeset.CauseInvalidLimits},
		{Stage: "git", Kind: "Commit", Subject: "main abc", Action: changeset.Create},
		{Stage: "keycloak", Kind: "KeycloakGroup", Subject: "/g1", Action: changeset.Create},
		{Stage: "keycloak", Kind: "KeycloakGroup", Subject: "/g2", Action: changeset.Create},
	}})
	rep.Finish(3, t0.Add(5*time.Second))
	return metrics.Run{Report: rep, Result: metrics.ResultPartial, Waldur: waldur.CallStats{
		Requests: map[string]int{waldur.KindResourcesList: 4, waldur.KindOrdersList: 2},
		Errors:   map[string]int{waldur.KindOrdersList: 1},
	}}
}

func failedRun() metrics.Run {
	rep := report.New("sync", "test", false, t0.Add(time.Hour))
	rep.Stages = []report.Stage{{Name: "waldur", DurationSeconds: 3, Error: "waldur GET …: 503"}}
	rep.Finish(4, t0.Add(time.Hour+3*time.Second))
	return metrics.Run{Report: rep, Result: metrics.ResultFailed, Waldur: waldur.CallStats{
		Requests: map[string]int{waldur.KindResourcesList: 3}, Errors: map[string]int{waldur.KindResourcesList: 1},
	}}
}

func TestRecorder(t *testing.T) {
	r := metrics.New("v9.9.9")
	fams := families(t, r.Registry())
	check(t, fams, []sample{
		{name: "waldur_gitops_build_info", labels: map[string]string{"version": "v9.9.9"}, want: 1},
		{name: "waldur_gitops_runs_total", labels: map[string]string{"result": "ok"}, want: 0},
		{name: "waldur_gitops_runs_total", labels: map[string]string{"result": "failed"}, want: 0},
		{name: "waldur_gitops_last_success_timestamp_seconds", absent: true},
		{name: "waldur_gitops_last_run_timestamp_seconds", want: 0},
	})

	r.Started()
	check(t, families(t, r.Registry()), []sample{{name: "waldur_gitops_run_in_progress", want: 1}})

	r.Observe(okRun())
	end := float64(t0.Add(5 * time.Second).Unix())
	check(t, families(t, r.Registry()), []sample{
		{name: "waldur_gitops_run_in_progress", want: 0},
		{name: "waldur_gitops_runs_total", labels: map[string]string{"result": "partial"}, want: 1},
		{name: "waldur_gitops_last_success_timestamp_seconds", want: end},
		{name: "waldur_gitops_last_run_timestamp_seconds", want: end},
		{name: "waldur_gitops_last_run_start_timestamp_seconds", want: float64(t0.Unix())},
		{name: "waldur_gitops_last_run_exit_code", want: 3},
		{name: "waldur_gitops_last_run_duration_seconds", want: 5},
		{name: "waldur_gitops_stage_duration_seconds", labels: map[string]string{"stage": "waldur"}, want: 1.5},
		{name: "waldur_gitops_stage_duration_seconds", labels: map[string]string{"stage": "keycloak"}, want: 0.5},
		{name: "waldur_gitops_stage_failed", labels: map[string]string{"stage": "git"}, want: 0},
		{name: "waldur_gitops_last_run_objects", labels: map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}, want: 2},
		{name: "waldur_gitops_last_run_objects", labels: map[string]string{"stage": "render", "kind": "Tenant", "action": "unchanged"}, want: 1},
		{name: "waldur_gitops_objects_changed_total", labels: map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}, want: 2},
		{name: "waldur_gitops_objects_changed_total", labels: map[string]string{"action": "unchanged"}, absent: true},
		{name: "waldur_gitops_objects_changed_total", labels: map[string]string{"action": "skip"}, absent: true},
		{name: "waldur_gitops_objects_changed_total", labels: map[string]string{"stage": "keycloak", "kind": "KeycloakGroup", "action": "create"}, want: 2},
		{name: "waldur_gitops_last_run_skipped", labels: map[string]string{"stage": "render", "class": metrics.SkipInvalidLimits}, want: 1},
		{name: "waldur_gitops_api_requests_total", labels: map[string]string{"api": "waldur", "call": waldur.KindResourcesList}, want: 4},
		{name: "waldur_gitops_api_errors_total", labels: map[string]string{"api": "waldur", "call": waldur.KindOrdersList}, want: 1},
		{name: "waldur_gitops_api_requests_total", labels: map[string]string{"api": "keycloak", "call": keycloak.CallListGroups}, want: 3},
		{name: "waldur_gitops_api_requests_total", labels: map[string]string{"api": "keycloak", "call": keycloak.CallRetries}, absent: true},
		{name: "waldur_gitops_api_requests_total", labels: map[string]string{"api": "keycloak", "call": keycloak.CallErrorPrefix + keycloak.CallListGroups}, absent: true},
		{name: "waldur_gitops_api_requests_total", labels: map[string]string{"api": "keycloak", "call": keycloak.CallWritePrefix + keycloak.CallCreateGroup}, absent: true},
		{name: "waldur_gitops_keycloak_writes_total", labels: map[string]string{"call": keycloak.CallCreateGroup}, want: 1},
		{name: "waldur_gitops_api_errors_total", labels: map[string]string{"api": "keycloak", "call": keycloak.CallListGroups}, want: 1},
		{name: "waldur_gitops_api_requests_total", labels: map[string]string{"api": "git"}, absent: true},
		{name: "waldur_gitops_review_branch_opened_timestamp_seconds", labels: map[string]string{"branch": "waldur-gitops/review/0123456789ab"}, want: float64(t0.Add(-time.Hour).Unix())},
	})

	// A failed run: the last-run series are replaced, the counters grow and
	// the last success stays.
	r.Observe(failedRun())
	check(t, families(t, r.Registry()), []sample{
		{name: "waldur_gitops_runs_total", labels: map[string]string{"result": "partial"}, want: 1},
		{name: "waldur_gitops_runs_total", labels: map[string]string{"result": "failed"}, want: 1},
		{name: "waldur_gitops_last_success_timestamp_seconds", want: end},
		{name: "waldur_gitops_last_run_timestamp_seconds", want: float64(t0.Add(time.Hour + 3*time.Second).Unix())},
		{name: "waldur_gitops_last_run_exit_code", want: 4},
		{name: "waldur_gitops_stage_duration_seconds", labels: map[string]string{"stage": "waldur"}, want: 3},
		{name: "waldur_gitops_stage_duration_seconds", labels: map[string]string{"stage": "render"}, absent: true},
		{name: "waldur_gitops_stage_failed", labels: map[string]string{"stage": "waldur"}, want: 1},
		{name: "waldur_gitops_last_run_objects", absent: true},
		{name: "waldur_gitops_last_run_skipped", absent: true},
		{name: "waldur_gitops_review_branch_opened_timestamp_seconds", absent: true},
		{name: "waldur_gitops_objects_changed_total", labels: map[string]string{"stage": "render", "kind": "Tenant", "action": "create"}, want: 2},
		{name: "waldur_gitops_api_requests_total", labels: map[string]string{"api": "waldur", "call": waldur.KindResourcesList}, want: 7},
		{name: "waldur_gitops_api_errors_total", labels: map[string]string{"api": "waldur", "call": waldur.KindResourcesList}, want: 1},
	})

	// Every metric has a help text and the prefix.
	mfs, err := r.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "waldur_gitops_") || mf.GetHelp() == "" {
			t.Errorf("%s: help %q", mf.GetName(), mf.GetHelp())
		}
	}
}

// TestSkipClass maps the causes the stages set beside the reasons they write
// (in the forms their code builds them) to classes: the class is the cause's,
// whatever the reason says.
func TestSkipClass(t *testing.T) {
	tests := []struct {
		stage, reason string
		cause         changeset.Cause
		want          string
	}{
		{"render", `invalid resource limits: cpu="lots" is not a number`, changeset.CauseInvalidLimits, metrics.SkipInvalidLimits},
		{"render", "resource has no slug: its namespace cannot be named", changeset.CauseInvalidName, metrics.SkipInvalidName},
		{"render", "resource has unset or missing slug fields: project_slug", changeset.CauseInvalidName, metrics.SkipInvalidName},
		{"render", `resource uuid "x" is not a UUID`, changeset.CauseInvalidName, metrics.SkipInvalidName},
		{"render", `namespace name "waldur-Not_Valid" is not a valid RFC 1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit)`, changeset.CauseInvalidName, metrics.SkipInvalidName},
		{"render", `namespace name "waldur-aaaa" exceeds 63 characters (70)`, changeset.CauseInvalidName, metrics.SkipInvalidName},
		{"render", "name waldur-x is already used by resource 3cfe5210e4db306c7aabcd8103b2ad22", changeset.CauseNameConflict, metrics.SkipNameConflict},
		{"render", "component gpu (type gpu) has no quota mapping: add it to backend_settings.component_quota_mapping or give it a k8s_resource", changeset.CauseQuotaMapping, metrics.SkipQuotaMapping},
		{"render", "template extra.yaml produced an invalid ConfigMap: bad", changeset.CauseTemplate, metrics.SkipTemplate},
		{"render", "something new", "", metrics.SkipOther},
		{"keycloak", "user alice not found in Keycloak realm hpc (looked up by user name); it is added once it exists", changeset.CauseUserNotFound, metrics.SkipUserNotFound},
		{"keycloak", "conflict: the group exists but is not managed by waldur-gitops; it is left alone", changeset.CauseGroupConflict, metrics.SkipGroupConflict},
		{"keycloak", "parent group /org is not reconciled: conflict: …", changeset.CauseParentBlocked, metrics.SkipParentBlocked},
		{"keycloak", "not attempted: Keycloak is unavailable", changeset.CauseNotAttempted, metrics.SkipNotAttempted},
		{"keycloak", "failed: keycloak hpc@https://kc: log in to realm master: 503", changeset.CauseRealmFailure, metrics.SkipRealmFailure},
		{"keycloak", "failed: create-group /org/x: 500 Internal Server Error", changeset.CauseKeycloakFailed, metrics.SkipAPIFailure},
		{"waldur", "pending provider approval: auto_approve is off", changeset.CauseAwaitingApproval, metrics.SkipAwaitingApproval},
		{"waldur", `pending: waldur-gitops does not handle "Restore" orders`, changeset.CauseUnsupportedOrder, metrics.SkipUnsupportedOrder},
		{"waldur", "left executing: the cluster does not show the namespace yet", changeset.CauseNotApplied, metrics.SkipNotApplied},
		{"waldur", "failed to set done: waldur POST …: 500", changeset.CauseAPIFailure, metrics.SkipAPIFailure},
		{"usage", "Waldur takes usage only for resources in OK, Updating or Terminating; this one is Erred", changeset.CauseResourceState, metrics.SkipResourceState},
		{"usage", "not measured: no ResourceQuota", changeset.CauseNotMeasured, metrics.SkipNotMeasured},
		{"usage", `invalid resource limits: ram="-1" is negative`, changeset.CauseUsageLimits, metrics.SkipInvalidLimits},
		{"apply", "not applied: an earlier object of the tenant failed", changeset.CauseApplyFailed, metrics.SkipApplyFailed},
		{"apply", "kept: the tenant failed to apply", changeset.CauseApplyFailed, metrics.SkipApplyFailed},
		{"git", "waits on review branch waldur-gitops/review/3f2a9c0d1e2f until a person merges it (risky: tenant removed)", changeset.CauseAwaitingReview, metrics.SkipAwaitingReview},
		{"orders", "left executing: waits on review branch waldur-gitops/review/3f2a9c0d1e2f until a person merges it (risky: tenant removed)", changeset.CauseAwaitingReview, metrics.SkipAwaitingReview},
		{"git", "no pull or merge request: GET https://gitlab.example/api/v4/projects/1/merge_requests: 401 Unauthorized", changeset.CauseForgeFailure, metrics.SkipForgeFailure},
		{"quota", "sent for review: quota cut below usage (quota_shrink: review): requests.storage used 6Gi, new 4Gi, in place 10Gi", changeset.CauseAwaitingReview, metrics.SkipAwaitingReview},
		{"quota", "held: waiting for usage to drop below the new quota (quota_shrink: hold): requests.storage used 6Gi, new 4Gi, in place 10Gi", changeset.CauseQuotaHeld, metrics.SkipQuotaHeld},
		{"orders", "left executing: waiting for usage to drop below the new quota (quota_shrink: hold): requests.storage used 6Gi, new 4Gi, in place 10Gi", changeset.CauseQuotaHeld, metrics.SkipQuotaHeld},
		{"quota", "the quota cut is not checked against usage and is made: cannot read the cluster /k: forbidden", changeset.CauseQuotaUnchecked, metrics.SkipQuotaUnchecked},
		// The reason's wording decides nothing: a reworded reason keeps its class,
		// and a reason without a cause is other.
		{"render", "reworded: the limits make no sense", changeset.CauseInvalidLimits, metrics.SkipInvalidLimits},
		{"keycloak", "invalid resource limits: x", "", metrics.SkipOther},
		{"apply", "not applied: cluster unreachable: dial tcp", changeset.CauseClusterUnreachable, metrics.SkipApplyFailed},
		{"apply", "kept: the tenant failed to apply", changeset.CauseRemovalKept, metrics.SkipApplyFailed},
	}
	for _, tt := range tests {
		t.Run(tt.stage+" "+tt.want, func(t *testing.T) {
			e := changeset.Entry{Stage: tt.stage, Action: changeset.Skip, Reason: tt.reason, Cause: tt.cause}
			if got := metrics.SkipClass(e); got != tt.want {
				t.Errorf("SkipClass(%s %q) = %s, want %s", tt.stage, tt.reason, got, tt.want)
			}
		})
	}
}

// pushRequest is what the fake Pushgateway received.
type pushRequest struct {
	method, path, auth, contentType string
	body                            []byte
}

func TestPush(t *testing.T) {
	const password = "s3cret-pushgateway-password"
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []pushRequest
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, pushRequest{r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), b})
		w.WriteHeader(status)
	}))
	defer srv.Close()

	r := metrics.New("v1")
	r.Observe(okRun())
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("pusher:"+password))
	tests := []struct {
		name     string
		cfg      config.Metrics
		status   int
		wantPath string // up to /metrics/; empty: no push
		wantJob  map[string]string
		wantAuth string
		wantErr  string
	}{
		{"no url: nothing pushed", config.Metrics{Job: "waldur-gitops", TimeoutSeconds: 5}, 200, "", nil, "", ""},
		{"job and grouping, basic auth",
			config.Metrics{PushgatewayURL: srv.URL, Job: "waldur-gitops", Grouping: map[string]string{"instance": "site-a b"},
				Username: "pusher", PasswordFile: pwFile, TimeoutSeconds: 5},
			200, "/metrics/", map[string]string{"job": "waldur-gitops", "instance": "site-a b", "command": "sync"}, auth, ""},
		{"a base path, no auth", config.Metrics{PushgatewayURL: srv.URL + "/pgw/", Job: "gitops", TimeoutSeconds: 5},
			202, "/pgw/metrics/", map[string]string{"job": "gitops", "command": "sync"}, "", ""},
		{"refused", config.Metrics{PushgatewayURL: srv.URL, Job: "waldur-gitops", Username: "pusher", PasswordFile: pwFile, TimeoutSeconds: 5},
			401, "/metrics/", map[string]string{"job": "waldur-gitops", "command": "sync"}, auth, "unexpected status code 401"},
		{"refused, naming the password file", config.Metrics{PushgatewayURL: srv.URL, Job: "waldur-gitops", Username: "pusher", PasswordFile: pwFile, TimeoutSeconds: 5},
			401, "/metrics/", map[string]string{"job": "waldur-gitops", "command": "sync"}, auth, "(check the credential, metrics.username pusher with metrics.password_file " + pwFile + ")"},
		{"password file missing", config.Metrics{PushgatewayURL: srv.URL, Job: "waldur-gitops", Username: "pusher", PasswordFile: filepath.Join(dir, "none"), TimeoutSeconds: 5},
			200, "", nil, "", "metrics.password_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, status = nil, tt.status
			err := metrics.Push(context.Background(), &tt.cfg, "sync", r.Registry())
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), password) || !strings.Contains(err.Error(), srv.URL) {
					t.Errorf("error %q shows the password or lacks the URL", err)
				}
			}
			if tt.wantPath == "" {
				if len(got) != 0 {
					t.Errorf("pushed %d times, want none", len(got))
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d requests, want 1", len(got))
			}
			req := got[0]
			if req.method != http.MethodPut || !strings.HasPrefix(req.path, tt.wantPath+"job/") || req.auth != tt.wantAuth || !strings.HasPrefix(req.contentType, "text/plain") {
				t.Errorf("request %s %s auth %q type %q, want PUT %s… auth %q", req.method, req.path, req.auth, req.contentType, tt.wantPath, tt.wantAuth)
			}
			if labels, ok := metricstest.GroupingLabels(req.path); !ok || !maps.Equal(labels, tt.wantJob) {
				t.Errorf("pushed to the group %v (%s), want %v", labels, req.path, tt.wantJob)
			}
			fams := parse(t, bytes.NewReader(req.body))
			check(t, fams, []sample{
				{name: "waldur_gitops_runs_total", labels: map[string]string{"result": "partial"}, want: 1},
				{name: "waldur_gitops_last_run_exit_code", want: 3},
				{name: "waldur_gitops_last_run_objects", labels: map[string]string{"stage": "git", "kind": "Commit", "action": "create"}, want: 1},
				{name: "waldur_gitops_build_info", labels: map[string]string{"version": "v1"}, want: 1},
			})
		})
	}
}

// TestPushTimeout: a Pushgateway that does not answer is given up on after
// timeout_seconds.
func TestPushTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	start := time.Now()
	err := metrics.Push(context.Background(), &config.Metrics{PushgatewayURL: srv.URL, Job: "j", TimeoutSeconds: 1}, "sync", metrics.New("v").Registry())
	if err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("push to a silent gateway: %v after %s", err, time.Since(start))
	}
}

// TestOffboardingMetrics: the users a run worked on are counted by offering
// and state; those it set Deleted give the time from the request to the end
// of their access; a dry run observes no latency.
func TestOffboardingMetrics(t *testing.T) {
	req := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	recs := []report.Offboard{
		{Offering: "ns", OfferingUser: "u1", State: waldur.OfferingUserDeleted, RequestedAt: req, AccessEndedAt: req.Add(400 * time.Second)},
		{Offering: "ns", OfferingUser: "u2", State: waldur.OfferingUserDeleting},
		{Offering: "ns", OfferingUser: "u3", State: waldur.OfferingUserDeleting},
		{Offering: "ut", OfferingUser: "u4", State: waldur.OfferingUserDeleted, AccessEndedAt: req},
	}
	for _, tt := range []struct {
		name     string
		dryRun   bool
		observed float64
	}{{"sync", false, 1}, {"dry run", true, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			r := metrics.New("test")
			rep := report.New("sync", "test", tt.dryRun, req)
			rep.Offboarding = recs
			rep.Finish(0, req.Add(time.Minute))
			r.Observe(metrics.Run{Report: rep, Result: metrics.ResultOK})
			fams := families(t, r.Registry())
			check(t, fams, []sample{
				{name: "waldur_gitops_offboarding_users", labels: map[string]string{"offering": "ns", "state": "Deleting"}, want: 2},
				{name: "waldur_gitops_offboarding_users", labels: map[string]string{"offering": "ns", "state": "Deleted"}, want: 1},
			})
			got := map[string][2]float64{} // offering → count, sum
			if mf := fams["waldur_gitops_offboarding_seconds"]; mf != nil {
				for _, m := range mf.GetMetric() {
					got[m.GetLabel()[0].GetValue()] = [2]float64{float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()}
				}
			}
			want := map[string][2]float64{}
			if tt.observed > 0 {
				want["ns"] = [2]float64{1, 400} // u4 has no request time
			}
			if !maps.Equal(got, want) {
				t.Errorf("offboarding_seconds count and sum by offering: %v, want %v", got, want)
			}
		})
	}
}
