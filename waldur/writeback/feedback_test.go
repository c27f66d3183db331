package writeback_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
	"github.com/waldur/waldur-gitops/waldur/writeback"
)

// feedbackRig runs the feedback stage over the in-repo Waldur as the cycle
// does: read, render, publish (the render is what the destination holds),
// report.
type feedbackRig struct {
	t   testing.TB
	srv *waldurtest.Server
	src *source.API
	fb  *writeback.ResourceFeedback
	rdr engine.Renderer
}

func newFeedbackRig(t testing.TB, srv *waldurtest.Server) *feedbackRig {
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	l, err := config.Parse([]byte(`offerings:
- name: Plain
  waldur_api_url: `+srv.URL()+`
  waldur_offering_uuid: `+offeringUUID+`
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
`), t.TempDir()+"/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := render.LoadTemplates(l.Config)
	if err != nil {
		t.Fatal(err)
	}
	src := &source.API{Offerings: l.Offerings}
	return &feedbackRig{t: t, srv: srv, src: src, rdr: render.New(l.Config, tpls).Render,
		fb: &writeback.ResourceFeedback{Source: src, Offerings: l.Offerings, LastSyncInterval: 0}}
}

// run is one cycle's feedback; it returns the entries and the writes sent.
func (r *feedbackRig) run(dryRun bool) ([]string, map[string]int) {
	r.t.Helper()
	ctx := context.Background()
	st, err := r.src.Read(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	res, err := r.rdr(st)
	if err != nil {
		r.t.Fatal(err)
	}
	pub := &writeback.Published{After: res.Tree(nil), Ref: "c0ffee"}
	cs, calls, err := changeset.Apart(r.fb.Report(ctx, st, res, pub, nil, writeback.Options{DryRun: dryRun, Guard: guard.Options{MaxFraction: 0.1, MinCount: 5}}))
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, e := range cs.Entries {
		out = append(out, e.String())
	}
	return out, calls
}

func writes(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

func TestFeedbackResourceState(t *testing.T) {
	srv := waldurtest.New(t)
	erred := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "alpha", Name: "alpha", State: waldur.ResourceErred, Limits: waldur.Limits{"cpu": "2"}})
	bad := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "beta", Name: "beta", State: waldur.ResourceOK, Limits: waldur.Limits{"cpu": "-1"}})
	r := newFeedbackRig(t, srv)

	// A dry run sends nothing and says what it would send.
	entries, calls := r.run(true)
	if writes(calls) != 0 || len(entries) == 0 {
		t.Fatalf("dry run: %v %v", entries, calls)
	}
	if got, _ := srv.Resource(erred); got.State != waldur.ResourceErred {
		t.Fatalf("dry run changed the state: %s", got.State)
	}

	entries, calls = r.run(false)
	if calls[waldur.KindResourceOK] != 1 || calls[waldur.KindResourceErred] != 1 || calls[waldur.KindResourceMetadata] != 1 || calls[waldur.KindResourceLastSync] != 1 {
		t.Fatalf("first run: %v\n%s", calls, strings.Join(entries, "\n"))
	}
	if got, _ := srv.Resource(erred); got.State != waldur.ResourceOK || got.BackendMetadata["commit"] != "c0ffee" || got.BackendMetadata["namespace"] != "waldur-alpha" {
		t.Errorf("published resource: %s %v", got.State, got.BackendMetadata)
	}
	if got, _ := srv.Resource(bad); got.State != waldur.ResourceErred || !strings.Contains(srv.ResourceError(bad), "cpu") {
		t.Errorf("unrenderable resource: %s %q", got.State, srv.ResourceError(bad))
	}

	// A second run with nothing changed writes nothing.
	entries, calls = r.run(false)
	if writes(calls) != 0 || len(entries) != 0 {
		t.Errorf("no-op run: %v %v", calls, entries)
	}

	// Once it renders, the erred resource is set OK again.
	c, err := r.src.Client(&r.fb.Offerings[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetResourceLimits(context.Background(), bad, waldur.Limits{"cpu": "1"}); err != nil {
		t.Fatal(err)
	}
	_, calls = r.run(false)
	if got, _ := srv.Resource(bad); got.State != waldur.ResourceOK || calls[waldur.KindResourceOK] != 1 {
		t.Errorf("fixed resource: %s %v", got.State, calls)
	}
	if len(srv.Violations()) != 0 {
		t.Errorf("contract violations: %v", srv.Violations())
	}
}

func TestFeedbackGuardRefusesErringEverything(t *testing.T) {
	srv := waldurtest.New(t)
	var ids []waldur.UUID
	for _, s := range []string{"a", "b", "c", "d", "e", "f"} {
		ids = append(ids, srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: s, Name: s, State: waldur.ResourceOK, Limits: waldur.Limits{"cpu": "-1"}}))
	}
	r := newFeedbackRig(t, srv)
	entries, calls := r.run(false)
	if calls[waldur.KindResourceErred] != 0 || len(entries) != 1 || !strings.Contains(entries[0], "refused: 6 of 6") {
		t.Fatalf("guard: %v %v", calls, entries)
	}
	for _, id := range ids {
		if got, _ := srv.Resource(id); got.State != waldur.ResourceOK {
			t.Errorf("%s set %s", id, got.State)
		}
	}
}

func TestFeedbackMembershipStatuses(t *testing.T) {
	srv := waldurtest.New(t)
	project := waldur.UUID("9a000000000040008000000000000001")
	id := srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, ProjectUUID: project, Slug: "alpha", Name: "alpha", State: waldur.ResourceOK,
		Limits: waldur.Limits{"cpu": "2"}, OfferingPluginOptions: &waldur.PluginOptions{EnableMembershipSyncStatus: true}})
	srv.SetTeam(project, []waldur.TeamMember{
		{UUID: "a0000000000040008000000000000001", Username: "ann", Role: "PROJECT.ADMIN", OfferingUserUsername: "ann"},
		{UUID: "a0000000000040008000000000000002", Username: "bob", Role: "PROJECT.MEMBER", OfferingUserUsername: "bob"},
	})
	r := newFeedbackRig(t, srv)
	r.fb.Missing = func() map[string]string { return map[string]string{"bob": "user bob not found in Keycloak realm hpc"} }
	_, calls := r.run(false)
	if calls[waldur.KindMembershipStatus] != 1 {
		t.Fatalf("calls %v", calls)
	}
	got := srv.MembershipSyncStatuses(id)
	if len(got) != 2 || got[0].Username != "ann" || got[0].State != waldur.MemberSynced ||
		got[1].Username != "bob" || got[1].State != waldur.MemberMissingInIDP || !strings.Contains(got[1].Message, "not found") {
		t.Errorf("statuses %+v", got)
	}
	// Unchanged: not sent again.
	if _, calls = r.run(false); writes(calls) != 0 {
		t.Errorf("second run: %v", calls)
	}
	// Keycloak refuses ann's membership: her state becomes error, with why.
	r.fb.Failed = func() map[string]string { return map[string]string{"ann": "add member ann: 500 Internal Server Error"} }
	if _, calls = r.run(false); calls[waldur.KindMembershipStatus] != 1 {
		t.Fatalf("after a failed membership: %v", calls)
	}
	if got := srv.MembershipSyncStatuses(id); len(got) != 2 || got[0].State != waldur.MemberError || !strings.Contains(got[0].Message, "500") {
		t.Errorf("statuses after a failed membership %+v", got)
	}
	if len(srv.Violations()) != 0 {
		t.Errorf("contract violations: %v", srv.Violations())
	}
}

// TestFeedbackNoOpWritesAt1000: the first contact with 1,000 resources sends
// every backend_metadata at once but spreads refresh_last_sync over the runs
// of one last_sync_interval (a quarter each, runs every 15m against 1h);
// after that, a run that changes nothing sends no write to Waldur.
func TestFeedbackNoOpWritesAt1000(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 resources")
	}
	srv := waldurtest.New(t)
	for i := range 1000 {
		srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "r" + strconv.Itoa(i), State: waldur.ResourceOK, Limits: waldur.Limits{"cpu": "1"}})
	}
	r := newFeedbackRig(t, srv)
	r.fb.RunInterval = 15 * time.Minute
	if _, calls := r.run(false); calls[waldur.KindResourceMetadata] != 1000 || calls[waldur.KindResourceLastSync] != 250 {
		t.Fatalf("first run: %v", calls)
	}
	for run := 2; run <= 4; run++ {
		if _, calls := r.run(false); writes(calls) != 250 || calls[waldur.KindResourceLastSync] != 250 {
			t.Fatalf("run %d: %v, want the next 250 refresh_last_sync and nothing else", run, calls)
		}
	}
	_, calls := r.run(false)
	if writes(calls) != 0 {
		t.Errorf("no-op run wrote %v", calls)
	}
	t.Logf("no-op run at 1,000 resources: %d writes", writes(calls))
}

// BenchmarkFirstPass10k is the feedback of a first sync of 10,000 resources
// — the listing read, the render and every write-back it sends — against the
// in-repo Waldur with 30 ms added to every request, as a real Waldur might
// answer, for several orders.write_concurrency (BENCHMARKS.md,
// "Write-backs"). writes/s and the writes themselves are reported.
func BenchmarkFirstPass10k(b *testing.B) {
	for _, writers := range []int{4, 8, 16, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			var total time.Duration
			var sent int
			for range b.N {
				b.StopTimer()
				srv := waldurtest.New(b)
				for i := range 10000 {
					srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: "r" + strconv.Itoa(i), State: waldur.ResourceOK, Limits: waldur.Limits{"cpu": "1"}})
				}
				srv.SetDelay("/", 30*time.Millisecond)
				r := newFeedbackRig(b, srv)
				r.fb.Writers, r.fb.RunInterval = writers, 15*time.Minute
				r.src.Writers = writers
				b.StartTimer()
				start := time.Now()
				_, calls := r.run(false)
				total += time.Since(start)
				sent += writes(calls)
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "pass-s")
			b.ReportMetric(float64(sent)/float64(b.N), "writes")
			b.ReportMetric(float64(sent)/total.Seconds(), "writes/s")
		})
	}
}
