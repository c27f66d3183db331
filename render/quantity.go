package render

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	kresource "k8s.io/apimachinery/pkg/api/resource"
)

// Quota values are computed exactly, in rational arithmetic, from the decimal
// Waldur sent, and every rendered quantity is checked against that exact value:
// a limit that a profile's unit cannot hold, or that does not fit the integers
// Kubernetes counts in, is refused with the component named. Nothing is ever
// rounded, truncated or wrapped.

// quantityKind is the finest unit Kubernetes counts a quota key in.
type quantityKind int

const (
	// kindCount keys (pods, count/…, GPUs and other extended resources) hold
	// whole numbers.
	kindCount quantityKind = iota
	// kindCPU keys hold millicores: Kubernetes accounts CPU in thousandths.
	kindCPU
	// kindBytes keys (memory, storage, ephemeral-storage, hugepages-…) hold whole bytes.
	kindBytes
)

// kindOf classifies a quota key (ResourceQuota spec.hard or ManagedNamespace
// spec.quota) by the resource it names.
func kindOf(key string) quantityKind {
	name := strings.TrimPrefix(strings.TrimPrefix(key, "requests."), "limits.")
	switch {
	case name == "cpu":
		return kindCPU
	case name == "memory", name == "storage", name == "ephemeral-storage", strings.HasPrefix(name, "hugepages-"):
		return kindBytes
	}
	return kindCount
}

var (
	gib      = new(big.Rat).SetInt64(1 << 30)
	mib      = new(big.Rat).SetInt64(1 << 20)
	thousand = new(big.Rat).SetInt64(1000)
	maxInt64 = new(big.Rat).SetInt64(math.MaxInt64)
)

// exact returns the decimal value of v: the shortest decimal that parses back to
// v, which is the decimal Waldur sent (EffectiveLimits refuses a limit for which
// it is not).
func exact(v float64) *big.Rat {
	if n, ok := wholeFloat(v); ok {
		return new(big.Rat).SetInt64(n)
	}
	return shortestDecimal(v)
}

// shortestDecimal is exact for any v: the value of the shortest decimal that
// parses back to v.
func shortestDecimal(v float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	if !ok { // NaN or ±Inf: refused before they get here
		return new(big.Rat).SetInt64(-1)
	}
	return r
}

// ratString formats an exact value as the shortest plain decimal (no exponent).
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	// A value built from a decimal has a terminating expansion; find its length.
	for prec := 1; prec <= 400; prec++ {
		s := r.FloatString(prec)
		if back, ok := new(big.Rat).SetString(s); ok && back.Cmp(r) == 0 {
			return strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
	}
	return r.FloatString(400)
}

func mul(a, b *big.Rat) *big.Rat { return new(big.Rat).Mul(a, b) }

// quantity is one rendered quota value and the exact amount, in the key's base
// unit (cores, bytes or units), it must stand for.
type quantity struct {
	text string
	base *big.Rat
}

// plainQuantity is v as a plain decimal number of base units ("2.5", "4").
func plainQuantity(v *big.Rat) quantity { return quantity{ratString(v), v} }

// giQuantity is v gibibytes as "<v>Gi" ("1.5Gi").
func giQuantity(v *big.Rat) quantity { return quantity{ratString(v) + "Gi", mul(v, gib)} }

// checkQuantity refuses a quota value that is negative, that Kubernetes would
// round (finer than its unit), that does not fit a signed 64-bit integer of
// that unit, or whose text does not parse back to exactly its amount.
func checkQuantity(component, key string, q quantity) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("component %s: quota %s = %s is refused: %s", component, key, q.text, fmt.Sprintf(format, a...))
	}
	if q.base.Sign() < 0 {
		return bad("negative")
	}
	units, unit := q.base, "units"
	switch kindOf(key) {
	case kindCPU:
		units, unit = mul(q.base, thousand), "millicores"
		if !units.IsInt() {
			return bad("finer than the millicore Kubernetes counts CPU in")
		}
	case kindBytes:
		unit = "bytes"
		if !units.IsInt() {
			return bad("%s bytes is not a whole number of bytes", ratString(units))
		}
	default:
		if !units.IsInt() {
			return bad("%s counts whole units, %s is not a whole number", key, ratString(units))
		}
	}
	if units.Cmp(maxInt64) > 0 {
		return bad("%s %s does not fit the signed 64-bit integer Kubernetes counts in (at most %d)", ratString(units), unit, int64(math.MaxInt64))
	}
	if plainWhole(q) {
		return nil
	}
	return readsBack(q, bad)
}

// readsBack refuses q unless Kubernetes reads its text as exactly its amount.
func readsBack(q quantity, bad func(format string, a ...any) error) error {
	parsed, err := kresource.ParseQuantity(q.text)
	if err != nil {
		return bad("not a Kubernetes quantity: %v", err)
	}
	d := parsed.AsDec()
	got := new(big.Rat).SetInt(d.UnscaledBig())
	if sc := int64(d.Scale()); sc > 0 {
		got.Quo(got, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(sc), nil)))
	} else if sc < 0 {
		got.Mul(got, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(-sc), nil)))
	}
	if got.Cmp(q.base) != 0 {
		return bad("Kubernetes would read it as %s, not %s", ratString(got), ratString(q.base))
	}
	return nil
}

// decimalNumber is a plain decimal as JSON writes numbers (an optional sign,
// digits with an optional fraction, an optional exponent).
var decimalNumber = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?$`)

// exactAmount checks that v holds exactly the decimal s: a limit with more
// significant digits than a float64 holds, or too small for one, is refused
// rather than rounded.
func exactAmount(s string, v float64) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > -maxWholeFloat && n < maxWholeFloat && float64(n) == v {
		return nil // a whole number a float64 holds exactly: the common case
	}
	m := decimalNumber.FindStringSubmatch(s)
	if m == nil {
		return fmt.Errorf("%q is not a decimal number", s)
	}
	if m[1] != "" {
		if e, err := strconv.Atoi(m[1]); err != nil || e > 400 || e < -400 {
			return fmt.Errorf("%s is out of range", s)
		}
	}
	want, ok := new(big.Rat).SetString(s)
	if !ok {
		return fmt.Errorf("%q is not a decimal number", s)
	}
	if want.Cmp(exact(v)) != 0 {
		return fmt.Errorf("%s has more digits than can be held exactly (it would become %s)", s, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return nil
}

// Container defaults of the namespace profile's LimitRange, before the caps.
var (
	containerDefaultLimit   = map[string]string{"cpu": "1", "memory": "1Gi"}
	containerDefaultRequest = map[string]string{"cpu": "100m", "memory": "128Mi"}
)

// defaultLimitRange gives containers that set no resources a default limit and
// request for every resource the quota constrains (cpu, memory): without one,
// Kubernetes refuses every such Pod under a quota on requests or limits. The
// defaults are 1 CPU and 1Gi limit, 100m and 128Mi request, each capped at the
// tenant's quota so that one default container always fits; a resource whose
// quota is zero (a paused tenant) gets none, so Pods stay refused.
func defaultLimitRange(quota map[string]string) *LimitRangeData {
	lr := &LimitRangeData{Default: map[string]string{}, DefaultRequest: map[string]string{}}
	capped := func(v string, caps ...string) (kresource.Quantity, bool) {
		q := kresource.MustParse(v)
		for _, c := range caps {
			if c == "" {
				continue
			}
			cq, err := kresource.ParseQuantity(c)
			if err != nil {
				return q, false
			}
			if cq.Cmp(q) < 0 {
				q = cq
			}
		}
		return q, !q.IsZero()
	}
	for _, res := range []string{"cpu", "memory"} {
		limitCap := quota["limits."+res]
		requestCap := quota["requests."+res]
		if requestCap == "" {
			requestCap = quota[res]
		}
		if limitCap == "" && requestCap == "" {
			continue
		}
		def, ok := capped(containerDefaultLimit[res], limitCap)
		if !ok {
			continue
		}
		req, ok := capped(containerDefaultRequest[res], def.String(), requestCap)
		if !ok {
			continue
		}
		lr.Default[res], lr.DefaultRequest[res] = def.String(), req.String()
	}
	if len(lr.Default) == 0 {
		return nil
	}
	return lr
}

// maxWholeFloat bounds the whole numbers a float64 holds exactly (2^53):
// below it, the shortest decimal of a whole float64 is that whole number.
const maxWholeFloat = 1 << 53

// wholeFloat returns v as an int64 when it is a whole number a float64 holds
// exactly, so that exact needs no decimal parse for the usual limits.
func wholeFloat(v float64) (int64, bool) {
	if v != math.Trunc(v) || v <= -maxWholeFloat || v >= maxWholeFloat {
		return 0, false
	}
	return int64(v), true
}

// plainWhole reports whether q's text is the whole number of its amount,
// plainly ("4") or in binary units ("4Gi", "512Mi"): Kubernetes reads such a
// text exactly, so checkQuantity need not parse it back.
func plainWhole(q quantity) bool {
	if !q.base.IsInt() || !q.base.Num().IsInt64() {
		return false
	}
	n := q.base.Num().Int64()
	if q.text == strconv.FormatInt(n, 10) {
		return true
	}
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"Gi", 30}, {"Mi", 20}} {
		if n%(1<<u.shift) == 0 && q.text == strconv.FormatInt(n>>u.shift, 10)+u.suffix {
			return true
		}
	}
	return false
}
