package render

import (
	"fmt"
	"math"
	"math/big"
	"testing"
)

// The fast paths for whole numbers (exact, exactAmount, checkQuantity) must
// decide as the decimal parse they skip would.
func TestWholeNumberFastPaths(t *testing.T) {
	values := []float64{0, 1, 2, 3, 7, 16, 1000, 1 << 30, 3 << 30, 1<<53 - 1, 1 << 53, 1e20, -4, 0.5, 2.25, 1e-3, 123456.789}
	for _, v := range values {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			if got, want := exact(v), shortestDecimal(v); got.Cmp(want) != 0 {
				t.Errorf("exact(%v) = %s, the shortest decimal is %s", v, got.RatString(), want.RatString())
			}
			s := ratString(shortestDecimal(v))
			if err := exactAmount(s, v); err != nil {
				t.Errorf("exactAmount(%q, %v): %v", s, v, err)
			}
			if err := exactAmount(s+"1", v); err == nil && math.Abs(v) < 1e15 {
				t.Errorf("exactAmount(%q, %v) accepted a different decimal", s+"1", v)
			}
		})
	}
	n := func(i int64) *big.Rat { return new(big.Rat).SetInt64(i) }
	quantities := []struct {
		q     quantity
		whole bool
	}{
		{quantity{"4", n(4)}, true},
		{quantity{"0", n(0)}, true},
		{quantity{"4Gi", n(4 << 30)}, true},
		{quantity{"512Mi", n(512 << 20)}, true},
		{quantity{"4Gi", n(4<<30 + 1)}, false},
		{quantity{"4G", n(4e9)}, false},
		{quantity{"2.5", new(big.Rat).SetFrac64(5, 2)}, false},
		{quantity{"5", n(4)}, false},
	}
	for _, tc := range quantities {
		t.Run(tc.q.text, func(t *testing.T) {
			if got := plainWhole(tc.q); got != tc.whole {
				t.Fatalf("plainWhole(%s for %s) = %v, want %v", tc.q.text, tc.q.base.RatString(), got, tc.whole)
			}
			bad := func(format string, a ...any) error { return fmt.Errorf(format, a...) }
			if tc.whole {
				if err := readsBack(tc.q, bad); err != nil {
					t.Errorf("the fast path accepts %s but the parse refuses it: %v", tc.q.text, err)
				}
			}
		})
	}
}
