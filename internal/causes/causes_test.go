package causes

import (
	"errors"
	"io/fs"
	"testing"
)

func TestGroup(t *testing.T) {
	login := "log in to realm master as user admin (keycloak_password_file /s/pw): 401 Unauthorized: invalid_grant: Invalid user credentials"
	tests := []struct {
		name  string
		items []Item
		want  []string
	}{
		{"one cause of two realms, said once", []Item{{Message: "keycloak K realm hpc: list groups: " + login}, {Message: "keycloak K realm waldur: list groups: " + login}},
			[]string{"keycloak K realm hpc, keycloak K realm waldur: list groups: " + login}},
		{"one 401 of several offerings, named by their contexts", []Item{
			{Context: "A", Message: "read offering A: list x: waldur GET u1: 401 Unauthorized: Invalid token."},
			{Context: "B", Message: "read offering B: list y: waldur GET u2: 401 Unauthorized: Invalid token."},
			{Context: "C", Message: "user not found"},
		}, []string{"A, B: 401 Unauthorized: Invalid token.", "C: user not found"}},
		{"a one-part reason is not a shared cause", []Item{{Context: "/a", Message: "user not found"}, {Context: "/b", Message: "user not found"}},
			[]string{"/a: user not found", "/b: user not found"}},
		{"different causes keep their lines", []Item{{Message: "a: x: refused"}, {Message: "b: y: reset"}},
			[]string{"a: x: refused", "b: y: reset"}},
		{"identical messages once", []Item{{Message: "a: b: c"}, {Message: "a: b: c"}}, []string{"a: b: c"}},
		{"the first names of many", []Item{{Context: "r1", Message: "x1: 401: no"}, {Context: "r2", Message: "x2: 401: no"}, {Context: "r3", Message: "x3: 401: no"},
			{Context: "r4", Message: "x4: 401: no"}, {Context: "r5", Message: "x5: 401: no"}, {Context: "r6", Message: "x6: 401: no"}, {Context: "r7", Message: "x7: 401: no"}},
			[]string{"r1, r2, r3, r4, r5 and 2 more: 401: no"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, g := range Group(tc.items) {
				got = append(got, g.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("line %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestJoinKeepsTheErrors(t *testing.T) {
	err := Join(errors.New("r1: x: "+fs.ErrNotExist.Error()), nil, &fs.PathError{Op: "open", Path: "p", Err: fs.ErrNotExist})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is does not reach a joined error")
	}
	if Join(nil, nil) != nil {
		t.Error("Join of nothing is not nil")
	}
	if got := Join(errors.New("a: s: 401: bad"), errors.New("b: t: 401: bad")).Error(); got != "a, b: 401: bad" {
		t.Errorf("message %q", got)
	}
}
