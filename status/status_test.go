package status_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/status"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var t0 = time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)

// scenario is three runs: a refused one, a failed one, then a partial one
// with every list filled.
func scenario() []status.Record {
	refused := report.New("serve", "test", false, t0)
	refused.Stages = []report.Stage{{Name: "waldur", DurationSeconds: 1}, {Name: "render", DurationSeconds: 0.5},
		{Name: "git", DurationSeconds: 0.2, Error: "deletion guard: 12 of 40 tenants would be removed without a Terminate order (limit 5)"}}
	refused.Finish(7, t0.Add(2*time.Second))

	failed := report.New("serve", "test", false, t0.Add(15*time.Minute))
	failed.Stages = []report.Stage{{Name: "waldur", DurationSeconds: 3, Error: "waldur GET https://waldur.example.org/api/: 503, ask alice@example.org"}}
	failed.Finish(4, t0.Add(15*time.Minute+3*time.Second))

	last := report.New("serve", "test", false, t0.Add(30*time.Minute))
	last.Stages = []report.Stage{{Name: "waldur", DurationSeconds: 1.25}, {Name: "approve", DurationSeconds: 0.1}, {Name: "render", DurationSeconds: 0.5},
		{Name: "quota", DurationSeconds: 0.3}, {Name: "git", DurationSeconds: 2}, {Name: "keycloak", DurationSeconds: 0.75}, {Name: "orders", DurationSeconds: 0.2}}
	last.Commit = "0123456789abcdef0123456789abcdef01234567"
	last.ReviewBranches = []report.ReviewBranch{{Name: "waldur-gitops/review/5eed0000abcd", Commit: "feedc0de00000000000000000000000000000000", Opened: t0.Add(-2 * time.Hour)}}
	ord := "0d5e0000000000000000000000000001"
	last.Add(changeset.Set{Entries: []changeset.Entry{
		{Stage: "render", Kind: "Tenant", Subject: "hpc/cluster/waldur-a", Action: changeset.Create},
		{Stage: "render", Kind: "Tenant", Subject: "hpc/cluster/waldur-b", Action: changeset.Unchanged},
		{Stage: "render", Kind: "Tenant", Subject: "rke/management/waldur-c", Action: changeset.Unchanged},
		{Stage: "render", Kind: "Resource", Subject: "hpc/bad", Action: changeset.Skip, Reason: "cpu \"x\" is not a number", Cause: changeset.CauseInvalidLimits},
		{Stage: "approve", Kind: "Order", Subject: ord + " Create hpc/cluster/waldur-a", Action: changeset.Skip, Orders: []string{ord}, Offering: "hpc", Reason: "waits for review branch waldur-gitops/review/5eed0000abcd", Cause: changeset.CauseAwaitingReview, Since: t0.Add(-3 * time.Hour)},
		{Stage: "orders", Kind: "Order", Subject: ord + " Create hpc/cluster/waldur-a", Action: changeset.Skip, Orders: []string{ord}, Offering: "hpc", Reason: "waits for review branch waldur-gitops/review/5eed0000abcd", Cause: changeset.CauseAwaitingReview, Since: t0.Add(-3 * time.Hour)},
		{Stage: "quota", Kind: "ResourceQuota", Subject: "hpc/cluster/waldur-b", Action: changeset.Skip, Reason: "cpu 4 below usage 6", Cause: changeset.CauseQuotaHeld},
		{Stage: "git", Kind: "Commit", Subject: "main 0123456", Action: changeset.Create},
		{Stage: "keycloak", Kind: "KeycloakMembership", Subject: "/ns_a_admin alice", Offering: "hpc", Action: changeset.Skip, Reason: "user alice (alice@example.org) not found", Cause: changeset.CauseUserNotFound},
		{Stage: "keycloak", Kind: "KeycloakMembership", Subject: "/ns_a_admin bob", Offering: "hpc", Action: changeset.Skip, Reason: "user bob not found", Cause: changeset.CauseUserNotFound},
		{Stage: "keycloak", Kind: "KeycloakGroup", Subject: "/ns_old_admin", Offering: "hpc", Action: changeset.Skip, Reason: "carol still a member", Cause: changeset.CauseKept},
	}})
	last.Finish(3, t0.Add(30*time.Minute+5*time.Second))
	backends := map[string]string{"hpc": "k8s-ut-namespace", "rke": "rancher"}
	h := status.NewHistory(2)
	for _, rep := range []*report.Run{refused, failed, last} {
		h.Add(status.Record{Report: rep, Backends: backends, CommitURL: "https://git.example.org/site/-/commit/{commit}"})
	}
	return h.Records()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./status -update rewrites it):\n%s", path, got)
	}
}

// TestBuild sorts the last run's entries into their lists with their
// causes, keeps the last runs (the oldest beyond the limit dropped, its
// refusal with it), and shows names only when asked: counts otherwise.
func TestBuild(t *testing.T) {
	recs := scenario()
	if len(recs) != 2 || recs[0].ID != 3 || recs[1].ID != 2 {
		t.Fatalf("history kept %d runs", len(recs))
	}
	ev := []events.OfferingState{{Offering: "hpc", Connected: false, Received: 3, Reconnects: 2, LastError: "dial: refused"}}
	for _, tc := range []struct {
		name  string
		names bool
	}{{"public", false}, {"names", true}} {
		t.Run(tc.name, func(t *testing.T) {
			lead := status.Leadership{Elected: true, Identity: "pod-b", LeaderIdentity: "pod-a", LeaderURL: "http://10.0.0.1:9090/"}
			s := status.Build(recs, status.Options{Names: tc.names, Now: t0.Add(time.Hour), Source: "serve", Leadership: &lead, Events: ev})
			if len(s.OrdersWaiting) != 1 || s.OrdersWaiting[0].Cause != changeset.CauseAwaitingReview {
				t.Errorf("orders waiting: %+v", s.OrdersWaiting)
			}
			if len(s.QuotaHeld) != 1 || s.QuotaHeld[0].Cause != changeset.CauseQuotaHeld {
				t.Errorf("quota held: %+v", s.QuotaHeld)
			}
			if len(s.ReviewBranches) != 1 || s.ReviewBranches[0].CommitLink != "https://git.example.org/site/-/commit/feedc0de00000000000000000000000000000000" {
				t.Errorf("review branches: %+v", s.ReviewBranches)
			}
			if s.GuardRefusal != nil {
				t.Errorf("the refused run is no longer kept: %+v", s.GuardRefusal)
			}
			if len(s.Tenants) != 2 || s.Tenants[0] != (status.Tenants{Offering: "hpc", Backend: "k8s-ut-namespace", Tenants: 2}) {
				t.Errorf("tenants: %+v", s.Tenants)
			}
			js, err := json.MarshalIndent(s, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := status.WriteText(&text, s); err != nil {
				t.Fatal(err)
			}
			for _, out := range []string{string(js), text.String()} {
				for _, name := range []string{"alice", "bob", "carol"} {
					if strings.Contains(out, name) != tc.names {
						t.Errorf("names %v, but %q shown: %v", tc.names, name, !tc.names)
					}
				}
			}
			golden(t, tc.name+".json", append(js, '\n'))
			golden(t, tc.name+".txt", text.Bytes())
		})
	}
}

// TestGuardRefusal: the newest refused run among those kept is named, with
// the failed stage's error.
func TestGuardRefusal(t *testing.T) {
	rep := report.New("serve", "test", false, t0)
	rep.Stages = []report.Stage{{Name: "git", Error: "deletion guard refused"}}
	rep.Finish(7, t0.Add(time.Second))
	h := status.NewHistory(0)
	h.Add(status.Record{Report: rep})
	good := report.New("serve", "test", false, t0.Add(time.Minute))
	good.Finish(0, t0.Add(time.Minute+time.Second))
	h.Add(status.Record{Report: good})
	s := status.Build(h.Records(), status.Options{Now: t0.Add(time.Hour)})
	if g := s.GuardRefusal; g == nil || g.Run != 1 || g.Error != "deletion guard refused" {
		t.Errorf("refusal: %+v", g)
	}
	if r, found := h.Get(2); !found || r.Report != good {
		t.Errorf("get 2: %v", found)
	}
	if _, found := h.Get(3); found {
		t.Error("get 3: found a run never kept")
	}
	d := status.Detail(h.Records()[1], s)
	if d.Detail == nil || d.Detail.Run.ID != 1 || d.Detail.Run.Stages[0].Error != "deletion guard refused" {
		t.Errorf("detail: %+v", d.Detail)
	}
}

// TestOffboardingInFlight: the last run's offboarding records that are not
// Deleted are listed — each user with names, else counted per offering,
// state and cause — and their change-set entries are not listed twice.
func TestOffboardingInFlight(t *testing.T) {
	rep := report.New("serve", "test", false, t0)
	rep.Offboarding = []report.Offboard{
		{Offering: "hpc", OfferingUser: "u1", Username: "dave", State: "Deleting", Cause: changeset.CauseRemovalPending, Reason: "Keycloak still lists dave", RequestedAt: t0},
		{Offering: "hpc", OfferingUser: "u2", Username: "erin", State: "Deleting", Cause: changeset.CauseRemovalPending, Reason: "commit not applied"},
		{Offering: "hpc", OfferingUser: "u3", Username: "fred", State: "Deleted", AccessEndedAt: t0},
		{Offering: "hpc", OfferingUser: "u4", Username: "gina", State: "Error deleting", Cause: changeset.CauseRemovalFailed},
	}
	rep.Changes = []changeset.Entry{{Stage: "proof", Kind: "OfferingUser", Subject: "dave", Offering: "hpc", Action: changeset.Skip, Cause: changeset.CauseRemovalPending}}
	rep.Finish(3, t0.Add(time.Second))
	recs := []status.Record{{ID: 1, Report: rep}}
	for _, tc := range []struct {
		names bool
		want  []status.Item
	}{
		{true, []status.Item{
			{Stage: "offboard", Kind: "OfferingUser", Subject: "dave", Offering: "hpc", Action: "Deleting", Cause: changeset.CauseRemovalPending, Reason: "Keycloak still lists dave", Count: 1, Since: t0},
			{Stage: "offboard", Kind: "OfferingUser", Subject: "erin", Offering: "hpc", Action: "Deleting", Cause: changeset.CauseRemovalPending, Reason: "commit not applied", Count: 1},
			{Stage: "offboard", Kind: "OfferingUser", Subject: "gina", Offering: "hpc", Action: "Error deleting", Cause: changeset.CauseRemovalFailed, Count: 1},
		}},
		{false, []status.Item{
			{Stage: "offboard", Kind: "OfferingUser", Offering: "hpc", Action: "Deleting", Cause: changeset.CauseRemovalPending, Count: 2},
			{Stage: "offboard", Kind: "OfferingUser", Offering: "hpc", Action: "Error deleting", Cause: changeset.CauseRemovalFailed, Count: 1},
		}},
	} {
		t.Run(fmt.Sprint("names=", tc.names), func(t *testing.T) {
			s := status.Build(recs, status.Options{Names: tc.names, Now: t0})
			if !reflect.DeepEqual(s.Offboarding, tc.want) {
				t.Errorf("offboarding:\n got %+v\nwant %+v", s.Offboarding, tc.want)
			}
			if len(s.Held) != 0 {
				t.Errorf("the proof's entries are listed again as held: %+v", s.Held)
			}
		})
	}
}
