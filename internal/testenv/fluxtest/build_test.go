package fluxtest

import "testing"

// The go command's report of a version the proxy refuses is recognised, and
// release parses only plain vX.Y.Z.
func TestRefusedAndRelease(t *testing.T) {
	out := "main.go:42:2: github.com/fluxcd/pkg/artifact@v0.18.3: reading https://proxy.golang.org/github.com/fluxcd/pkg/artifact/@v/v0.18.3.zip: 403 Forbidden\n\tserver response: This module version is not available.\n"
	m := refused.FindStringSubmatch(out)
	if m == nil || m[1] != "github.com/fluxcd/pkg/artifact" || m[2] != "v0.18.3" {
		t.Errorf("refused matched %q", m)
	}
	if m := refused.FindStringSubmatch("main.go:3:2: undefined: foo\n"); m != nil {
		t.Errorf("a compile error matched %q", m)
	}
	for _, tc := range []struct {
		v    string
		want [3]int
		ok   bool
	}{
		{"v0.18.0", [3]int{0, 18, 0}, true},
		{"v1.9.6", [3]int{1, 9, 6}, true},
		{"v0.18.1-rc.1", [3]int{}, false},
		{"0.18.1", [3]int{}, false},
		{"v1.2", [3]int{}, false},
	} {
		t.Run(tc.v, func(t *testing.T) {
			got, ok := release(tc.v)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("release(%q) = %v, %t", tc.v, got, ok)
			}
		})
	}
}
