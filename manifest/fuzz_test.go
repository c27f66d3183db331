package manifest

import (
	"strings"
	"testing"
)

// FuzzEncode feeds arbitrary strings, as keys and values at several depths, to
// Encode. It must succeed (unless two keys of one mapping differ only in bytes
// that are not UTF-8), and both YAML readers must read back exactly the value,
// with invalid UTF-8 turned into U+FFFD, in one document.
//
// Seeds live in testdata/fuzz/FuzzEncode; run the fuzzer with
//
//	go test ./manifest -run XXX -fuzz FuzzEncode -fuzztime 60s
func FuzzEncode(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s, "v", "k")
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		values := []any{
			a,
			[]any{a, b, c},
			map[string]any{
				a: b,
				b: []any{a, c, map[string]any{c: a, a: []any{}}, []any{b, []any{c}}},
				c: map[string]any{a: map[string]any{b: c}, "list": []any{map[string]any{}}},
			},
			[]any{map[string]any{a: map[string]any{c: []any{b}}}, map[string]any{b: nil}},
			map[string]any{strings.Repeat(a, 3): strings.Repeat(b, 3)},
		}
		for _, v := range values {
			if collides(v) {
				b, err := Encode(v)
				if err == nil {
					t.Fatalf("keys that collide once made UTF-8 were encoded:\n%s", b)
				}
				if !strings.Contains(err.Error(), "U+FFFD") {
					t.Fatalf("unexpected error: %v", err)
				}
				continue
			}
			if _, err := roundTrip(v, normalise(v)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// collides reports whether some mapping in v has two keys that read back equal.
func collides(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		seen := map[string]bool{}
		for k, x := range t {
			if seen[asRead(k)] || collides(x) {
				return true
			}
			seen[asRead(k)] = true
		}
	case []any:
		for _, x := range t {
			if collides(x) {
				return true
			}
		}
	}
	return false
}
