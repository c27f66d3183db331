package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// The two readers every encoded file must satisfy:
//
//   - sigs.k8s.io/yaml, what kubectl, kustomize and Argo CD use: a YAML 1.1 reader
//     (its goyaml.v2 fork) followed by a conversion to JSON. UseNumber keeps
//     integers beyond 2^53 exact.
//   - go.yaml.in/yaml/v3, a YAML 1.2 reader (with some 1.1 leftovers such as
//     0777 octals).

func readV2(b []byte) (any, error) {
	var v any
	err := yaml.Unmarshal(b, &v, func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d })
	return v, err
}

func readV3(b []byte) (any, error) {
	var v any
	dec := yaml3.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// A second document would mean the data broke out of the first.
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("more than one YAML document")
	}
	return v, nil
}

// roundTrip encodes v, reads the bytes back with both readers and compares each
// result with want (normally v itself). It returns the encoded bytes.
func roundTrip(v, want any) ([]byte, error) {
	b, err := Encode(v)
	if err != nil {
		return nil, fmt.Errorf("Encode: %w", err)
	}
	for _, r := range []struct {
		name string
		read func([]byte) (any, error)
	}{{"sigs.k8s.io/yaml (YAML 1.1)", readV2}, {"yaml.v3 (YAML 1.2)", readV3}} {
		got, err := r.read(b)
		if err != nil {
			return b, fmt.Errorf("%s cannot read\n%s\n%w", r.name, b, err)
		}
		if d := diff("", want, got); d != "" {
			return b, fmt.Errorf("%s reads back something else:\n%s\nencoded:\n%s", r.name, d, b)
		}
	}
	return b, nil
}

// diff compares an expected value of the JSON data model with what a reader
// produced, and describes the first difference ("" when equal). Numbers compare
// by value whatever their Go type; a reader turning a string into a number, a
// boolean, null or a timestamp is a difference.
func diff(at string, want, got any) string {
	if wn, ok := number(want); ok {
		gn, ok := number(got)
		if !ok || !sameNumber(wn, gn) {
			return fmt.Sprintf("%s: want number %v, got %#v", at, want, got)
		}
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want a mapping, got %#v", at, got)
		}
		if len(w) != len(g) {
			return fmt.Sprintf("%s: want keys %q, got %q", at, keys(w), keys(g))
		}
		for _, k := range keys(w) {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s: key %q missing (got keys %q)", at, k, keys(g))
			}
			if d := diff(at+"."+k, w[k], gv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: want a list, got %#v", at, got)
		}
		if len(w) != len(g) {
			return fmt.Sprintf("%s: want %d items, got %d: %#v", at, len(w), len(g), g)
		}
		for i := range w {
			if d := diff(fmt.Sprintf("%s[%d]", at, i), w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	case string, bool, nil:
		if want != got {
			return fmt.Sprintf("%s: want %#v, got %#v", at, want, got)
		}
		return ""
	}
	return fmt.Sprintf("%s: unexpected expected value %#v", at, want)
}

// num is a number as int64 (isInt) or float64.
type num struct {
	isInt bool
	i     int64
	f     float64
}

func number(v any) (num, bool) {
	switch t := v.(type) {
	case int:
		return num{isInt: true, i: int64(t)}, true
	case int32:
		return num{isInt: true, i: int64(t)}, true
	case int64:
		return num{isInt: true, i: t}, true
	case uint64:
		if t <= math.MaxInt64 {
			return num{isInt: true, i: int64(t)}, true
		}
		return num{f: float64(t)}, true
	case float64:
		return num{f: t}, true
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return num{isInt: true, i: i}, true
		}
		f, err := t.Float64()
		return num{f: f}, err == nil
	}
	return num{}, false
}

func sameNumber(a, b num) bool {
	switch {
	case a.isInt && b.isInt:
		return a.i == b.i
	case a.isInt:
		// An integral float may come back as the integer text JSON gives it
		// (2^55 as 36028797018963970), so compare as floats.
		return float64(a.i) == b.f
	case b.isInt:
		return sameNumber(b, a)
	}
	return a.f == b.f
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// asRead is what a reader gives back for a Go string: every byte of invalid
// UTF-8 becomes U+FFFD (the conversion to []rune does exactly that).
func asRead(s string) string { return string([]rune(s)) }

// normalise applies asRead to every string and key of a generic value.
func normalise(v any) any {
	switch t := v.(type) {
	case string:
		return asRead(t)
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[asRead(k)] = normalise(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = normalise(x)
		}
		return l
	}
	return v
}

// short shortens a string for test names.
func short(s string) string {
	s = fmt.Sprintf("%q", s)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return strings.ReplaceAll(s, "/", "∕")
}
