package manifest

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The expressions the hand-written name checks replace: each check must
// agree with its expression on every input.
var (
	subdomainRE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	labelRE      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelValueRE = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
	qualifiedRE  = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

func TestNameChecksMatchExpressions(t *testing.T) {
	inputs := []string{"", "a", "A", "-", ".", "_", "a-b", "a--b", "-a", "a-", "a.b", "a..b", ".a", "a.",
		"A_b.C", "_a", "a_", "a.b-c.d", "é", "aé", "a b", "0", "9-9", "a/b", strings.Repeat("a", 64)}
	rng := rand.New(rand.NewPCG(29, 4))
	const alphabet = "aZ09-_./ é"
	for range 20000 {
		b := make([]byte, rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, tc := range []struct {
		name  string
		re    *regexp.Regexp
		check func(string) bool
	}{
		{"subdomain", subdomainRE, isSubdomain},
		{"label", labelRE, isDNSLabel},
		{"label value", labelValueRE, func(s string) bool { return s == "" || isQualifiedPart(s) }},
		{"qualified name", qualifiedRE, isQualifiedPart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range inputs {
				if got, want := tc.check(s), tc.re.MatchString(s); got != want {
					t.Errorf("%q: got %t, the expression says %t", s, got, want)
				}
			}
		})
	}
}
