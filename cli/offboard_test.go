package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// utOffering is the UT namespaces offering of the example.
const utOffering = waldur.UUID("41e0012c52dd79ad2bebfde833ef9fe7")

// offboardSite is the example served by the in-repo Waldur, with Keycloak
// and a Git server, and a project of three UT namespaces whose team is ute,
// max, zoe and wim, each an offering user of the offering.
type offboardSite struct {
	wsrv  *waldurtest.Server
	kc    *kctest.Server
	cfg   string
	repo  string
	users map[string]waldur.UUID // offering username → offering user
}

func newOffboardSite(t *testing.T) *offboardSite {
	t.Helper()
	wsrv, waldurCfg := serveExample(t)
	kc := kctest.NewServer()
	t.Cleanup(kc.Close)
	gsrv, repo, url := gitRepo(t)
	s := &offboardSite{wsrv: wsrv, kc: kc, repo: repo, users: map[string]waldur.UUID{}}
	s.cfg = withGit(t, keycloakConfigFrom(t, waldurCfg, kc.URL, "", true), gsrv, url)
	addExampleUsers(t, kc, s.cfg)
	kc.SetTokenLifespan("hpc", 600)
	for _, m := range teamEditProject(t, wsrv, kc) {
		s.users[m.OfferingUserUsername] = wsrv.AddOfferingUser(utOffering, waldur.OfferingUser{
			Username: m.OfferingUserUsername, UserUsername: m.Username, UserEmail: m.OfferingUserUsername + "@example.edu", State: "OK",
		})
	}
	return s
}

// sync runs sync and returns its report.
func (s *offboardSite) sync(t *testing.T, what string, want int) report.Run {
	t.Helper()
	code, _, stderr := run(t, "sync", "--config", s.cfg)
	if code != want {
		t.Fatalf("%s: exit %d, want %d\n%s", what, code, want, stderr)
	}
	return readReport(t, mustRead(t, filepath.Join(filepath.Dir(s.cfg), "report.json")))
}

// granted counts the three team-edit tenants in whose Keycloak groups name
// is a member, and those whose ManagedNamespace on the branch lists the
// user (by e-mail, the example's cr_user_identity_field).
func (s *offboardSite) granted(t *testing.T, name string) (groups, lists int) {
	t.Helper()
	files := strings.Fields(gittest.Git(t, s.repo, "ls-tree", "-r", "--name-only", "main"))
	for i := range 3 {
		slug := fmt.Sprintf("team-edit-%d", i)
		for _, f := range files {
			if strings.Contains(f, slug) && strings.Contains(f, "managednamespace-") {
				if strings.Contains(gittest.Git(t, s.repo, "show", "main:"+f), "- "+name+"@example.edu\n") {
					lists++
				}
			}
		}
	}
	return s.inGroups(name), lists
}

// inGroups counts the three team-edit tenants in whose Keycloak groups name
// is a member.
func (s *offboardSite) inGroups(name string) int {
	n := 0
	for i := range 3 {
		for _, role := range []string{"admin", "readwrite", "readonly"} {
			if slices.Contains(members(s.kc, fmt.Sprintf("/ns_team-edit-%d_%s", i, role)), name) {
				n++
				break
			}
		}
	}
	return n
}

// offboarded returns the report's record of an offering user.
func offboarded(t *testing.T, r report.Run, id waldur.UUID) report.Offboard {
	t.Helper()
	for _, o := range r.Offboarding {
		if o.OfferingUser == string(id) {
			return o
		}
	}
	t.Fatalf("no offboarding record of %s in %+v", id, r.Offboarding)
	return report.Offboard{}
}

// TestOffboardingEndToEnd: wim, one of a team, is requested for deletion in
// Waldur. sync claims him, renders him out of the project's three
// tenants and their Keycloak groups (ute stays everywhere), and sets him
// Deleted only once Keycloak, read back, lists him in no managed group:
// while Keycloak is unavailable he stays Deleting with the reason. A claim
// Waldur refuses leaves the user alone; a removal Keycloak refuses sends
// set_error_deleting, and the next run claims again and finishes.
func TestOffboardingEndToEnd(t *testing.T) {
	s := newOffboardSite(t)
	s.sync(t, "first sync", ExitOK)
	for _, name := range []string{"ute", "wim"} {
		if g, l := s.granted(t, name); g != 3 || l != 3 {
			t.Fatalf("%s after the first sync: in %d tenants' groups and %d user lists, want 3 and 3", name, g, l)
		}
	}

	// Keycloak is down for removals: the claim and the commit happen, the
	// groups still list wim, so Waldur does not hear "deleted".
	s.wsrv.SetOfferingUserState(s.users["wim"], waldur.OfferingUserRequestedDeletion)
	s.kc.Inject(kctest.Fault{Method: http.MethodDelete, Path: "/groups/", Status: http.StatusServiceUnavailable, Times: 1000})
	r := s.sync(t, "keycloak down", ExitKeycloak)
	s.kc.ClearFaults()
	rec := offboarded(t, r, s.users["wim"])
	if rec.State != waldur.OfferingUserDeleting || rec.Cause != changeset.CauseRemovalPending || !strings.Contains(rec.Reason, "still lists the user") || rec.ClaimedAt.IsZero() {
		t.Errorf("keycloak down: record %+v, want Deleting, removal_pending, still listed, claimed", rec)
	}
	if got := s.wsrv.OfferingUserState(s.users["wim"]); got != waldur.OfferingUserDeleting {
		t.Errorf("keycloak down: wim is %q in Waldur, want Deleting", got)
	}
	if g, l := s.granted(t, "wim"); g != 3 || l != 0 {
		t.Errorf("keycloak down: wim in %d tenants' groups (want 3: the removals failed) and %d user lists on the branch (want 0)", g, l)
	}

	// Keycloak back: the removal finishes and is proved.
	before := time.Now()
	r = s.sync(t, "keycloak back", ExitOK)
	rec = offboarded(t, r, s.users["wim"])
	head := strings.TrimSpace(gittest.Git(t, s.repo, "rev-parse", "main"))
	if rec.State != waldur.OfferingUserDeleted || rec.Verified != "branch" || rec.Commit != head {
		t.Errorf("keycloak back: record %+v, want Deleted, verified on the branch at %s", rec, head)
	}
	if lo, hi := before.Add(600*time.Second), time.Now().Add(600*time.Second); rec.AccessEndedAt.Before(lo) || rec.AccessEndedAt.After(hi) {
		t.Errorf("access ended at %v, want the proof's time plus the realm's 600 s token lifespan (%v … %v)", rec.AccessEndedAt, lo, hi)
	}
	if got := s.wsrv.OfferingUserState(s.users["wim"]); got != waldur.OfferingUserDeleted {
		t.Errorf("wim is %q in Waldur, want Deleted", got)
	}
	if g, l := s.granted(t, "wim"); g != 0 || l != 0 {
		t.Errorf("wim still in %d tenants' groups and %d user lists", g, l)
	}
	if g, l := s.granted(t, "ute"); g != 3 || l != 3 {
		t.Errorf("ute in %d tenants' groups and %d user lists, want 3 and 3", g, l)
	}
	r = s.sync(t, "deleted is final", ExitOK)
	if len(r.Offboarding) != 0 {
		t.Errorf("a Deleted user is worked on again: %+v", r.Offboarding)
	}

	// max is granted again while the tool claims him: Waldur refuses the
	// claim, max is left alone, read again (OK) and keeps his access.
	s.wsrv.SetOfferingUserState(s.users["max"], waldur.OfferingUserRequestedDeletion)
	claimPath := "/api/marketplace-offering-users/" + string(s.users["max"]) + "/set_deleting/"
	s.wsrv.OnRequest(func(req *http.Request, _ []byte) {
		if req.URL.Path == claimPath {
			s.wsrv.SetOfferingUserState(s.users["max"], "OK")
		}
	})
	r = s.sync(t, "refused claim", ExitOK)
	if rec := offboarded(t, r, s.users["max"]); rec.Cause != changeset.CauseClaimRefused || rec.State != "OK" {
		t.Errorf("refused claim: record %+v", rec)
	}
	if g, l := s.granted(t, "max"); g != 3 || l != 3 {
		t.Errorf("max after a refused claim: in %d tenants' groups and %d user lists, want 3 and 3", g, l)
	}

	// Keycloak refuses to take zoe out of her groups: set_error_deleting;
	// the next run claims her again and finishes.
	s.wsrv.SetOfferingUserState(s.users["zoe"], waldur.OfferingUserRequestedDeletion)
	s.kc.Inject(kctest.Fault{Method: http.MethodDelete, Path: "/groups/", Status: http.StatusForbidden, Times: 1000})
	r = s.sync(t, "keycloak refuses", ExitKeycloak)
	s.kc.ClearFaults()
	if rec := offboarded(t, r, s.users["zoe"]); rec.State != waldur.OfferingUserErrorDeleting || rec.Cause != changeset.CauseRemovalFailed {
		t.Errorf("keycloak refuses: record %+v, want Error deleting, removal_failed", rec)
	}
	if got := s.wsrv.OfferingUserState(s.users["zoe"]); got != waldur.OfferingUserErrorDeleting {
		t.Errorf("keycloak refuses: zoe is %q in Waldur, want Error deleting", got)
	}
	r = s.sync(t, "retry", ExitOK)
	if rec := offboarded(t, r, s.users["zoe"]); rec.State != waldur.OfferingUserDeleted {
		t.Errorf("retry: record %+v, want Deleted", rec)
	}
	if g, l := s.granted(t, "zoe"); g != 0 || l != 0 {
		t.Errorf("zoe still in %d tenants' groups and %d user lists", g, l)
	}
}

// TestOffboardingMassDryRunAndGuard: three of a team of four requested for
// deletion at once take nine (user, tenant) pairs of 24 memberships, which
// the access guard refuses when a team shrinks so (TestTeamEditPassesTheAccessGuard).
// render --dry-run shows every claim and every would-be Deleted user, with
// the time their access would end, and sends nothing; sync is not refused
// by the guard and sets all three Deleted.
func TestOffboardingMassDryRunAndGuard(t *testing.T) {
	s := newOffboardSite(t)
	s.sync(t, "first sync", ExitOK)
	leaving := []string{"max", "wim", "zoe"}
	for _, name := range leaving {
		s.wsrv.SetOfferingUserState(s.users[name], waldur.OfferingUserRequestedDeletion)
	}
	code, stdout, stderr := run(t, "render", "--config", s.cfg, "--dry-run", "-o", "json")
	if code != ExitDiff {
		t.Fatalf("render --dry-run: exit %d, want %d\n%s", code, ExitDiff, stderr)
	}
	var plan struct {
		Guard       string
		Changes     []changeset.Entry
		Offboarding []report.Offboard
	}
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("plan: %v\n%s", err, stdout)
	}
	if plan.Guard != "" {
		t.Errorf("the dry run says the guard would refuse: %s", plan.Guard)
	}
	claims := 0
	for _, e := range plan.Changes {
		if e.Stage == "offboard" && strings.HasPrefix(e.Reason, "would claim") {
			claims++
		}
	}
	if claims != len(leaving) || len(plan.Offboarding) != len(leaving) {
		t.Errorf("dry run: %d claims and %d records, want %d each:\n%s", claims, len(plan.Offboarding), len(leaving), stdout)
	}
	for _, rec := range plan.Offboarding {
		if rec.State != waldur.OfferingUserDeleted || rec.AccessEndedAt.IsZero() || rec.Commit != "" {
			t.Errorf("dry-run record %+v: want would-be Deleted, an access-ended time, no commit yet", rec)
		}
	}
	for _, name := range leaving {
		if got := s.wsrv.OfferingUserState(s.users[name]); got != waldur.OfferingUserRequestedDeletion {
			t.Errorf("the dry run moved %s to %q", name, got)
		}
	}
	r := s.sync(t, "three leave", ExitOK)
	for _, name := range leaving {
		if rec := offboarded(t, r, s.users[name]); rec.State != waldur.OfferingUserDeleted {
			t.Errorf("%s: %+v, want Deleted", name, rec)
		}
		if g, l := s.granted(t, name); g != 0 || l != 0 {
			t.Errorf("%s still in %d tenants' groups and %d user lists", name, g, l)
		}
	}
}

// TestOffboardingApply: the same workflow with apply on a real
// kube-apiserver: wim, requested for deletion, leaves the rwUsers of the
// three ManagedNamespaces in the cluster and their Keycloak groups, ute
// stays, and Waldur hears "deleted" with the removal verified as applied.
func TestOffboardingApply(t *testing.T) {
	ctx := context.Background()
	cluster := startCluster(t)
	nsFile := filepath.Join(t.TempDir(), "namespaces.yaml")
	writeFile(t, nsFile, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: waldur-system\n")
	if _, err := cluster.ApplyFiles(ctx, "../apply/testdata/crds/managednamespace.yaml", nsFile); err != nil {
		t.Fatal(err)
	}
	s := newOffboardSite(t)
	// Only the UT namespaces offering goes to this cluster.
	s.cfg = onlyOffering(t, s.cfg, "UT namespaces")
	kubeconfig := cluster.KubeconfigPath(kubetest.Admin)
	apply := func(what string) report.Run {
		t.Helper()
		code, stdout, stderr := run(t, "apply", "--config", s.cfg, "--kubeconfig", kubeconfig, "--output", "json")
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s", what, code, stderr)
		}
		return readReport(t, []byte(stdout))
	}
	dyn, err := dynamic.NewForConfig(cluster.RESTConfig(kubetest.Admin))
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "provisioning.hpc.ut.ee", Version: "v1", Resource: "managednamespaces"}
	rwUsers := func(i int) []string {
		t.Helper()
		u, err := dyn.Resource(gvr).Namespace("waldur-system").Get(ctx, fmt.Sprintf("waldur-team-edit-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "rwUsers")
		return l
	}
	apply("first apply")
	if got := rwUsers(0); !slices.Equal(got, []string{"ute@example.edu", "wim@example.edu"}) {
		t.Fatalf("rwUsers after the first apply: %v", got)
	}
	s.wsrv.SetOfferingUserState(s.users["wim"], waldur.OfferingUserRequestedDeletion)
	r := apply("wim leaves")
	rec := offboarded(t, r, s.users["wim"])
	if rec.State != waldur.OfferingUserDeleted || rec.Verified != "applied" || rec.Commit != "" || rec.AccessEndedAt.IsZero() {
		t.Errorf("record %+v, want Deleted, verified as applied, no commit, an access-ended time", rec)
	}
	for i := range 3 {
		if got := rwUsers(i); !slices.Equal(got, []string{"ute@example.edu"}) {
			t.Errorf("waldur-team-edit-%d rwUsers in the cluster: %v, want ute only", i, got)
		}
	}
	if g := s.inGroups("wim"); g != 0 {
		t.Errorf("wim still in %d tenants' Keycloak groups", g)
	}
	if g := s.inGroups("ute"); g != 3 {
		t.Errorf("ute in %d tenants' Keycloak groups, want 3", g)
	}
	if got := s.wsrv.OfferingUserState(s.users["wim"]); got != waldur.OfferingUserDeleted {
		t.Errorf("wim is %q in Waldur, want Deleted", got)
	}
}

// onlyOffering rewrites the config at path to keep one offering (by name)
// and returns the new config's path.
func onlyOffering(t *testing.T, path, name string) string {
	t.Helper()
	text := string(mustRead(t, path))
	head, list, ok := strings.Cut(text, "\nofferings:\n")
	if !ok {
		t.Fatalf("no offerings in %s", path)
	}
	var keep []string
	for _, o := range strings.Split("\n"+list, "\n  - name: ")[1:] {
		if strings.HasPrefix(o, name+"\n") {
			keep = append(keep, o)
		}
	}
	out := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, out, head+"\nofferings:\n  - name: "+strings.Join(keep, "\n  - name: "))
	return out
}

// TestOffboardingGitOpsVerifiedAtCluster: in GitOps mode with cluster read
// access (order_done_on: applied), a leaver stays Deleting while the
// cluster's ManagedNamespaces still name them — the commit removing them is
// on the branch but the consumer has not applied it — and is set Deleted,
// verified at the cluster, once it has.
func TestOffboardingGitOpsVerifiedAtCluster(t *testing.T) {
	ctx := context.Background()
	cluster := startCluster(t)
	nsFile := filepath.Join(t.TempDir(), "namespaces.yaml")
	writeFile(t, nsFile, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: waldur-system\n")
	if _, err := cluster.ApplyFiles(ctx, "../apply/testdata/crds/managednamespace.yaml", nsFile); err != nil {
		t.Fatal(err)
	}
	s := newOffboardSite(t)
	s.cfg = onlyOffering(t, s.cfg, "UT namespaces")
	text := string(mustRead(t, s.cfg))
	text = strings.Replace(text, "  - name: UT namespaces\n", "  - name: UT namespaces\n    order_done_on: applied\n    order_done_timeout_seconds: 1\n", 1)
	text = strings.Replace(text, "    backend_settings:\n", "    backend_settings:\n      kubeconfig_path: "+cluster.KubeconfigPath(kubetest.Admin)+"\n", 1)
	writeFile(t, s.cfg, text)
	sync := func(what string) report.Run {
		t.Helper()
		code, _, stderr := run(t, "sync", "--config", s.cfg)
		if code != ExitOK && code != ExitPartial {
			t.Fatalf("%s: exit %d\n%s", what, code, stderr)
		}
		return readReport(t, mustRead(t, filepath.Join(filepath.Dir(s.cfg), "report.json")))
	}
	// consume applies the branch's ManagedNamespaces, as Flux or Argo CD would.
	consume := func() {
		t.Helper()
		var docs []string
		for p, data := range gittest.Files(t, s.repo, "main") {
			if strings.Contains(p, "/managednamespace-") {
				docs = append(docs, data)
			}
		}
		f := filepath.Join(t.TempDir(), "consumed.yaml")
		writeFile(t, f, strings.Join(docs, "\n---\n"))
		if _, err := cluster.ApplyFiles(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	sync("first sync")
	consume()
	s.wsrv.SetOfferingUserState(s.users["wim"], waldur.OfferingUserRequestedDeletion)
	rec := offboarded(t, sync("wim leaves"), s.users["wim"])
	if rec.State != waldur.OfferingUserDeleting || rec.Cause != changeset.CauseRemovalPending || !strings.Contains(rec.Reason, "the cluster's ManagedNamespace waldur-system/waldur-team-edit-") {
		t.Errorf("before the consumer applies: %+v, want Deleting, the cluster still naming wim", rec)
	}
	if _, l := s.granted(t, "wim"); l != 0 {
		t.Errorf("wim still in %d user lists on the branch", l)
	}
	// Runs with nothing new: the second finds the branch holding what its
	// inputs render to and builds no files (a hollow render) but for the
	// proof, which must still read the cluster.
	hollow := false
	for _, what := range []string{"not applied yet", "not applied yet, again"} {
		code, _, stderr := run(t, "sync", "--config", s.cfg, "--log-level", "info")
		if code != ExitOK && code != ExitPartial {
			t.Fatalf("%s: exit %d\n%s", what, code, stderr)
		}
		hollow = hollow || strings.Contains(stderr, `"hollow":true`)
		rec := offboarded(t, readReport(t, mustRead(t, filepath.Join(filepath.Dir(s.cfg), "report.json"))), s.users["wim"])
		if rec.State != waldur.OfferingUserDeleting || !strings.Contains(rec.Reason, "the cluster's ManagedNamespace") {
			t.Errorf("%s: %+v, want Deleting, the cluster still naming wim", what, rec)
		}
	}
	if !hollow {
		t.Error("no run while the consumer had not applied rendered hollow")
	}
	consume()
	rec = offboarded(t, sync("applied"), s.users["wim"])
	head := strings.TrimSpace(gittest.Git(t, s.repo, "rev-parse", "main"))
	if rec.State != waldur.OfferingUserDeleted || rec.Verified != "cluster" || rec.Commit != head {
		t.Errorf("after the consumer applied: %+v, want Deleted, verified at the cluster, commit %s", rec, head)
	}
}
