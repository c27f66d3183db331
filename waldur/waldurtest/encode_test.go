package waldurtest

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// appendJSON writes what json.Marshal writes, byte for byte: on values of
// the fake's shapes and on random ones (strings of any bytes, numbers of
// any size, nesting, types it hands to json.Marshal).
func TestAppendJSONMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 29))
	values := []any{
		nil, "", "plain", `quote " and \ back`, "<html> & co", "tab\there", "ünïcödé", "\u2028", string([]byte{0xff, 'a'}),
		0.0, 1.0, -3.0, 2.5, 1e21, 1e20, 1e-7, math.MaxInt64, float64(1 << 53), true, false, 42,
		[]any{}, []any(nil), map[string]any{}, map[string]any(nil), []object{{"b": 1.0, "a": "x"}, nil},
		map[string]string{"detail": "Not found."}, []string{"a", "b"},
	}
	for range 5000 {
		values = append(values, randomValue(r, 3))
	}
	for i, v := range values {
		want, werr := json.Marshal(v)
		got, gerr := appendJSON(nil, v)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("value %d (%#v): appendJSON %s (%v), json.Marshal %s (%v)", i, v, got, gerr, want, werr)
		}
	}
}

// randomValue is a random value of the fake's shapes, depth levels deep at
// most.
func randomValue(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth == 0 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return randomString(r)
	case 2:
		return r.IntN(2) == 0
	case 3:
		return float64(r.IntN(1_000_000) - 500_000)
	case 4:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(50)-25))
	case 5:
		return r.IntN(1000)
	case 6:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth-1)
		}
		return l
	default:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomValue(r, depth-1)
		}
		return m
	}
}

// randomString is a short string of letters and any other bytes.
func randomString(r *rand.Rand) string {
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte(r.IntN(256))
		if r.IntN(2) == 0 {
			b[i] = byte('a' + r.IntN(26))
		}
	}
	return string(b)
}
