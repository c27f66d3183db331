package guard

import (
	"errors"
	"fmt"
	"testing"
)

// realm is 24 managed memberships: 8 tenants of 3 users each, one role each.
func realm() Grants {
	g := Grants{}
	for t := range 8 {
		for u := range 3 {
			g.Add(fmt.Sprintf("t%d", t), fmt.Sprintf("u%d", u))
		}
	}
	return g
}

func clone(g Grants) Grants {
	c := Grants{}
	for t, subjects := range g {
		c.Tenant(t)
		for s := range subjects {
			c.Add(t, s)
		}
	}
	return c
}

// TestCheckAccess: access is counted in (subject, tenant) pairs that lose
// all access. The example — one member moving from one role to
// another in a project of 3 tenants while another leaves it — passes; six
// pairs losing all access in a 24-membership realm are refused; a removed
// tenant is not an access removal.
func TestCheckAccess(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(after Grants)
		lost   int
	}{
		{"nothing changes", func(Grants) {}, 0},
		{"a role change and a leaver in a project of 3", func(a Grants) {
			for _, tn := range []string{"t0", "t1", "t2"} {
				delete(a[tn], "u2") // u2 leaves; u0 changes role: still there
			}
		}, 3},
		{"six pairs lose all access", func(a Grants) {
			for _, tn := range []string{"t0", "t1", "t2"} {
				delete(a[tn], "u1")
				delete(a[tn], "u2")
			}
		}, 6},
		{"tenants removed", func(a Grants) {
			for _, tn := range []string{"t0", "t1", "t2", "t3"} {
				delete(a, tn)
			}
		}, 0},
		{"a tenant stays empty", func(a Grants) { a["t0"] = map[string]bool{} }, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := realm()
			after := clone(before)
			tt.change(after)
			if got := len(Lost(Memberships, before, after)); got != tt.lost {
				t.Errorf("Lost() = %d pairs, want %d", got, tt.lost)
			}
			err := CheckAccess(Memberships, before, after, DefaultOptions())
			var ae *AccessError
			if refused := errors.As(err, &ae); refused != (tt.lost >= 5) {
				t.Fatalf("CheckAccess() = %v, want refused %v", err, tt.lost >= 5)
			}
			if ae != nil && (ae.Removed != tt.lost || ae.Existing != 24 || len(ae.Where) != 3) {
				t.Errorf("refusal %+v", ae)
			}
		})
	}
}

// TestCheckAccessOffboarded: the access an offboarding request takes away is
// explained and not counted; other access lost in the same run still is.
func TestCheckAccessOffboarded(t *testing.T) {
	before, after := Grants{}, Grants{}
	for i := range 10 {
		tenant := fmt.Sprintf("t%d", i)
		for _, s := range []string{"alice", "bob", "carol"} {
			before.Add(tenant, s)
		}
		after.Add(tenant, "carol")
	}
	for _, tt := range []struct {
		name    string
		leaving map[string]string
		refused int
	}{
		{"nobody leaving: 20 of 30 pairs refused", nil, 20},
		{"alice leaving: bob's 10 still refused", map[string]string{"alice": "offering user 1 requested deletion"}, 10},
		{"both leaving: allowed", map[string]string{"alice": "r1", "bob": "r2"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Offboarded = tt.leaving
			err := CheckAccess(Access, before, after, o)
			var ge *Error
			if !errors.As(err, &ge) {
				if tt.refused != 0 {
					t.Fatalf("CheckAccess() = %v, want %d refused", err, tt.refused)
				}
				return
			}
			if ge.Removed != tt.refused || len(ge.Explained) != 20-tt.refused {
				t.Errorf("refused %d (explained %d), want %d (%d)", ge.Removed, len(ge.Explained), tt.refused, 20-tt.refused)
			}
			for _, r := range ge.Explained {
				if r.Because.Cause != Offboarding {
					t.Errorf("%+v explained by %v", r, r.Because.Cause)
				}
			}
		})
	}
}
