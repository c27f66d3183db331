package render

import (
	"math/rand/v2"
	"testing"
)

// TestReservedASCIIMatchesUnicode holds the printable-ASCII fast path of
// reservedName to the general check on chosen and random ASCII names.
func TestReservedASCIIMatchesUnicode(t *testing.T) {
	names := []string{
		"a", " ", "   ", " a", "a ", " a ", "alice", "system:masters", "SYSTEM:x", "System:",
		"system", "kube:admin", "KUBE:", "Kube:x", "kube", "xkube:", "a system:", "~", "!kube:",
	}
	rng := rand.New(rand.NewPCG(29, 4))
	const alphabet = " :aAbBkKuUeEsSyYtTmM-_.@~"
	for range 200000 {
		b := make([]byte, 1+rng.IntN(9))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = byte(0x20 + rng.IntN(0x5f))
			} else {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		names = append(names, string(b))
	}
	for _, n := range names {
		if !printableASCII(n) {
			t.Fatalf("%q: not taken as printable ASCII", n)
		}
		if got, want := reservedASCII(n), reservedUnicode(n); got != want {
			t.Fatalf("%q: fast path says %q, general check %q", n, got, want)
		}
	}
	t.Run("not ascii", func(t *testing.T) {
		for _, n := range []string{"", "a\tb", "a\x7f", "\u212aube:x", "caf\u00e9", "a\u200bb", "a\n"} {
			if printableASCII(n) {
				t.Errorf("%q: taken as printable ASCII", n)
			}
		}
	})
}
