package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/internal/testenv/gittest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestServeEventsOffboarding: with serve --events, a deletion request made
// in Waldur (an offering_user event) is claimed, removed from the pushed
// tree and reported Deleted within seconds, without waiting for the
// hour-long interval.
func TestServeEventsOffboarding(t *testing.T) {
	b, wsrv, _, repo, cfg := eventsSetup(t, "")
	const tek = waldur.UUID("856be6d14cacddb9c1044c24b6734e93") // tek, an offering user of Plain namespaces
	s := startServe(t, "--config", cfg, "--events", "--events-window", "200ms", "--interval", "1h")
	s.waitRun(time.Time{})
	waitSubscribed(t, b, wsrv, 4)
	if !treeNames(t, repo, "tek") {
		t.Fatal("tek is bound nowhere before the request")
	}
	start := time.Now()
	wsrv.SetOfferingUserState(tek, waldur.OfferingUserRequestedDeletion)
	for wsrv.OfferingUserState(tek) != waldur.OfferingUserDeleted {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("tek is %q 15s after the request:\n%s", wsrv.OfferingUserState(tek), s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("request to set_deleted: %s", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("the offboarding took %s", took)
	}
	if treeNames(t, repo, "tek") {
		t.Error("tek is still bound in the pushed tree")
	}
	m := s.scrape()
	if v, _ := m.Value("waldur_gitops_events_received_total", map[string]string{"object_type": "offering_user"}); v < 1 {
		t.Errorf("offering_user events received = %v", v)
	}
}

// treeNames reports whether a RoleBinding on the branch names the user (the
// example binds users as oidc:<username>).
func treeNames(t *testing.T, repo, user string) bool {
	t.Helper()
	for p, data := range gittest.Files(t, repo, "main") {
		if strings.Contains(p, "/rolebinding-") && strings.Contains(data, "name: oidc:"+user+"\n") {
			return true
		}
	}
	return false
}
