package metrics_test

import (
	"testing"

	"github.com/waldur/waldur-gitops/metrics"
	"github.com/waldur/waldur-gitops/metrics/metricstest"
)

// TestSetLeader: a process leads until told otherwise (one that does not
// elect always does); each change of role counts one transition, a repeat
// none.
func TestSetLeader(t *testing.T) {
	for _, tc := range []struct {
		name        string
		roles       []bool
		leader      float64
		transitions float64
	}{
		{"no election", nil, 1, 0},
		{"starts as a standby", []bool{false}, 0, 1},
		{"standby, then leads", []bool{false, true}, 1, 2},
		{"a repeat is no change", []bool{false, false, true, true}, 1, 2},
		{"leads, loses the lease", []bool{false, true, false}, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := metrics.New("test")
			for _, on := range tc.roles {
				r.SetLeader(on)
			}
			set, err := metricstest.Gather(r.Registry())
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]float64{"waldur_gitops_leader": tc.leader, "waldur_gitops_leader_transitions_total": tc.transitions} {
				if got, ok := set.Value(name, nil); !ok || got != want {
					t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
				}
			}
		})
	}
}
