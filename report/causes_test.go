package report_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/internal/causes"
	"github.com/waldur/waldur-gitops/report"
)

// TestSummarySaysACauseOnce: a 401 seen for each offering, and a login
// refused in each realm, are each said once in the summary; an order
// waiting for the same thing as another keeps its line.
func TestSummarySaysACauseOnce(t *testing.T) {
	const denied = "401 Unauthorized: Invalid token. (authentication failed: check the token from $WALDUR_API_TOKEN)"
	const login = "list groups: log in to realm master as user admin with client admin-cli (keycloak_password_file /pw): 401 Unauthorized: invalid_grant: Invalid user credentials"
	r := report.New("sync", "test", false, time.Now())
	_ = r.Record("waldur", func() (changeset.Result, error) {
		var cs changeset.Set
		for _, o := range []string{"A", "B"} {
			cs.Add(changeset.Entry{Stage: "waldur", Kind: "Offering", Subject: o, Action: changeset.Skip,
				Reason: `not read, its tenants are kept as they are: read offering "` + o + `": list users of ` + o + ": waldur GET https://w/" + o + ": " + denied})
		}
		return changeset.Result{Changes: cs}, nil
	})
	_ = r.Record("keycloak", func() (changeset.Result, error) {
		var cs changeset.Set
		var errs []error
		for _, realm := range []string{"hpc", "waldur"} {
			err := errors.New("keycloak K realm " + realm + ": " + login)
			errs = append(errs, err)
			cs.Add(changeset.Entry{Stage: "keycloak", Kind: "KeycloakRealm", Subject: "K realm " + realm, Action: changeset.Skip, Reason: "failed: " + err.Error()})
		}
		return changeset.Result{Changes: cs}, causes.Join(errs...)
	})
	_ = r.Record("orders", func() (changeset.Result, error) {
		var cs changeset.Set
		for _, o := range []string{"o1", "o2"} {
			cs.Add(changeset.Entry{Stage: "orders", Kind: "Order", Subject: o, Action: changeset.Skip, Reason: "left executing: the cluster does not show the namespace yet"})
		}
		return changeset.Result{Changes: cs}, nil
	})
	r.Finish(8, time.Now())
	var b strings.Builder
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, tc := range []struct {
		say  string
		want int
	}{
		{"401 Unauthorized: Invalid token.", 1},
		{"Invalid user credentials", 1},
		{"! Offering A, B: " + denied, 1},
		{"keycloak K realm hpc, keycloak K realm waldur: " + login, 1},
		{"! KeycloakRealm K realm hpc, K realm waldur: failed, as the keycloak line above says", 1},
		{"! Order o1: left executing", 1},
		{"! Order o2: left executing", 1},
	} {
		if got := strings.Count(out, tc.say); got != tc.want {
			t.Errorf("%q said %d times, want %d:\n%s", tc.say, got, tc.want, out)
		}
	}
}

// TestSummaryOfManyEntries: the summary of a large run groups in one pass
// (10,000 entries sharing a cause are one line naming the first five, at
// once) and counts the entries it leaves out, not its lines.
func TestSummaryOfManyEntries(t *testing.T) {
	r := report.New("keycloak", "test", false, time.Now())
	var cs changeset.Set
	for i := range 10000 {
		cs.Add(changeset.Entry{Stage: "keycloak", Kind: "KeycloakRealm", Subject: fmt.Sprintf("K realm r%d", i), Action: changeset.Skip,
			Reason: fmt.Sprintf("failed: keycloak K realm r%d: list groups: 401 Unauthorized: invalid_grant", i)})
	}
	for i := range 10000 {
		cs.Add(changeset.Entry{Stage: "keycloak", Kind: "KeycloakMembership", Subject: fmt.Sprintf("/g/u%d", i), Action: changeset.Skip, Reason: "user not found"})
	}
	r.Add(cs)
	r.Finish(8, time.Now())
	start := time.Now()
	var b strings.Builder
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the summary of 20,000 entries took %s", took)
	}
	if !strings.Contains(b.String(), "\n  ! KeycloakRealm K realm r0, K realm r1, K realm r2, K realm r3, K realm r4 and 9995 more: list groups: 401 Unauthorized: invalid_grant\n") ||
		!strings.Contains(b.String(), "… and 9961 more: run with --output json to see them all") {
		t.Errorf("summary:\n%.2000s", b.String())
	}
}
