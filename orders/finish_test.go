package orders_test

import (
	"testing"

	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/waldur"
)

// ReadsTree says whether Finish looks at the pushed tree: only an executing
// order makes it.
func TestReadsTree(t *testing.T) {
	for _, c := range []struct {
		name   string
		states []string
		want   bool
	}{
		{"no order", nil, false},
		{"done and pending", []string{waldur.OrderDone, waldur.OrderPendingProvider}, false},
		{"one executing", []string{waldur.OrderDone, waldur.OrderExecuting}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &waldur.State{Offerings: []waldur.OfferingState{{Name: "a"}, {Name: "b"}}}
			for _, s := range c.states {
				st.Offerings[1].Orders = append(st.Offerings[1].Orders, waldur.Order{State: s})
			}
			if got := orders.ReadsTree(st); got != c.want {
				t.Errorf("ReadsTree = %t, want %t", got, c.want)
			}
		})
	}
}
