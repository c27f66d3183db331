package changeset

import "testing"

func TestSummaryAndCounts(t *testing.T) {
	tests := []struct {
		name    string
		actions []Action
		summary string
		changed bool
	}{
		{"empty", nil, "no changes", false},
		{"only unchanged", []Action{Unchanged, Unchanged}, "=2", false},
		{"skips are not changes", []Action{Skip, Unchanged}, "=1 !1", false},
		{"mixed in display order", []Action{Delete, Create, Unchanged, Update, Create, Skip}, "+2 ~1 -1 =1 !1", true},
		{"a delete alone is a change", []Action{Delete}, "-1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Set
			for _, a := range tt.actions {
				s.Add(Entry{Action: a, Kind: "Tenant", Subject: "x"})
			}
			if got := s.Summary(); got != tt.summary {
				t.Errorf("Summary() = %q, want %q", got, tt.summary)
			}
			if got := s.Changed(); got != tt.changed {
				t.Errorf("Changed() = %v, want %v", got, tt.changed)
			}
		})
	}
}

func TestSortAndString(t *testing.T) {
	var s Set
	s.Add(
		Entry{Stage: "render", Kind: "Tenant", Subject: "b", Action: Create},
		Entry{Stage: "git", Kind: "Tenant", Subject: "z", Action: Delete},
		Entry{Stage: "render", Kind: "Resource", Subject: "a", Action: Skip, Reason: "bad slug"},
	)
	s.Sort()
	want := []string{"- Tenant z", "! Resource a: bad slug", "+ Tenant b"}
	for i, e := range s.Entries {
		if e.String() != want[i] {
			t.Errorf("entry %d = %q, want %q", i, e.String(), want[i])
		}
	}
	if got := len(s.ByAction(Skip)); got != 1 {
		t.Errorf("ByAction(Skip) has %d entries", got)
	}
}
