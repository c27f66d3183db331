package waldur_test

import (
	"context"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestAccountsListedAndRead: the project service accounts and course accounts
// of the offering are listed through every page (other offerings' accounts are
// not), sorted by uuid, in every state, and ReadOffering carries them.
func TestAccountsListedAndRead(t *testing.T) {
	srv := waldurtest.New(t)
	other := uuidN(9, 1)
	for i := range 5 {
		state := waldur.AccountOK
		if i == 3 {
			state = "Closed"
		}
		srv.AddServiceAccount(offering, waldur.ServiceAccount{UUID: uuidN(6, 5-i), ProjectUUID: projectA,
			Username: "svc" + string(rune('a'+i)), State: state, Email: "svc@example.org"})
	}
	srv.AddServiceAccount(other, waldur.ServiceAccount{UUID: uuidN(6, 99), ProjectUUID: projectA, Username: "elsewhere"})
	srv.AddCourseAccount(offering, waldur.CourseAccount{UUID: uuidN(7, 2), ProjectUUID: projectA, Username: "student1"})
	srv.AddCourseAccount(offering, waldur.CourseAccount{UUID: uuidN(7, 1), ProjectUUID: projectA, State: "Pending"})
	c := clientFor(t, srv, pageSize(2))
	ctx := context.Background()

	tests := []struct {
		name string
		read func() ([]string, error)
		want []string
	}{
		{"service accounts", func() ([]string, error) {
			l, err := c.ListServiceAccounts(ctx, offering)
			var out []string
			for _, a := range l {
				out = append(out, string(a.UUID)+" "+a.Username+" "+a.State+" "+string(a.ProjectUUID))
			}
			return out, err
		}, []string{
			string(uuidN(6, 1)) + " svce OK " + string(projectA),
			string(uuidN(6, 2)) + " svcd Closed " + string(projectA),
			string(uuidN(6, 3)) + " svcc OK " + string(projectA),
			string(uuidN(6, 4)) + " svcb OK " + string(projectA),
			string(uuidN(6, 5)) + " svca OK " + string(projectA),
		}},
		{"course accounts", func() ([]string, error) {
			l, err := c.ListCourseAccounts(ctx, offering)
			var out []string
			for _, a := range l {
				out = append(out, string(a.UUID)+" "+a.Username+" "+a.State)
			}
			return out, err
		}, []string{string(uuidN(7, 1)) + "  Pending", string(uuidN(7, 2)) + " student1 OK"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("%d: got %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
	if n := c.Stats().Requests[waldur.KindServiceAccounts]; n != 3 {
		t.Errorf("%d service account requests, want 3 pages", n)
	}

	st, err := c.ReadOffering(ctx, "iris", offering)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ServiceAccounts) != 5 || len(st.CourseAccounts) != 2 || st.ServiceAccounts[0].Email != "svc@example.org" {
		t.Errorf("state: %+v / %+v", st.ServiceAccounts, st.CourseAccounts)
	}
}
