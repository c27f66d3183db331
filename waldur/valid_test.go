package waldur

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// validSeeds are documents and near-documents on both sides of the grammar.
var validSeeds = []string{
	``, ` `, `[]`, `{}`, `[ ]`, `{ }`, `[1,2]`, `[1,]`, `[,1]`, `{"a":1}`, `{"a":1,}`, `{"a" : [true, false, null]}`,
	`{"a"}`, `{1:2}`, `"x"`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\tb\"", "\"\xff\xfe\"",
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-`, `1e`, `-1.5e-10`, `tru`, `true`, `truex`, `nul`, `null`,
	`[1 2]`, `{"a":1 "b":2}`, `[[[]]]`, `[[[]]`, `[]]`, `{"a":{"b":{"c":[{}]}}}`, ` [1] `, "\t\r\n[1]\n", `[1]x`,
	`{"uuid":"0d8b4f3c1a2b4c5d8e9f0a1b2c3d4e5f","limits":{"cpu":4},"name":"a \"b\""}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

func TestValidJSONMatchesStdlib(t *testing.T) {
	t.Run("seeds", func(t *testing.T) {
		for _, s := range validSeeds {
			if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
				t.Errorf("validJSON(%.60q) = %t, json.Valid says %t", s, got, want)
			}
			checkCount(t, s)
		}
	})
	t.Run("random", func(t *testing.T) {
		tokens := []string{"[", "]", "{", "}", ",", ":", " ", `"a"`, `"\u00e9"`, `"\q"`, "1", "-0.5e+3", "01", "true", "nul", "null", `"`, "\\", "\x01"}
		rng := rand.New(rand.NewPCG(29, 4))
		for range 200000 {
			var sb strings.Builder
			for range rng.IntN(12) {
				sb.WriteString(tokens[rng.IntN(len(tokens))])
			}
			s := sb.String()
			if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
				t.Fatalf("validJSON(%q) = %t, json.Valid says %t", s, got, want)
			}
			checkCount(t, s)
		}
	})
}

// checkCount holds validCount's count of a valid array to the elements
// encoding/json finds in it.
func checkCount(t *testing.T, s string) {
	t.Helper()
	ok, n := validCount([]byte(s))
	var elems []json.RawMessage
	if !ok || json.Unmarshal([]byte(s), &elems) != nil {
		return
	}
	if n != len(elems) {
		t.Fatalf("validCount(%.60q) counted %d, encoding/json finds %d", s, n, len(elems))
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %t, json.Valid says %t", b, got, want)
		}
	})
}
