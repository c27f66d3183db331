package guard

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
)

func deletes(n int, withOrders int) changeset.Set {
	var s changeset.Set
	for i := 0; i < n; i++ {
		e := changeset.Entry{Kind: "Tenant", Action: changeset.Delete, Subject: fmt.Sprintf("o/cluster/t%d", i)}
		if i < withOrders {
			e.Orders = []string{"order"}
		}
		s.Add(e)
	}
	s.Add(changeset.Entry{Kind: "Tenant", Action: changeset.Unchanged, Subject: "o/cluster/kept"})
	return s
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name             string
		deleted, ordered int
		existing         int
		opts             Options
		refuse           bool
	}{
		{"nothing deleted", 0, 0, 100, DefaultOptions(), false},
		{"terminated tenants are expected", 50, 50, 100, DefaultOptions(), false},
		{"few unexplained on a big site", 4, 0, 100, DefaultOptions(), false},
		{"exactly 10%", 10, 0, 100, DefaultOptions(), false},
		{"more than 10% and at least 5", 11, 0, 100, DefaultOptions(), true},
		{"more than 10% but fewer than 5", 3, 0, 10, DefaultOptions(), false},
		{"orders do not count", 20, 15, 100, DefaultOptions(), false},
		{"everything gone", 3, 0, 3, DefaultOptions(), true},
		{"everything gone but allowed", 3, 0, 3, Options{MaxFraction: 0.1, MinCount: 5, Allow: true}, false},
		{"tighter policy", 2, 0, 100, Options{MaxFraction: 0.01, MinCount: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := TenantRemovals(Tenants, deletes(tt.deleted, tt.ordered), nil, nil)
			err := Check(Tenants, rs, Site(tt.existing), tt.opts)
			if (err != nil) != tt.refuse {
				t.Fatalf("Check() = %v, refuse = %v", err, tt.refuse)
			}
			var ge *Error
			if err != nil && (!errors.As(err, &ge) || len(ge.Unexplained) != tt.deleted-tt.ordered || ge.Kind != Tenants) {
				t.Errorf("error does not list the %d unexplained deletions: %v", tt.deleted-tt.ordered, err)
			}
		})
	}
}

// TestCheckKinds: one rule for every kind of removal; an explained removal
// (a Terminate order, Waldur reporting it Terminated, an offboarding
// request) is listed, never counted.
func TestCheckKinds(t *testing.T) {
	removals := func(k Kind, n, explained int, cause Cause) []Removal {
		var rs []Removal
		for i := range n {
			r := Removal{Kind: k, Subject: fmt.Sprintf("s%d", i), Tenant: fmt.Sprintf("t%d", i%3)}
			if i < explained {
				r.Because = &Explanation{Cause: cause, Why: "because"}
			}
			rs = append(rs, r)
		}
		return rs
	}
	for _, tt := range []struct {
		name              string
		kind              Kind
		n, explained      int
		cause             Cause
		existing, removed int
		want              string
	}{
		{"six access pairs of 24", Access, 6, 0, 0, 24, 6, "refusing to remove 6 of 24 (subject, tenant) pairs of RoleBinding subjects"},
		{"five memberships of 100", Memberships, 5, 0, 0, 100, 0, ""},
		{"six memberships of 24", Memberships, 6, 0, 0, 24, 6, "pairs of Keycloak memberships at once"},
		{"offboarding explains", Memberships, 6, 6, Offboarding, 24, 0, ""},
		{"terminated explains", Tenants, 6, 2, Terminated, 24, 0, ""},
		{"explained listed", Tenants, 8, 2, TerminateOrder, 24, 6, "(2 more are explained and not counted)"},
		{"groups of tenants", TenantGroups, 2, 0, 0, 2, 2, "refusing to delete their Keycloak groups: refusing to remove 2 of 2 tenants"},
		{"every resource erred", Erred, 6, 0, 0, 6, 6, "refused: 6 of 6 resources cannot be rendered"},
		{"a few resources erred", Erred, 2, 0, 0, 60, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.kind, removals(tt.kind, tt.n, tt.explained, tt.cause), Site(tt.existing), DefaultOptions())
			var ge *Error
			if got := errors.As(err, &ge); got != (tt.want != "") {
				t.Fatalf("Check() = %v, want refusal %q", err, tt.want)
			}
			if err == nil {
				return
			}
			if ge.Kind != tt.kind || ge.Removed != tt.removed || ge.Existing != tt.existing || len(ge.Explained) != tt.explained || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("refusal %+v: %v, want %q", ge, err, tt.want)
			}
			if allowed := (Options{MaxFraction: 0.1, MinCount: 5, Allow: true}); Check(tt.kind, removals(tt.kind, tt.n, 0, 0), Site(tt.existing), allowed) != nil {
				t.Error("Allow does not lift the refusal")
			}
		})
	}
}

// TestCheckScopes: a scope emptied is refused although it is a small share
// of the site; the refusal names it.
func TestCheckScopes(t *testing.T) {
	var rs []Removal
	for i := range 4 {
		rs = append(rs, Removal{Kind: Tenants, Subject: fmt.Sprintf("a/t%d", i), Scopes: []string{"offering a"}})
	}
	for _, tt := range []struct {
		name  string
		in    Population
		scope string
	}{
		{"scope emptied", Population{"": 100, "offering a": 4}, "offering a"},
		{"scope keeps most", Population{"": 100, "offering a": 50}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(Tenants, rs, tt.in, DefaultOptions())
			var ge *Error
			if (err != nil) != (tt.scope != "") || (err != nil && (!errors.As(err, &ge) || ge.Scope != tt.scope || !strings.HasPrefix(err.Error(), "in "+tt.scope+": "))) {
				t.Errorf("Check() = %v, want a refusal in %q", err, tt.scope)
			}
		})
	}
}

func TestErrorNamesTenants(t *testing.T) {
	err := Check(Tenants, TenantRemovals(Tenants, deletes(30, 0), nil, nil), Site(30), DefaultOptions())
	msg := err.Error()
	for _, want := range []string{"refusing to remove 30 of 30 tenants", "o/cluster/t0", "… and 10 more", "--allow-mass-prune"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if ge := err.(*Error); ge.Limit != 4 {
		t.Errorf("limit %d, want 4 (below min_count: more than 10%% of 30)", ge.Limit)
	}
}
