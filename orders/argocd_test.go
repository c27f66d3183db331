package orders

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/kube"
)

type fakeApps struct {
	apps []kube.ArgoApplication
	err  error
	ns   string
}

func (f *fakeApps) ArgoApplications(_ context.Context, namespace string) ([]kube.ArgoApplication, error) {
	f.ns = namespace
	return f.apps, f.err
}

func TestArgoCDAppliedAt(t *testing.T) {
	const (
		repo   = "https://git.example.org/platform/tenants.git"
		commit = "0123456789abcdef0123456789abcdef01234567"
		old    = "fedcba9876543210fedcba9876543210fedcba98"
		dir    = "team-ns/cluster/waldur-a"
	)
	app := func(name, url, p, sync, rev, health string) kube.ArgoApplication {
		return kube.ArgoApplication{Namespace: "argocd", Name: name, Sources: []kube.ArgoSource{{RepoURL: url, Path: p}},
			SyncStatus: sync, SyncRevisions: []string{rev}, Health: health}
	}
	other := app("team-ns-waldur-b", repo, "waldur/team-ns/cluster/waldur-b", "Synced", commit, "Healthy")
	deleting := app("team-ns-waldur-a", repo, "waldur/team-ns/cluster/waldur-a", "Synced", commit, "Healthy")
	deleting.Deleting = true
	multi := kube.ArgoApplication{Name: "multi", Sources: []kube.ArgoSource{{RepoURL: "https://charts.example.org", Path: ""}, {RepoURL: repo, Path: "waldur/team-ns/cluster/waldur-a/"}},
		SyncStatus: "Synced", SyncRevisions: []string{"1.2.3", commit}, Health: "Healthy"}
	for _, tc := range []struct {
		name   string
		apps   []kube.ArgoApplication
		gone   bool
		ok     bool
		detail string
	}{
		{name: "synced at the commit and healthy", ok: true,
			apps: []kube.ArgoApplication{other, app("team-ns-waldur-a", repo, "waldur/team-ns/cluster/waldur-a", "Synced", commit, "Healthy")}},
		{name: "the repository URL written differently", ok: true,
			apps: []kube.ArgoApplication{app("a", "HTTPS://Git.Example.org/platform/tenants/", "waldur/team-ns/cluster/waldur-a", "Synced", commit, "Healthy")}},
		{name: "multi-source", ok: true, apps: []kube.ArgoApplication{multi}},
		{name: "no application yet", apps: []kube.ArgoApplication{other},
			detail: "no argo cd application reads waldur/team-ns/cluster/waldur-a yet"},
		{name: "another repository's application", detail: "no argo cd application reads",
			apps: []kube.ArgoApplication{app("a", "https://git.example.org/other.git", "waldur/team-ns/cluster/waldur-a", "Synced", commit, "Healthy")}},
		{name: "synced at an older commit",
			apps:   []kube.ArgoApplication{app("a", repo, "waldur/team-ns/cluster/waldur-a", "Synced", old, "Healthy")},
			detail: "argo cd application a is Synced at fedcba987654, want Synced at 0123456789ab"},
		{name: "out of sync at the commit",
			apps:   []kube.ArgoApplication{app("a", repo, "waldur/team-ns/cluster/waldur-a", "OutOfSync", commit, "Healthy")},
			detail: "argo cd application a is OutOfSync at 0123456789ab, want Synced"},
		{name: "not compared yet",
			apps:   []kube.ArgoApplication{{Name: "a", Sources: []kube.ArgoSource{{RepoURL: repo, Path: "waldur/" + dir}}}},
			detail: "argo cd application a is Unknown at no revision"},
		{name: "synced but degraded",
			apps:   []kube.ArgoApplication{app("a", repo, "waldur/team-ns/cluster/waldur-a", "Synced", commit, "Degraded")},
			detail: "argo cd application a is Synced but Degraded"},
		{name: "two applications for one directory",
			apps:   []kube.ArgoApplication{app("a", repo, "waldur/"+dir, "Synced", commit, "Healthy"), app("b", repo, "waldur/"+dir, "Synced", commit, "Healthy")},
			detail: "argo cd applications a, b all read waldur/team-ns/cluster/waldur-a: want one"},
		{name: "being deleted", apps: []kube.ArgoApplication{deleting},
			detail: "argo cd application team-ns-waldur-a is being deleted"},
		{name: "gone: no application left", gone: true, ok: true, apps: []kube.ArgoApplication{other}},
		{name: "gone: still there", gone: true, apps: []kube.ArgoApplication{other, app("team-ns-waldur-a", repo, "waldur/"+dir, "Synced", old, "Healthy")},
			detail: "argo cd application team-ns-waldur-a of waldur/team-ns/cluster/waldur-a still exists"},
		{name: "gone: finalizer still deleting", gone: true, apps: []kube.ArgoApplication{deleting},
			detail: "argo cd application team-ns-waldur-a of waldur/team-ns/cluster/waldur-a is being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeApps{apps: tc.apps}
			a := &ArgoCD{Apps: f, Namespace: "argocd", RepoURL: repo, Path: "waldur"}
			ok, detail, err := a.AppliedAt(context.Background(), Target{Dir: dir, Commit: commit, Gone: tc.gone})
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || !strings.HasPrefix(detail, tc.detail) || (tc.detail == "") != (detail == "") {
				t.Errorf("AppliedAt = %v, %q; want %v, %q", ok, detail, tc.ok, tc.detail)
			}
			if f.ns != "argocd" {
				t.Errorf("listed namespace %q, want argocd", f.ns)
			}
		})
	}
	t.Run("a list error is returned", func(t *testing.T) {
		boom := errors.New("forbidden")
		a := &ArgoCD{Apps: &fakeApps{err: boom}, RepoURL: repo, Path: "waldur"}
		if _, _, err := a.AppliedAt(context.Background(), Target{Dir: dir, Commit: commit}); !errors.Is(err, boom) {
			t.Errorf("err = %v, want %v", err, boom)
		}
	})
}

// TestArgoCDAppliedAtShardBranch: in the per-shard form a target names the
// shard branch, and the one Application following it must be Synced at the
// branch's tip — not at the main commit, nor found by the tenant's
// directory — whatever the shard's health.
func TestArgoCDAppliedAtShardBranch(t *testing.T) {
	const (
		repo   = "https://git.example.org/platform/tenants.git"
		main   = "0123456789abcdef0123456789abcdef01234567"
		tip    = "abcdefabcdefabcdefabcdefabcdefabcdefabcd"
		old    = "fedcba9876543210fedcba9876543210fedcba98"
		branch = "waldur-gitops/shards/waldur-team-ns-cluster-01"
	)
	app := func(name, url, rev, sync, synced, health string) kube.ArgoApplication {
		return kube.ArgoApplication{Namespace: "argocd", Name: name, Sources: []kube.ArgoSource{{RepoURL: url, Path: "_flux/team-ns.cluster.01", TargetRevision: rev}},
			SyncStatus: sync, SyncRevisions: []string{synced}, Health: health}
	}
	shard := app("waldur-team-ns-cluster-01", repo, branch, "Synced", tip, "Healthy")
	neighbour := app("waldur-team-ns-cluster-00", repo, "waldur-gitops/shards/waldur-team-ns-cluster-00", "Synced", old, "Healthy")
	deleting := shard
	deleting.Deleting = true
	perTenant := kube.ArgoApplication{Namespace: "argocd", Name: "team-ns-waldur-a", Sources: []kube.ArgoSource{{RepoURL: repo, Path: "waldur/team-ns/cluster/waldur-a"}},
		SyncStatus: "Synced", SyncRevisions: []string{main}, Health: "Healthy"}
	for _, tc := range []struct {
		name   string
		apps   []kube.ArgoApplication
		tip    string
		ok     bool
		detail string
	}{
		{name: "synced at the tip", tip: tip, ok: true, apps: []kube.ArgoApplication{neighbour, shard}},
		{name: "the branch written as a ref", tip: tip, ok: true,
			apps: []kube.ArgoApplication{app("a", repo, "refs/heads/"+branch, "Synced", tip, "Healthy")}},
		{name: "the repository URL written differently", tip: tip, ok: true,
			apps: []kube.ArgoApplication{app("a", "HTTPS://Git.Example.org/platform/tenants", branch, "Synced", tip, "Healthy")}},
		{name: "the shard's health is not the tenant's", tip: tip, ok: true,
			apps: []kube.ArgoApplication{app("a", repo, branch, "Synced", tip, "Degraded")}},
		{name: "synced at an older shard commit", tip: tip, apps: []kube.ArgoApplication{app("a", repo, branch, "Synced", old, "Healthy")},
			detail: "argo cd application a of branch " + branch + " is Synced at fedcba987654, want Synced at abcdefabcdef"},
		{name: "the main commit is not the shard's", tip: tip, apps: []kube.ArgoApplication{app("a", repo, branch, "Synced", main, "Healthy")},
			detail: "argo cd application a of branch " + branch + " is Synced at 0123456789ab, want Synced at abcdefabcdef"},
		{name: "out of sync at the tip", tip: tip, apps: []kube.ArgoApplication{app("a", repo, branch, "OutOfSync", tip, "Healthy")},
			detail: "argo cd application a of branch " + branch + " is OutOfSync at abcdefabcdef"},
		{name: "only another shard's application", tip: tip, apps: []kube.ArgoApplication{neighbour},
			detail: "no argo cd application follows branch " + branch + " yet"},
		{name: "a per-tenant application does not count", tip: tip, apps: []kube.ArgoApplication{perTenant},
			detail: "no argo cd application follows branch " + branch + " yet"},
		{name: "another repository's branch", tip: tip, apps: []kube.ArgoApplication{app("a", "https://git.example.org/other.git", branch, "Synced", tip, "Healthy")},
			detail: "no argo cd application follows branch"},
		{name: "two applications follow the branch", tip: tip,
			apps:   []kube.ArgoApplication{app("a", repo, branch, "Synced", tip, "Healthy"), app("b", repo, branch, "Synced", tip, "Healthy")},
			detail: "argo cd applications a, b all follow branch " + branch + ": want one"},
		{name: "being deleted", tip: tip, apps: []kube.ArgoApplication{deleting},
			detail: "argo cd application waldur-team-ns-cluster-01 is being deleted"},
		{name: "the branch has no commit", apps: []kube.ArgoApplication{shard},
			detail: "branch " + branch + " has no commit yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &ArgoCD{Apps: &fakeApps{apps: tc.apps}, Namespace: "argocd", RepoURL: repo, Path: "waldur"}
			ok, detail, err := a.AppliedAt(context.Background(), Target{Dir: "team-ns/cluster/waldur-a", Branch: branch, Commit: tc.tip})
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || !strings.HasPrefix(detail, tc.detail) || (tc.detail == "") != (detail == "") {
				t.Errorf("AppliedAt = %v, %q; want %v, %q", ok, detail, tc.ok, tc.detail)
			}
		})
	}
}

func TestShardTips(t *testing.T) {
	for _, tc := range []struct {
		name      string
		revisions map[string]string
		want      map[string]string
	}{
		{name: "shard branches", revisions: map[string]string{"waldur-a-cluster-00": "waldur-gitops/shards/waldur-a-cluster-00@sha1:0123"},
			want: map[string]string{"waldur-a-cluster-00": "0123"}},
		{name: "another shard's branch is not this one's", revisions: map[string]string{"waldur-a-cluster-00": "waldur-gitops/shards/waldur-a-cluster-01@sha1:0123"},
			want: map[string]string{}},
		{name: "OCI artifacts are no branches", revisions: map[string]string{"waldur-a-cluster-00": "latest@sha256:abcd"},
			want: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shardTips(tc.revisions); !maps.Equal(got, tc.want) {
				t.Errorf("shardTips = %v, want %v", got, tc.want)
			}
		})
	}
}

// Site.Consumers waits for Flux and for Argo CD as configured; in the
// shard-branch layout Argo CD runs the per-shard form, whose Applications
// are waited for at the shard tips instead of the shard Kustomizations.
func TestSiteConsumers(t *testing.T) {
	const ref = "0123456789abcdef0123456789abcdef01234567"
	plain := &gitsync.FluxLayout{Shards: 2}
	branches := &gitsync.FluxLayout{Shards: 2, Branches: true}
	revisions := map[string]string{"waldur-a-cluster-00": "waldur-gitops/shards/waldur-a-cluster-00@sha1:abcd"}
	for _, tc := range []struct {
		name               string
		flux               *gitsync.FluxLayout
		argo               bool
		ref                string
		wantFlux, wantArgo bool
		wantTips           map[string]string // nil: not the per-shard form
	}{
		{name: "flux", flux: plain, ref: ref, wantFlux: true},
		{name: "flux shard branches", flux: branches, ref: ref, wantFlux: true},
		{name: "argo cd per tenant", argo: true, ref: ref, wantArgo: true},
		{name: "argo cd with the git layout's shards", flux: plain, argo: true, ref: ref, wantFlux: true, wantArgo: true},
		{name: "argo cd per shard", flux: branches, argo: true, ref: ref, wantArgo: true, wantTips: map[string]string{"waldur-a-cluster-00": "abcd"}},
		{name: "nothing pushed or found", flux: branches, argo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Site{Flux: tc.flux, Branch: "main"}
			if tc.argo {
				s.Argo = &ArgoCD{Namespace: "argocd", RepoURL: "https://git.example.org/t.git", Path: "waldur"}
			}
			st := &Stage{}
			s.Consumers(st, tc.ref, revisions)
			if (st.Flux != nil) != tc.wantFlux || (st.Argo != nil) != tc.wantArgo {
				t.Fatalf("flux %v, argo %v; want %v, %v", st.Flux != nil, st.Argo != nil, tc.wantFlux, tc.wantArgo)
			}
			if st.Argo == nil {
				return
			}
			if st.ArgoCommit != ref || (st.Argo.shards != nil) != (tc.wantTips != nil) {
				t.Fatalf("argo at %q, per shard %v; want %q, %v", st.ArgoCommit, st.Argo.shards != nil, ref, tc.wantTips != nil)
			}
			if st.Argo.shards != nil && !maps.Equal(st.Argo.shards.tips, tc.wantTips) {
				t.Errorf("shard tips %v, want %v", st.Argo.shards.tips, tc.wantTips)
			}
			if s.Argo.shards != nil {
				t.Error("the site's ArgoCD was changed: it is shared by every run")
			}
		})
	}
}
