package keycloak

import "testing"

// Ids go into URL paths unescaped by gocloak: only those that need no escaping
// are looked up by id, anything else by user name.
func TestPathSafe(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"5d3c9a1e-0b7a-4c1e-9f0e-1c2d3e4f5a6b", true},
		{"alice", true},
		{"alice.smith@example.org", true},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"../users", false},
		{"a?b", false},
		{"a b", false},
		{"a%2Fb", false},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			if got := pathSafe(tc.id); got != tc.want {
				t.Errorf("pathSafe(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}
