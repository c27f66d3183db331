package parallel

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestForRunsEveryIndexOnceWithinTheBound(t *testing.T) {
	for _, tt := range []struct{ n, workers int }{{0, 4}, {1, 4}, {10, 1}, {100, 3}, {5, 0}} {
		var mu sync.Mutex
		seen := map[int]int{}
		var inFlight, peak atomic.Int32
		For(tt.n, tt.workers, func(i int) {
			if cur := inFlight.Add(1); cur > peak.Load() {
				peak.Store(cur)
			}
			mu.Lock()
			seen[i]++
			mu.Unlock()
			inFlight.Add(-1)
		})
		if len(seen) != tt.n {
			t.Errorf("n=%d: %d indexes ran", tt.n, len(seen))
		}
		for i, c := range seen {
			if c != 1 || i < 0 || i >= tt.n {
				t.Errorf("n=%d: index %d ran %d times", tt.n, i, c)
			}
		}
		if limit := int32(max(1, tt.workers)); peak.Load() > limit {
			t.Errorf("n=%d workers=%d: %d calls at once", tt.n, tt.workers, peak.Load())
		}
	}
}
