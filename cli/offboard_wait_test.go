package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/internal/testenv/kubetest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestOffboardingWaitsForTheConsumer: in GitOps mode with
// order_done_on: applied, the proof waits within the run (up to
// order_done_timeout_seconds) for the consumer to apply the removing
// commit, as the orders' wait does, so the run that pushed the removal
// sets the user Deleted once the cluster no longer names them, instead of
// leaving them Deleting until the next run (an hour away with serve
// --events and the default interval).
func TestOffboardingWaitsForTheConsumer(t *testing.T) {
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
	text = strings.Replace(text, "  - name: UT namespaces\n", "  - name: UT namespaces\n    order_done_on: applied\n    order_done_timeout_seconds: 60\n", 1)
	text = strings.Replace(text, "    backend_settings:\n", "    backend_settings:\n      kubeconfig_path: "+cluster.KubeconfigPath(kubetest.Admin)+"\n", 1)
	writeFile(t, s.cfg, text)
	// consume applies the branch's ManagedNamespaces, as Flux would.
	consume := func(t *testing.T) error {
		var docs []string
		for p, data := range gittest.Files(t, s.repo, "main") {
			if strings.Contains(p, "/managednamespace-") {
				docs = append(docs, data)
			}
		}
		f := filepath.Join(t.TempDir(), "consumed.yaml")
		writeFile(t, f, strings.Join(docs, "\n---\n"))
		_, err := cluster.ApplyFiles(ctx, f)
		return err
	}
	s.sync(t, "first sync", ExitOK)
	if err := consume(t); err != nil {
		t.Fatal(err)
	}
	head := func() string {
		out, _ := exec.Command("git", "-C", s.repo, "rev-parse", "main").Output()
		return strings.TrimSpace(string(out))
	}
	before := head()
	// The consumer: it applies the next commit a second after it lands,
	// while the run that pushed it is still proving.
	applied := make(chan error, 1)
	go func() {
		for head() == before {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Second)
		applied <- consume(t)
	}()
	s.wsrv.SetOfferingUserState(s.users["wim"], waldur.OfferingUserRequestedDeletion)
	start := time.Now()
	rec := offboarded(t, s.sync(t, "wim leaves", ExitOK), s.users["wim"])
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	if rec.State != waldur.OfferingUserDeleted || rec.Verified != "cluster" || rec.Commit != head() {
		t.Errorf("the run that pushed the removal: %+v, want Deleted, verified at the cluster, commit %s", rec, head())
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the run took %s: the wait did not end when the cluster was clean", took)
	}
	if got := s.wsrv.OfferingUserState(s.users["wim"]); got != waldur.OfferingUserDeleted {
		t.Errorf("Waldur holds wim %q", got)
	}
}
