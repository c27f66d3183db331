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
			err := Check(deletes(tt.deleted, tt.ordered), tt.existing, tt.opts)
			if (err != nil) != tt.refuse {
				t.Fatalf("Check() = %v, refuse = %v", err, tt.refuse)
			}
			var ge *Error
			if err != nil && (!errors.As(err, &ge) || len(ge.Unexplained) != tt.deleted-tt.ordered) {
				t.Errorf("error does not list the %d unexplained deletions: %v", tt.deleted-tt.ordered, err)
			}
		})
	}
}

func TestErrorNamesTenants(t *testing.T) {
	err := Check(deletes(30, 0), 30, DefaultOptions())
	msg := err.Error()
	for _, want := range []string{"refusing to remove 30 of 30 tenants", "o/cluster/t0", "… and 10 more", "--allow-mass-prune"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
}
