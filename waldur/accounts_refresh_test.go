package waldur_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestRefreshAccounts: the accounts are read again in place of those held,
// the bad account records of the last read give way to this read's, the
// other bad records stay, and the state the records came from is not
// changed.
func TestRefreshAccounts(t *testing.T) {
	srv := waldurtest.New(t)
	c := clientFor(t, srv)
	const project = waldur.UUID("0aa00000000040008000000000000001")
	srv.AddServiceAccount(offering, waldur.ServiceAccount{ProjectUUID: project, Username: "robot", State: waldur.AccountOK})
	srv.AddCourseAccount(offering, waldur.CourseAccount{ProjectUUID: project, Username: "student", State: waldur.AccountOK})
	badResource := waldur.BadRecord{Kind: waldur.RecordResource, Key: "uuid"}
	bad := []waldur.BadRecord{{Kind: waldur.RecordServiceAccount, Key: "project_uuid"}, badResource, {Kind: waldur.RecordCourseAccount, Key: "uuid"}}
	st := waldur.OfferingState{OfferingUUID: offering, ServiceAccounts: []waldur.ServiceAccount{{UUID: "old"}}, BadRecords: bad}
	last := st
	if err := c.RefreshAccounts(context.Background(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.ServiceAccounts) != 1 || st.ServiceAccounts[0].Username != "robot" || len(st.CourseAccounts) != 1 || st.CourseAccounts[0].Username != "student" {
		t.Errorf("accounts %+v %+v", st.ServiceAccounts, st.CourseAccounts)
	}
	if !reflect.DeepEqual(st.BadRecords, []waldur.BadRecord{badResource}) {
		t.Errorf("bad records %+v, want only the resource's", st.BadRecords)
	}
	if len(last.BadRecords) != 3 || last.BadRecords[0].Kind != waldur.RecordServiceAccount || last.ServiceAccounts[0].UUID != "old" {
		t.Errorf("the last state changed: %+v", last)
	}
}
