package statuspage

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/status"
)

// Attention lists, a line each, what an operator should look at first:
// a standby, the last run's failure, the guard's refusal, events
// disconnected, and what waits (counted by cause).
func Attention(s status.Status) []string {
	var out []string
	if l := s.Leadership; l != nil && !l.Leader {
		out = append(out, "This replica stands by: "+status.LeaderLine(*l)+".")
	}
	if len(s.Runs) > 0 && s.Runs[0].Result == "failed" {
		r := s.Runs[0]
		line := fmt.Sprintf("The last run (#%d) failed with exit code %d", r.ID, r.ExitCode)
		for _, st := range r.Stages {
			if st.Error != "" {
				line += " in " + st.Name + ": " + st.Error
				break
			}
		}
		out = append(out, line+".")
	}
	if g := s.GuardRefusal; g != nil {
		out = append(out, fmt.Sprintf("The deletion guard refused run #%d.", g.Run))
	}
	for _, ev := range s.Events {
		if !ev.Connected {
			out = append(out, "Waldur events of "+ev.Offering+" are disconnected.")
		}
	}
	for _, l := range []struct {
		what  string
		items []status.Item
	}{{"Orders waiting", s.OrdersWaiting}, {"Quota cuts held", s.QuotaHeld}, {"Keycloak members waiting", s.MembersWaiting}} {
		if line := counted(l.items); line != "" {
			out = append(out, fmt.Sprintf("%s: %d (%s).", l.what, total(l.items), line))
		}
	}
	if n := len(s.ReviewBranches); n > 0 {
		out = append(out, fmt.Sprintf("Review branches waiting for a person to merge them: %d.", n))
	}
	return out
}

func total(items []status.Item) int {
	n := 0
	for _, it := range items {
		n += it.Count
	}
	return n
}

// counted says how many items each cause has: "awaiting_review 2, quota_held 1".
func counted(items []status.Item) string {
	by := map[string]int{}
	for _, it := range items {
		by[string(it.Cause)] += it.Count
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %d", c, by[c]))
	}
	return strings.Join(parts, ", ")
}
