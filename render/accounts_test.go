package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/waldur"
)

// accountState is the test offering with one resource whose team is alice,
// and the given service and course accounts.
func accountState(sa []waldur.ServiceAccount, ca []waldur.CourseAccount) *waldur.State {
	st := state([]waldur.Resource{resource(1, "team", limits("cpu", 1))}, nil, member("alice", "PROJECT.MEMBER"))
	st.Offerings[0].ServiceAccounts, st.Offerings[0].CourseAccounts = sa, ca
	return st
}

func acctUUID(c byte) waldur.UUID { return waldur.UUID(strings.Repeat(string(c), 32)) }

// TestAccountsAreMembers: a project's service accounts and course accounts in
// state OK are members of the tenant's Keycloak groups under the roles the
// mapping gives service_account (readwrite) and course_account (readonly);
// Closed, Erred and Pending accounts, accounts of other projects, accounts
// without a username or with a team member's username are not; a reserved
// name is reported; a custom mapping applies.
func TestAccountsAreMembers(t *testing.T) {
	other := waldur.UUID(strings.Repeat("9", 32))
	sa := []waldur.ServiceAccount{
		{UUID: acctUUID('1'), State: "OK", ProjectUUID: projectUUID, Username: "ci-bot", Email: "ci@example.org"},
		{UUID: acctUUID('2'), State: "Closed", ProjectUUID: projectUUID, Username: "old-bot"},
		{UUID: acctUUID('3'), State: "Erred", ProjectUUID: projectUUID, Username: "bad-bot"},
		{UUID: acctUUID('4'), State: "OK", ProjectUUID: other, Username: "foreign-bot"},
		{UUID: acctUUID('5'), State: "OK", ProjectUUID: projectUUID, Username: ""},
		{UUID: acctUUID('6'), State: "OK", ProjectUUID: projectUUID, Username: "alice"},
		{UUID: acctUUID('7'), State: "OK", ProjectUUID: projectUUID, Username: "system:masters"},
	}
	ca := []waldur.CourseAccount{
		{UUID: acctUUID('a'), State: "OK", ProjectUUID: projectUUID, Username: "student1"},
		{UUID: acctUUID('b'), State: "Pending", ProjectUUID: projectUUID, Username: "student2"},
		{UUID: acctUUID('c'), State: "Closed", ProjectUUID: projectUUID, Username: "student3"},
		{UUID: acctUUID('d'), State: "OK", ProjectUUID: projectUUID, Username: "ci-bot"},
	}
	kc := "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}\n"
	tests := []struct {
		name, settings string
		want           map[string][]string // group name → members
	}{
		{"defaults", kc, map[string][]string{
			"ns_team_admin": {}, "ns_team_readwrite": {"alice", "ci-bot"}, "ns_team_readonly": {"student1"},
		}},
		{"custom mapping", kc + "role_mapping: {service_account: readonly, course_account: admin}\n", map[string][]string{
			"ns_team_admin": {"student1"}, "ns_team_readwrite": {"alice"}, "ns_team_readonly": {"ci-bot"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRender(t, mustConfig(t, "namespace", tt.settings, ""), accountState(sa, ca))
			if len(res.Tenants) != 1 {
				t.Fatalf("tenants %d, skipped %v", len(res.Tenants), res.Skipped)
			}
			got := map[string][]string{}
			for _, g := range res.Groups {
				got[g.Name] = g.Members
			}
			for name, want := range tt.want {
				if !slices.Equal(got[name], want) {
					t.Errorf("group %s: members %q, want %q", name, got[name], want)
				}
			}
			reported := false
			for _, e := range res.Changes.ByAction(changeset.Skip) {
				reported = reported || (e.Kind == "Member" && strings.Contains(e.Subject, "system:masters") && strings.Contains(e.Reason, "service account username"))
			}
			if !reported {
				t.Errorf("reserved service account name not reported: %v", res.Changes.Entries)
			}
		})
	}
}

// TestAccountsOKDBindings: under okd an OK service account gets its own
// RoleBinding to edit and an OK course account one to view; a closed account
// gets none.
func TestAccountsOKDBindings(t *testing.T) {
	st := accountState(
		[]waldur.ServiceAccount{{UUID: acctUUID('1'), State: "OK", ProjectUUID: projectUUID, Username: "ci-bot"},
			{UUID: acctUUID('2'), State: "Closed", ProjectUUID: projectUUID, Username: "old-bot"}},
		[]waldur.CourseAccount{{UUID: acctUUID('a'), State: "OK", ProjectUUID: projectUUID, Username: "student1"}})
	stream := string(mustRender(t, mustConfig(t, "okd", "", ""), st).Stream())
	for _, want := range []string{"name: waldur-ci-bot", "name: waldur-student1"} {
		if !strings.Contains(stream, want) {
			t.Errorf("missing %q:\n%s", want, stream)
		}
	}
	if strings.Contains(stream, "old-bot") {
		t.Errorf("closed account bound:\n%s", stream)
	}
	for _, doc := range strings.Split(stream, "\n---\n") {
		switch {
		case strings.Contains(doc, "name: waldur-ci-bot") && !strings.Contains(doc, "name: edit"):
			t.Errorf("service account not bound to edit:\n%s", doc)
		case strings.Contains(doc, "name: waldur-student1") && !strings.Contains(doc, "name: view"):
			t.Errorf("course account not bound to view:\n%s", doc)
		}
	}
}
