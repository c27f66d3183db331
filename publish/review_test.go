package publish_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/forge/forgetest"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/quotasafe"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/review"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// offeringUUID is the offering the tests add their resources to.
const offeringUUID = "0ff00000000040008000000000000042"

// Risky changes wait on a review branch (review.risky: branch), on a real
// bare repository: a Terminate order's removal goes to
// waldur-gitops/review/<digest>, based on the main tip, while main keeps the
// tenant and the order stays executing with the reason; a run that finds the
// same change re-uses the branch; once a person merges it, the next run sets
// the order done and deletes the branch. A second Terminate, cancelled in
// Waldur, has its branch deleted and its tenant stays. Additive changes (a new
// tenant) go to main directly.
func TestRiskyChangesWaitOnAReviewBranch(t *testing.T) {
	srv := waldurtest.New(t)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	add := func(slug string) waldur.UUID {
		return srv.AddResource(waldur.Resource{OfferingUUID: offeringUUID, Slug: slug, CustomerSlug: "c", ProjectSlug: "p", State: waldur.ResourceOK, Limits: waldur.Limits{"cpu": "2"}})
	}
	alpha, beta := add("alpha"), add("beta")
	repo := filepath.Join(t.TempDir(), "tenants.git")
	gittest.InitBare(t, repo, "main")
	gittest.Git(t, repo, "config", "receive.denyDeletes", "false")
	fg := forgetest.New(t, config.ForgeGitLab, "site/tenants", "glpat-test")
	t.Setenv("FORGE_TOKEN", "glpat-test")
	l, err := config.Parse([]byte(`git: {url: `+repo+`}
review:
  risky: branch
  forge: {type: gitlab, api_url: `+fg.APIURL()+`, repository: site/tenants, token_env: FORGE_TOKEN}
offerings:
- name: Plain
  waldur_api_url: `+srv.URL()+`
  waldur_offering_uuid: `+offeringUUID+`
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
`), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.FromConfig(l.Config, engine.Options{Publish: engine.Git, Orders: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(what string, dryRun bool) *engine.Outcome {
		t.Helper()
		o := e.Run(ctx, engine.Request{Command: "sync", DryRun: dryRun})
		if o.Err != nil && !dryRun {
			t.Fatalf("%s: %v\n%v", what, o.Err, o.Report.Changes)
		}
		return o
	}
	has := func(ref, tenant string) bool {
		_, ok := gittest.Files(t, repo, ref)["waldur/plain/cluster/waldur-"+tenant+"/kustomization.yaml"]
		return ok
	}
	branches := func() []string {
		out := strings.Fields(gittest.Git(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+gitsync.ReviewPrefix))
		return out
	}

	run("first", false)
	if !has("main", "alpha") || !has("main", "beta") || len(branches()) != 0 {
		t.Fatalf("new tenants go to main directly: branches %v", branches())
	}

	// The Terminate of beta: main keeps beta, a review branch removes it.
	term := srv.AddOrder(offeringUUID, waldur.Order{Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: beta})
	gamma := add("gamma") // additive, in the same run
	mainBefore := gittest.Head(t, repo, "main")
	dry := run("dry run", true)
	if gittest.Head(t, repo, "main") != mainBefore || len(branches()) != 0 {
		t.Fatal("the dry run wrote")
	}
	if e := entryOf(dry.Report.Changes, review.BranchKind, ""); e == nil || e.Action != changeset.Create || !strings.HasPrefix(e.Reason, "would be opened") {
		t.Errorf("dry run review entry %+v", e)
	}
	o := run("terminate", false)
	bs := branches()
	if len(bs) != 1 {
		t.Fatalf("review branches %v", bs)
	}
	if !has("main", "beta") || !has("main", "gamma") || has(bs[0], "beta") || !has(bs[0], "alpha") || !has(bs[0], "gamma") {
		t.Errorf("main: beta %v gamma %v; %s: beta %v", has("main", "beta"), has("main", "gamma"), bs[0], has(bs[0], "beta"))
	}
	if parent := strings.TrimSpace(gittest.Git(t, repo, "rev-parse", bs[0]+"^")); parent != gittest.Head(t, repo, "main") {
		t.Errorf("the review branch is on %s, main is at %s", parent, gittest.Head(t, repo, "main"))
	}
	if ord, _ := srv.Order(term); ord.State != waldur.OrderExecuting {
		t.Errorf("terminate order %s before the merge", ord.State)
	}
	if e := entryOf(o.Report.Changes, "Order", string(beta)); e == nil || !strings.Contains(e.Reason, "waits on review branch "+bs[0]) || !strings.Contains(e.Reason, "tenant removed") {
		t.Errorf("order entry %+v", e)
	}
	if e := entryOf(o.Report.Changes, review.ChangeKind, string(beta)); e == nil || e.Action != changeset.Skip {
		t.Errorf("review change entry %+v", e)
	}
	if rb := o.Report.ReviewBranches; len(rb) != 1 || rb[0].Name != bs[0] || rb[0].Commit != gittest.Head(t, repo, bs[0]) || rb[0].Opened.IsZero() {
		t.Errorf("report review branches %+v", rb)
	}
	var sum strings.Builder
	if err := o.Report.WriteSummary(&sum); err != nil || !strings.Contains(sum.String(), "review branch "+bs[0]+" waits for a person to merge it, open for") {
		t.Errorf("summary:\n%s", sum.String())
	}

	// One merge request for the branch, with the change and its order.
	if prs := fg.PRs(); len(prs) != 1 || prs[0].Head != bs[0] || prs[0].Base != "main" || !strings.Contains(prs[0].Body, string(term)) {
		t.Errorf("merge requests %+v", prs)
	}
	if e := entryOf(o.Report.Changes, review.RequestKind, ""); e == nil || e.Action != changeset.Create {
		t.Errorf("request entry %+v", e)
	}

	// Unchanged: the branch is re-used.
	tip := gittest.Head(t, repo, bs[0])
	o = run("again", false)
	if got := branches(); len(got) != 1 || got[0] != bs[0] || gittest.Head(t, repo, bs[0]) != tip {
		t.Errorf("branches %v (tip %s, was %s)", got, gittest.Head(t, repo, got[0]), tip)
	}
	if e := entryOf(o.Report.Changes, review.BranchKind, ""); e == nil || e.Action != changeset.Unchanged || !strings.Contains(e.Reason, "open since") {
		t.Errorf("re-used branch entry %+v", e)
	}
	if e := entryOf(o.Report.Changes, review.RequestKind, ""); e == nil || e.Action != changeset.Unchanged || fg.Posts() != 1 {
		t.Errorf("request entry on re-use %+v, %d posts", e, fg.Posts())
	}

	// A person merges it (a fast-forward): the order is done, the branch gone.
	gittest.Git(t, repo, "update-ref", "refs/heads/main", tip)
	o = run("merged", false)
	if ord, _ := srv.Order(term); ord.State != waldur.OrderDone {
		t.Errorf("terminate order %s after the merge; %v", ord.State, o.Report.Changes)
	}
	if got := branches(); len(got) != 0 || has("main", "beta") || !has("main", "alpha") || len(o.Report.ReviewBranches) != 0 {
		t.Errorf("after the merge: branches %v, report %v", got, o.Report.ReviewBranches)
	}

	// A Terminate cancelled in Waldur: its branch is deleted, the tenant stays.
	term2 := srv.AddOrder(offeringUUID, waldur.Order{Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: gamma})
	run("terminate gamma", false)
	if len(branches()) != 1 {
		t.Fatalf("branches %v", branches())
	}
	srv.AddOrder(offeringUUID, waldur.Order{UUID: term2, Type: waldur.OrderTerminate, State: "canceled", MarketplaceResourceUUID: gamma})
	o = run("cancelled", false)
	if got := branches(); len(got) != 0 || !has("main", "gamma") {
		t.Errorf("after the cancel: branches %v, gamma in main %v", got, has("main", "gamma"))
	}
	if e := entryOf(o.Report.Changes, review.BranchKind, ""); e == nil || e.Action != changeset.Delete {
		t.Errorf("deleted branch entry %+v", e)
	}
	_ = alpha
}

func entryOf(es []changeset.Entry, kind, resource string) *changeset.Entry {
	for i := range es {
		if es[i].Kind == kind && (resource == "" || es[i].Resource == resource) {
			return &es[i]
		}
	}
	return nil
}

// staticSource answers every read with a copy of one state.
type staticSource struct{ st *waldur.State }

func (s *staticSource) Read(context.Context) (*waldur.State, error) {
	st := *s.st
	st.Offerings = append([]waldur.OfferingState(nil), s.st.Offerings...)
	return &st, nil
}

// quota_shrink: review: a cut below usage goes to a review branch (here
// without any review: key), main keeps the quota in place, and the branch is
// deleted once the Update order no longer asks for the cut.
func TestQuotaCutBelowUsageGoesToReview(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "tenants.git")
	gittest.InitBare(t, repo, "main")
	gittest.Git(t, repo, "config", "receive.denyDeletes", "false")
	l, err := config.Parse([]byte(`git: {url: `+repo+`}
offerings:
- name: Plain
  waldur_api_url: https://waldur.example/api/
  waldur_api_token: x
  waldur_offering_uuid: `+offeringUUID+`
  backend_type: namespace
  quota_shrink: review
  backend_components:
    storage: {accounting_type: limit}
`), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const res = waldur.UUID("a0000000000040008000000000000001")
	r := waldur.Resource{UUID: res, Slug: "alpha", CustomerSlug: "c", ProjectSlug: "p", State: waldur.ResourceOK, Limits: waldur.Limits{"storage": "10"}}
	src := &staticSource{st: &waldur.State{Offerings: []waldur.OfferingState{{Name: "Plain", OfferingUUID: offeringUUID, Resources: []waldur.Resource{r}}}}}
	live := fakeQuotas{"waldur-alpha": {{Namespace: "waldur-alpha", Name: "waldur-quota",
		Hard: map[string]resource.Quantity{"requests.storage": resource.MustParse("10Gi")},
		Used: map[string]resource.Quantity{"requests.storage": resource.MustParse("6Gi")}}}}
	tpls, err := render.LoadTemplates(l.Config)
	if err != nil {
		t.Fatal(err)
	}
	rdr := render.New(l.Config, tpls)
	e := engine.New(engine.Seams{Source: src, Publisher: &publish.Git{Config: l.Config},
		Quotas:   &quotasafe.Stage{Offerings: l.Offerings, CanReview: true, Open: func(kube.Source) (quotasafe.Reader, error) { return live, nil }},
		Renderer: engine.ConfigRendering(l.Config, rdr)},
		rdr.Render, guard.Options{MaxFraction: 1, MinCount: 100}, nil)
	ctx := context.Background()
	quotaFile := "waldur/plain/cluster/waldur-alpha/resourcequota-waldur-quota.yaml"
	if o := e.Run(ctx, engine.Request{Command: "sync"}); o.Err != nil {
		t.Fatal(o.Err)
	}
	src.st.Offerings[0].Orders = []waldur.Order{{UUID: "d0000000000040008000000000000001", Type: waldur.OrderUpdate, State: waldur.OrderExecuting, MarketplaceResourceUUID: res, Limits: waldur.Limits{"storage": "4"}}}
	o := e.Run(ctx, engine.Request{Command: "sync"})
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	bs := strings.Fields(gittest.Git(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+gitsync.ReviewPrefix))
	if len(bs) != 1 {
		t.Fatalf("branches %v\n%v", bs, o.Report.Changes)
	}
	if m, b := gittest.Files(t, repo, "main")[quotaFile], gittest.Files(t, repo, bs[0])[quotaFile]; !strings.Contains(m, "requests.storage: 10Gi") || !strings.Contains(b, "requests.storage: 4Gi") {
		t.Errorf("main:\n%s\nreview:\n%s", m, b)
	}
	if e := entryOf(o.Report.Changes, review.ChangeKind, string(res)); e == nil || !strings.Contains(e.Reason, "quota_shrink: review") {
		t.Errorf("review entry %+v", e)
	}
	// Waldur no longer asks for the cut: the branch goes.
	src.st.Offerings[0].Orders = nil
	if o := e.Run(ctx, engine.Request{Command: "sync"}); o.Err != nil {
		t.Fatal(o.Err)
	}
	if bs := strings.Fields(gittest.Git(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+gitsync.ReviewPrefix)); len(bs) != 0 {
		t.Errorf("branches %v after the order went", bs)
	}
}

// fakeQuotas serves one namespace's quotas.
type fakeQuotas map[string][]kube.Quota

func (f fakeQuotas) Quotas(_ context.Context, ns string) ([]kube.Quota, error) { return f[ns], nil }
