package manifest

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	update   = flag.Bool("update", false, "rewrite the golden files under testdata/golden")
	plainLen = flag.Int("plainlen", 4, "TestPlainSafeExhaustive checks strings up to this length (5 takes about a minute)")
)

// trickyStrings are strings a careless encoder would write so that a YAML reader
// takes them for something else, or cannot read them at all.
var trickyStrings = []string{
	// empty and blank
	"", " ", "  ", "\t", " a", "a ", " a ", "a  b", "a\tb",
	// numbers in every base and form either reader knows
	"0", "1", "-1", "+1", "007", "08", "09", "0777", "0o17", "0O17", "0x1F", "0X1F", "0xff", "0b101", "0B101",
	"-0x1F", "+0b1", "1_000", "1__0", "0_x1", "0__b1", "0_o7", "_1", "1_", "12345678901234567890",
	"1.5", "-1.5", "+1.5", ".5", "-.5", "5.", "1.2.3", "1_.5", "1._5", "9_9.9_e1_0", "1e5", "1E5", "1e+5", "1e-5", "-1E-5", "1.5e3", "6.8523015e+5",
	".inf", ".Inf", ".INF", "-.inf", "+.inf", ".nan", ".NaN", ".NAN", "inf", "nan", "Infinity", "NaN",
	// sexagesimal (YAML 1.1)
	"1:20", "190:20:30", "-1:20", "1:20.5", "12:30:45",
	// dates and timestamps
	"2026-01-02", "2026-1-2", "2026-01-02T15:04:05Z", "2026-01-02 15:04:05", "2026-01-02t15:04:05.5+01:00", "2026-01-02x",
	// booleans and null, in every case either reader knows and a few it does not
	"y", "Y", "n", "N", "yes", "Yes", "YES", "yEs", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
	"true", "True", "TRUE", "tRue", "false", "False", "FALSE", "null", "Null", "NULL", "nULL", "~", "-", "--", "---", "...", "=", "<<",
	// indicators and YAML syntax
	"a: b", "a:b", "a:", ":a", ": a", "a #b", "a#b", "#x", "# x", "- x", "-x", "--x", "? x", "?x", "*x", "&x", "!x", "!!str x", "%x", "@x", "`x",
	"|", ">", "|-", ">+", "{", "}", "{}", "[", "]", "[]", "[a, b]", "{a: b}", ",", "a,b", "a, b",
	"http://example.org/a?b=c#d", "keycloakoidc_group://project_x", "oidc:alice", "c-m-4xk2p9q7:p-abc",
	// quotes and backslashes
	`"`, `'`, `''`, `""`, `a"b`, `a'b`, `\`, `\\`, `a\nb`, `\u0041`, `"quoted"`, `'single'`,
	// line breaks, tabs and control characters
	"\n", "a\nb", "a\n", "\na", "a\r\nb", "a\rb", "a\n\nb", "\x00", "a\x00b", "\x01\x02\x1f", "\x7f", "\x1b[31m", "\f", "\v", "\b",
	"a\n---\nb: c", "a\n...\n", "key: value\nother: x",
	// unicode
	"é", "ünïcödé", "日本語", "🙂", "\u00a0", "a\u00a0b", "\u0085", "a\u2028b", "\u2029", "\ufeff", "\ufeffa", "\u200b", "\ue000", "\ufffd", "\ufffe", "\U0010ffff", "\u00ad",
	// template text that must stay text
	"{{ .Name }}", "{{", "}}", "${VAR}", "$(cmd)",
	// a long string
	strings.Repeat("abc ", 300),
}

func TestEncodeStringsRoundTrip(t *testing.T) {
	for _, s := range trickyStrings {
		t.Run(short(s), func(t *testing.T) {
			cases := map[string]any{
				"top level":     s,
				"value":         map[string]any{"k": s},
				"key":           map[string]any{s: "v"},
				"list item":     []any{s},
				"nested":        map[string]any{"a": []any{map[string]any{s: []any{s}}, []any{s}}},
				"key and value": map[string]any{s: s, "other": s},
			}
			for name, v := range cases {
				if _, err := roundTrip(v, v); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}

// TestPlainSafeExhaustive checks every string of up to -plainlen characters over an
// alphabet chosen to build numbers, dates, base prefixes, booleans and
// indicators: whenever the encoder would write one unquoted, both readers must
// read the same string back. (Quoted strings are covered by the tests above.)
func TestPlainSafeExhaustive(t *testing.T) {
	alphabet := "018bBoOxXeE_.:-+ #ny~a/"
	maxLen := *plainLen
	if testing.Short() {
		maxLen = 3
	}
	var checked, failed int
	var walk func(prefix string)
	walk = func(prefix string) {
		if failed > 10 {
			return
		}
		if prefix != "" && plainSafe(prefix) {
			checked++
			v := map[string]any{"k": prefix, prefix: "v"}
			if _, err := roundTrip(v, v); err != nil {
				t.Errorf("%q: %v", prefix, err)
				failed++
			}
		}
		if len(prefix) == maxLen {
			return
		}
		for _, c := range alphabet {
			next := prefix + string(c)
			// Nothing extends a string that cannot start a plain scalar.
			if prefix == "" && !plainSafe(next) && !strings.ContainsRune("018_", c) {
				continue
			}
			walk(next)
		}
	}
	walk("")
	t.Logf("%d plain strings checked", checked)
}

func TestEncodeValuesRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"true", true},
		{"false", false},
		{"int", 42},
		{"negative int", -7},
		{"int32", int32(-2147483648)},
		{"int64 max", int64(math.MaxInt64)},
		{"int64 min", int64(math.MinInt64)},
		{"float fractional", 0.1},
		{"float negative", -2.5},
		{"float integral", 3.0},
		{"float negative zero", math.Copysign(0, -1)},
		{"float integral large", 1e15},
		{"float integral huge", 1e300},
		{"float 2^53+", float64(1<<53) * 4},
		{"float tiny", 5e-324},
		{"float small", 1.5e-7},
		{"float max", math.MaxFloat64},
		{"float many digits", 123456789.123456789},
		{"empty map", map[string]any{}},
		{"empty list", []any{}},
		{"map of empties", map[string]any{"m": map[string]any{}, "l": []any{}, "n": nil, "s": ""}},
		{"list of empties", []any{map[string]any{}, []any{}, nil, ""}},
		{"list of lists", []any{[]any{[]any{1, 2}, []any{}}, []any{"a"}, []any{[]any{[]any{"deep"}}}}},
		{"maps in lists", []any{map[string]any{"a": 1, "b": []any{map[string]any{"c": nil}}}, map[string]any{"d": map[string]any{"e": "f"}}}},
		{"lists in maps in lists", []any{map[string]any{"a": []any{[]any{1}, map[string]any{"x": []any{}}}}}},
		{"mixed", map[string]any{
			"int": int64(1), "float": 1.25, "bool": true, "null": nil, "str": "s",
			"list": []any{int64(1), 2.5, false, nil, "x", []any{}, map[string]any{}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := roundTrip(c.v, c.v); err != nil {
				t.Error(err)
			}
			// The same value nested under a key and in a list.
			for _, v := range []any{map[string]any{"k": c.v}, []any{c.v, c.v}} {
				if _, err := roundTrip(v, v); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestEncodeNumbersText pins how numbers are written: integral floats below 1e15
// as integers, the others in the shortest form that reads back exactly.
func TestEncodeNumbersText(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{0, "0\n"},
		{int64(-12), "-12\n"},
		{int32(7), "7\n"},
		{int64(math.MaxInt64), "9223372036854775807\n"},
		{3.0, "3\n"},
		{math.Copysign(0, -1), "0\n"},
		{999999999999999.0, "999999999999999\n"},
		{1e15, "1e+15\n"},
		{0.1, "0.1\n"},
		{-2.5, "-2.5\n"},
		{1.5e-7, "1.5e-07\n"},
		{true, "true\n"},
		{nil, "null\n"},
	}
	for _, c := range cases {
		b, err := Encode(c.v)
		if err != nil {
			t.Errorf("%v: %v", c.v, err)
			continue
		}
		if string(b) != c.want {
			t.Errorf("Encode(%#v) = %q, want %q", c.v, b, c.want)
		}
	}
}

// TestEncodeInvalidUTF8 documents that YAML cannot carry bytes that are not
// UTF-8: every such byte is written as U+FFFD (as encoding/json does too), in
// keys as in values.
func TestEncodeInvalidUTF8(t *testing.T) {
	for _, s := range []string{"\xff", "a\xffb", "\xc3", "\xc3\x28", "\xed\xa0\x80", "\xf0\x9f\x99", "ok\x80\x80"} {
		v := map[string]any{"k": s, s: []any{s}}
		if _, err := roundTrip(v, normalise(v)); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	b, err := Encode(map[string]any{"k": "a\xffb"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "k: \"a\\uFFFDb\"\n"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
}

// TestEncodeKeysCollidingAfterReplacement: two keys that differ only in invalid
// bytes would both be written as the same key, which a strict reader rejects
// and a lenient one silently merges; Encode refuses.
func TestEncodeKeysCollidingAfterReplacement(t *testing.T) {
	for _, m := range []map[string]any{
		{"\xff": 1, "\xfe": 2},
		{"a\xff": 1, "a\ufffd": 2},
		{"x": map[string]any{"\x80": 1, "\x81": 2}},
	} {
		if b, err := Encode(m); err == nil {
			t.Errorf("Encode(%q) = %q, want an error", m, b)
		} else if !strings.Contains(err.Error(), "U+FFFD") {
			t.Errorf("error %q does not explain the replacement", err)
		}
	}
}

// TestEncodeLongKeys: YAML limits an implicit key to 1024 characters, so longer
// keys are written in the explicit "? key" form.
func TestEncodeLongKeys(t *testing.T) {
	long := strings.Repeat("k", 2000)
	quoted := strings.Repeat("\x01", 300) // 6 characters each once escaped
	invalid := strings.Repeat("\xff", 200)
	for name, v := range map[string]any{
		"scalar value":  map[string]any{long: "v", "a": 1},
		"map value":     map[string]any{long: map[string]any{"x": 1, long + "2": []any{1}}},
		"list value":    map[string]any{long: []any{"a", []any{"b"}, map[string]any{"c": 1}}},
		"empty values":  map[string]any{long: map[string]any{}, long + "l": []any{}},
		"in list":       []any{map[string]any{long: "v", "b": []any{1}}, map[string]any{"a": 1, long: map[string]any{long: 2}}},
		"escaped key":   map[string]any{quoted: "v"},
		"invalid bytes": map[string]any{invalid: "v"},
	} {
		if _, err := roundTrip(v, normalise(v)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The boundary: the longest implicit key, then the shortest explicit one,
	// also as quoted keys whose escapes make them longer than the string.
	atMax := strings.Repeat("k", maxImplicitKey)
	for _, c := range []struct{ key, want string }{
		{atMax, atMax + ": v\n"},
		{atMax + "k", "? " + atMax + "k\n: v\n"},
		{"\x01" + atMax[:maxImplicitKey-8], `"\u0001` + atMax[:maxImplicitKey-8] + `": v` + "\n"},
		{"\x01" + atMax[:maxImplicitKey-7], `? "\u0001` + atMax[:maxImplicitKey-7] + `"` + "\n: v\n"},
	} {
		v := map[string]any{c.key: "v"}
		b, err := roundTrip(v, v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("key of %d bytes: got %.40q…, want %.40q…", len(c.key), b, c.want)
		}
	}
	// Nested and in a list, the explicit key keeps the indentation.
	b, err := Encode([]any{map[string]any{"a": map[string]any{atMax + "x": []any{1}, "b": 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "- a:\n    b: 2\n    ? " + atMax + "x\n    :\n      - 1\n"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"NaN", math.NaN(), "cannot encode NaN"},
		{"+Inf", math.Inf(1), "cannot encode +Inf"},
		{"-Inf in map", map[string]any{"a": map[string]any{"b": math.Inf(-1)}}, "a: b: cannot encode -Inf"},
		{"uint", map[string]any{"x": []any{"ok", uint(1)}}, "x: [1]: cannot encode a value of type uint"},
		{"float32", float32(1), "cannot encode a value of type float32"},
		{"typed map", map[string]string{"a": "b"}, "cannot encode a value of type map[string]string"},
		{"typed slice", []string{"a"}, "cannot encode a value of type []string"},
		{"struct", struct{}{}, "cannot encode a value of type struct {}"},
	}
	for _, c := range cases {
		b, err := Encode(c.v)
		if err == nil {
			t.Errorf("%s: Encode = %q, want an error", c.name, b)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("%s: error %q, want %q", c.name, err, c.want)
		}
	}
}

// TestEncodeToAppends: EncodeTo adds to what the buffer holds, and a stream of
// documents built with it reads back document by document.
func TestEncodeToAppends(t *testing.T) {
	var b bytes.Buffer
	objs := []any{
		map[string]any{"a": 1, "b": map[string]any{"c": []any{"x"}}},
		[]any{map[string]any{"d": "---"}},
		"...",
	}
	for _, o := range objs {
		b.WriteString("---\n")
		if err := EncodeTo(&b, o); err != nil {
			t.Fatal(err)
		}
	}
	want := "---\na: 1\nb:\n  c:\n  - x\n---\n- d: \"---\"\n---\n\"...\"\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestEncodeDeterministic(t *testing.T) {
	m := map[string]any{}
	for i := 0; i < 64; i++ {
		k := strings.Repeat(string(rune('a'+i%26)), 1+i/26)
		m[k] = map[string]any{"x": i, "y": []any{k, map[string]any{k: i, "z": nil}}, k: k}
	}
	first, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		// A fresh copy each time gives the runtime every chance to iterate differently.
		c := normalise(m)
		b, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, first) {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", i, b, first)
		}
	}
}

// TestEncodeGolden pins the exact bytes of representative objects. Run
// go test ./manifest -update to rewrite testdata/golden after an intended change.
func TestEncodeGolden(t *testing.T) {
	cases := map[string]any{
		"namespace": map[string]any{
			"apiVersion": "v1",
			"kind":       "Namespace",
			"metadata": map[string]any{
				"name": "tenant-alpha",
				"labels": map[string]any{
					LabelManagedBy:    ManagedByValue,
					LabelResourceUUID: "0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e",
					"tier":            "research",
				},
				"annotations": map[string]any{
					AnnotationOffering:          "66c0217f031fec833da0e057be1c007e",
					"openshift.io/display-name": "Alpha: the first (test) tenant",
					"openshift.io/description":  "alpha\nsecond line",
				},
			},
		},
		"managednamespace": map[string]any{
			"apiVersion": "provisioning.hpc.ut.ee/v1",
			"kind":       "ManagedNamespace",
			"metadata":   map[string]any{"name": "waldur-alpha", "namespace": "waldur-system"},
			"spec": map[string]any{
				"name":        "waldur-alpha",
				"quota":       map[string]any{"cpu": "4", "memory": "16Gi", "storage": "100Gi", "nvidia.com/gpu": "1"},
				"adminGroups": []any{"ns_alpha_admin"},
				"rwUsers":     []any{},
				"roUsers":     []any{"alice@example.org", "bob@example.org"},
				"owner":       map[string]any{"orgID": "4a5b6c7d-0000-4000-8000-000000000001"},
			},
		},
		"rolebinding": map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1",
			"kind":       "RoleBinding",
			"metadata":   map[string]any{"name": "waldur-admin", "namespace": "tenant-alpha"},
			"roleRef":    map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
			"subjects": []any{
				map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "oidc:ns_alpha_admin"},
				map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "oidc:alice"},
			},
		},
		"networkpolicy": map[string]any{
			"apiVersion": "networking.k8s.io/v1",
			"kind":       "NetworkPolicy",
			"metadata":   map[string]any{"name": "default-deny-ingress", "namespace": "tenant-alpha"},
			"spec": map[string]any{
				"podSelector": map[string]any{},
				"policyTypes": []any{"Ingress"},
				"ingress": []any{map[string]any{"from": []any{map[string]any{
					"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "tenant-alpha"}},
				}}}},
			},
		},
		"scalars": map[string]any{
			"strings": []any{"", "yes", "No", "on", "~", "null", "0x1F", "0X1F", "1_000", "1:20", "2026-01-02", "1e5", ".inf",
				"a: b", "a #b", "#x", "- x", "*x", "&x", "!x", "%x", "@x", "`x", " lead", "trail ", "tab\there", "two\nlines",
				"quote\"back\\slash", "é", "a\u2028b", "\ufeff", "\x00\x1f\x7f", "\xff", "plain text, with (parens) and a/path:colon"},
			"numbers":  []any{0, int64(-1), 1.5, 3.0, 1e15, 1e-7, int64(math.MaxInt64)},
			"booleans": []any{true, false},
			"null":     nil,
			"nested":   []any{[]any{}, map[string]any{}, []any{[]any{"a"}}, map[string]any{"b": []any{map[string]any{"c": "d"}}}},
			"yes":      "keys are quoted like values",
		},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := roundTrip(v, normalise(v))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./manifest -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Encode differs from %s (run go test ./manifest -update if intended)\ngot:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}

// TestEncodeExactSize: Encode returns a slice of its own, exactly as long as
// its capacity (a render keeps every file it encodes), and never one that a
// later Encode writes into.
func TestEncodeExactSize(t *testing.T) {
	big := map[string]any{}
	for i := range 200 {
		big[fmt.Sprintf("key-%03d", i)] = strings.Repeat("v", i)
	}
	for _, tc := range []struct {
		name string
		v    any
	}{{"small", map[string]any{"a": "b"}}, {"large", big}, {"list", []any{"x", 1.5, true}}} {
		t.Run(tc.name, func(t *testing.T) {
			first, err := Encode(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if cap(first) != len(first) {
				t.Fatalf("len %d, cap %d", len(first), cap(first))
			}
			want := string(first)
			for range 3 {
				if _, err := Encode(big); err != nil {
					t.Fatal(err)
				}
			}
			if string(first) != want {
				t.Fatal("a later Encode changed an earlier result")
			}
		})
	}
}
