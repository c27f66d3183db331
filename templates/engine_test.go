package templates

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/waldur/waldur-gitops/manifest"
)

// testData is a small stand-in for render.TenantData covering every kind of
// value a template meets: strings, numbers, booleans, maps, lists, structs with
// json tags, nil and empty values, pointers.
type testData struct {
	Name        string
	Namespace   string
	Empty       string
	Labels      map[string]string
	NilLabels   map[string]string
	EmptyLabels map[string]string
	List        []string
	NilList     []string
	EmptyList   []string
	Members     []member
	Count       int
	Zero        int
	Ratio       float64
	ZeroFloat   float64
	On          bool
	Off         bool
	Inner       *inner
	NilInner    *inner
	Any         any
	Item        any
	hidden      string // must stay out of reach of templates
}

type inner struct {
	Value string
	List  []string
}

type member struct {
	Username string `json:"username"`
	Email    string `json:"email,omitempty"`
	Role     string `json:"role"`
	Secret   string `json:"-"`
}

func (d *testData) WithItem(item any) any {
	c := *d
	c.Item = item
	return &c
}

func newData() *testData {
	return &testData{
		Name:        "alpha",
		Namespace:   "tenant-alpha",
		Labels:      map[string]string{"tier": "research", "team": "hpc"},
		EmptyLabels: map[string]string{},
		List:        []string{"a", "b"},
		EmptyList:   []string{},
		Members: []member{
			{Username: "alice", Email: "alice@example.org", Role: "admin", Secret: "s1"},
			{Username: "bob", Role: "readonly", Secret: "s2"},
		},
		Count:  3,
		Ratio:  2.5,
		On:     true,
		Inner:  &inner{Value: "in", List: []string{"x"}},
		hidden: "secret",
	}
}

// object wraps a body in a valid object so that a test can focus on one part.
func object(spec string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fixed\n" + spec
}

func mustParse(t *testing.T, src string) *Template {
	t.Helper()
	tp, err := Parse("site/t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tp
}

// run parses and executes src against data and returns the only object.
func run(t *testing.T, src string, data any) map[string]any {
	t.Helper()
	objs, err := mustParse(t, src).Execute(data, "cluster")
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if len(objs) != 1 {
		t.Fatalf("got %d objects, want 1", len(objs))
	}
	return objs[0].Body
}

// asJSON makes values comparable across the two evaluation paths, which may
// differ in number types (int64 3 and float64 3 both give 3).
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want string // after "template site/t.yaml"
	}{
		{"invalid YAML", "a: [b\n", ": invalid YAML: "},
		{"invalid YAML indentation", "apiVersion: v1\n kind: x\n", ": invalid YAML: "},
		{"empty file", "", ": no documents"},
		{"only comments and empty documents", "# nothing\n---\n---\n", ": no documents"},
		{"list document", "- a\n- b\n", ", document 1: a document must be a mapping (a Kubernetes object), got line 1"},
		{"scalar document", "just text\n", ", document 1: a document must be a mapping"},
		{"second document bad", object("") + "---\n- x\n", ", document 2: a document must be a mapping (a Kubernetes object), got line 6"},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: x\n", ", document 1: object has no kind"},
		{"no apiVersion", "kind: X\nmetadata:\n  name: x\n", ", document 1: object has no apiVersion"},
		{"no metadata", "apiVersion: v1\nkind: X\n", ", document 1: object has no metadata"},
		{"no metadata.name", "apiVersion: v1\nkind: X\nmetadata:\n  namespace: x\n", ", document 1: object has no metadata.name"},
		{"metadata not a mapping", "apiVersion: v1\nkind: X\nmetadata: \"{{ value .Labels }}\"\n", ", document 1: object has no metadata.name"},
		{"templated key", object("data:\n  \"{{ .Name }}\": x\n"), `, document 1: data: line 6: key "{{ .Name }}": keys cannot be templated; emit a whole mapping with value`},
		{"unquoted expression", object("data:\n  a: {{ .Name }}\n"), ", document 1: data: a: line 6: mapping keys must be strings"},
		{"complex key", object("data:\n  ? [a]\n  : b\n"), ", document 1: data: line 6: mapping keys must be strings"},
		{"merge key", object("base: &b {a: 1}\ndata:\n  <<: *b\n"), ", document 1: data: line 7: merge keys (<<) are not supported"},
		{"duplicate key", object("data:\n  a: 1\n  a: 2\n"), `, document 1: data: line 7: duplicate key "a"`},
		{"unknown directive", "x-render:\n  foreach: x\n" + object(""), ", document 1: x-render.foreach: unknown directive (known: target, when, forEach)"},
		{"x-render not a mapping", "x-render: yes\n" + object(""), ", document 1: x-render must be a mapping"},
		{"directive not a string", "x-render:\n  when: [a]\n" + object(""), ", document 1: x-render.when must be a string"},
		{"bad when expression", "x-render:\n  when: \"{{ .Name \"\n" + object(""), `, document 1: x-render.when: template expression "{{ .Name ": `},
		{"bad forEach expression", "x-render:\n  forEach: \"{{ range }}\"\n" + object(""), `, document 1: x-render.forEach: template expression "{{ range }}"`},
		{"bad expression syntax", object("data:\n  a: \"{{ .Name }\"\n"), `, document 1: data: a: line 6: template expression "{{ .Name }": template: :1: unexpected "}" in operand`},
		{"unclosed action", object("data:\n  a: \"{{ if .On }}x\"\n"), `, document 1: data: a: line 6: template expression "{{ if .On }}x": template: :1: unexpected EOF`},
		{"unknown function", object("data:\n  a: \"{{ shout .Name }}\"\n"), `, document 1: data: a: line 6: template expression "{{ shout .Name }}": template: :1: function "shout" not defined`},
		{"error deep in a list", object("data:\n  a:\n  - b: \"{{ end }}\"\n"), `, document 1: data: a: b: line 7: template expression "{{ end }}"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp, err := Parse("site/t.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("Parse succeeded (%d documents), want error %q", len(tp.docs), c.want)
			}
			if want := "template site/t.yaml" + c.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n%q\ndoes not start with\n%q", err, want)
			}
		})
	}
}

func TestParseNames(t *testing.T) {
	tp := mustParse(t, object(""))
	if tp.Name != "site/t.yaml" || tp.File != "t.yaml" {
		t.Errorf("Name %q File %q", tp.Name, tp.File)
	}
}

// TestParseLiterals: untemplated scalars keep their YAML type, except that
// timestamps and other exotic types stay text; comments, anchors and empty
// documents are accepted.
func TestParseLiterals(t *testing.T) {
	src := "# a comment\n---\n" + object(`data:
  str: plain
  quotedNumber: "5"
  int: 5
  negative: -3
  hex: 0x1F
  float: 1.5
  bool: true
  yes11: yes
  null: null
  tilde: ~
  date: 2026-01-02
  stamp: 2026-01-02T10:00:00Z
  anchor: &a [1, 2]
  alias: *a
  block: |
    line one
    line two
  empty: {}
  emptyList: []
`) + "---\n"
	body := run(t, src, newData())
	want := map[string]any{
		"str": "plain", "quotedNumber": "5", "int": int64(5), "negative": int64(-3), "hex": int64(31), "float": 1.5,
		"bool": true, "yes11": "yes", "null": nil, "tilde": nil, "date": "2026-01-02", "stamp": "2026-01-02T10:00:00Z",
		"anchor": []any{int64(1), int64(2)}, "alias": []any{int64(1), int64(2)},
		"block": "line one\nline two\n", "empty": map[string]any{}, "emptyList": []any{},
	}
	if !reflect.DeepEqual(body["data"], want) {
		t.Errorf("data =\n%#v\nwant\n%#v", body["data"], want)
	}
}

// TestFastAndTemplatePathsAgree: "{{ .X }}", "{{ value .X }}" and
// "{{ optional .X }}" are evaluated by walking fields directly; the same
// expression written so that it needs text/template must give the same result.
func TestFastAndTemplatePathsAgree(t *testing.T) {
	pairs := []struct{ fast, slow string }{
		{"{{ .Name }}", "{{ .Name | lower }}"},
		{"{{ .Name }}", "{{ printf \"%s\" .Name }}"},
		{"{{- .Namespace -}}", "{{ .Namespace }}{{/* comment */}}{{ \"\" }}"},
		{"{{ .Inner.Value }}", "{{ .Inner.Value | trimPrefix \"zz\" }}"},
		{"{{ .Labels.tier }}", "{{ index .Labels \"tier\" }}"},
		{"{{ .Count }}", "{{ .Count | print }}"},
		{"{{ .Ratio }}", "{{ print .Ratio }}"},
		{"{{ .On }}", "{{ print .On }}"},
		{"{{ value .Labels }}", "{{ .Labels | value }}"},
		{"{{ value .Members }}", "{{ .Members | value }}"},
		{"{{ value .Inner }}", "{{ .Inner | value }}"},
		{"{{ value .List }}", "{{ value (.List) }}"},
		{"{{ value .EmptyList }}", "{{ .EmptyList | value }}"},
		{"{{ value .NilList }}", "{{ .NilList | value }}"},
		{"{{ value .Count }}", "{{ .Count | value }}"},
		{"{{ value .Ratio }}", "{{ .Ratio | value }}"},
		{"{{ value .On }}", "{{ .On | value }}"},
		{"{{ value .Empty }}", "{{ .Empty | value }}"},
		{"{{ optional .Labels }}", "{{ .Labels | optional }}"},
		{"{{ optional .NilLabels }}", "{{ .NilLabels | optional }}"},
		{"{{ optional .EmptyLabels }}", "{{ .EmptyLabels | optional }}"},
		{"{{ optional .Empty }}", "{{ .Empty | optional }}"},
		{"{{ optional .Name }}", "{{ .Name | optional }}"},
	}
	for _, p := range pairs {
		src := object("data:\n  v: " + quote(p.fast) + "\n  w: " + quote(p.slow) + "\n")
		tp := mustParse(t, src)
		if tp.docs[0].body.vals[3].vals[0].expr.path == nil {
			t.Errorf("%s did not take the fast path", p.fast)
		}
		if tp.docs[0].body.vals[3].vals[1].expr.path != nil {
			t.Errorf("%s took the fast path", p.slow)
		}
		body := run(t, src, newData())
		data := body["data"].(map[string]any)
		fv, fok := data["v"]
		sv, sok := data["w"]
		if fok != sok || asJSON(t, fv) != asJSON(t, sv) {
			t.Errorf("%s gives %#v (present %v), %s gives %#v (present %v)", p.fast, fv, fok, p.slow, sv, sok)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestValueAndOptional pins what value and optional produce: value gives the
// data itself (nil as null); optional gives the same but drops the key or list
// item when the value is nil or "" (an empty but non-nil list or map stays).
func TestValueAndOptional(t *testing.T) {
	src := object(`spec:
  optNilMap: "{{ optional .NilLabels }}"
  optEmptyString: "{{ optional .Empty }}"
  optNilList: "{{ optional .NilList }}"
  optNilPointer: "{{ optional .NilInner }}"
  optNilAny: "{{ optional .Any }}"
  optNilPath: "{{ optional .NilInner.Value }}"
  optNoKey: "{{ optional .Labels.nope }}"
  optNilMapKey: "{{ optional .NilLabels.nope }}"
  optEmptyMap: "{{ optional .EmptyLabels }}"
  optEmptyList: "{{ optional .EmptyList }}"
  optZero: "{{ optional .Zero }}"
  optFalse: "{{ optional .Off }}"
  optMap: "{{ optional .Labels }}"
  valNilMap: "{{ value .NilLabels }}"
  valNilList: "{{ value .NilList }}"
  valNilPointer: "{{ value .NilInner }}"
  valEmptyString: "{{ value .Empty }}"
  valEmptyList: "{{ value .EmptyList }}"
  valInt: "{{ value .Count }}"
  valFloat: "{{ value .Ratio }}"
  valBool: "{{ value .On }}"
  valString: "{{ value .Name }}"
  valStruct: "{{ value .Inner }}"
  valTagged: "{{ value .Members }}"
  textInt: "{{ .Count }}"
  textBool: "{{ .Off }}"
  textNil: "{{ .NilLabels }}"
  textEmpty: "{{ .Empty }}"
  list:
  - "{{ optional .Empty }}"
  - literal
  - "{{ optional .NilList }}"
  - "{{ optional .List }}"
  - "{{ value .NilList }}"
  - "{{ .Empty | optional }}"
`)
	body := run(t, src, newData())
	want := map[string]any{
		"optEmptyMap":    map[string]any{},
		"optEmptyList":   []any{},
		"optZero":        int64(0),
		"optFalse":       false,
		"optMap":         map[string]any{"tier": "research", "team": "hpc"},
		"valNilMap":      nil,
		"valNilList":     nil,
		"valNilPointer":  nil,
		"valEmptyString": "",
		"valEmptyList":   []any{},
		"valInt":         int64(3),
		"valFloat":       2.5,
		"valBool":        true,
		"valString":      "alpha",
		"valStruct":      map[string]any{"Value": "in", "List": []any{"x"}},
		"valTagged": []any{
			map[string]any{"username": "alice", "email": "alice@example.org", "role": "admin"},
			map[string]any{"username": "bob", "role": "readonly"},
		},
		"textInt":   "3",
		"textBool":  "false",
		"textNil":   "",
		"textEmpty": "",
		"list":      []any{"literal", []any{"a", "b"}, nil},
	}
	if !reflect.DeepEqual(body["spec"], want) {
		got, _ := json.MarshalIndent(body["spec"], "", " ")
		exp, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("spec =\n%s\nwant\n%s", got, exp)
	}
}

func TestValueMustBeTheWholeScalar(t *testing.T) {
	for _, expr := range []string{
		"x-{{ value .Labels }}",
		"{{ value .Labels }}-x",
		"{{ value .Name }}{{ value .Name }}",
		"{{ optional .Name }} ",
		"{{ value .Labels | upper }}",
		"{{ value .Labels | printf \"%q\" }}",
		"{{ if .On }}{{ value .Labels }}{{ end }}x",
	} {
		_, err := mustParse(t, object("data:\n  a: "+quote(expr)+"\n")).Execute(newData(), "cluster")
		if err == nil {
			t.Errorf("%s: no error", expr)
			continue
		}
		want := "template site/t.yaml, document 1: data: a: " + expr + ": value and optional must make up the whole scalar"
		if err.Error() != want {
			t.Errorf("%s:\n got %q\nwant %q", expr, err, want)
		}
	}
	// Around a value, template actions that print nothing are fine.
	body := run(t, object("data:\n  a: \"{{ if .On }}{{ value .List }}{{ end }}\"\n"), newData())
	if !reflect.DeepEqual(body["data"], map[string]any{"a": []any{"a", "b"}}) {
		t.Errorf("data = %#v", body["data"])
	}
}

// TestMissingFields: a name the data does not have is an error that names the
// expression, on both paths; so is reading through nil, except for optional
// on the direct path, which treats it as missing.
func TestMissingFields(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"{{ .Nope }}", "{{ .Nope }}: no field Nope in templates.testData"},
		{"{{ value .Nope }}", "{{ value .Nope }}: no field Nope in templates.testData"},
		{"{{ optional .Nope }}", "{{ optional .Nope }}: no field Nope in templates.testData"},
		{"{{ .Inner.Nope }}", "{{ .Inner.Nope }}: no field Nope in templates.inner"},
		{"{{ .Nope | lower }}", `{{ .Nope | lower }}: template: :1:3: executing "" at <.Nope>: can't evaluate field Nope in type *templates.testData`},
		{"{{ .Labels.nope }}", `{{ .Labels.nope }}: map has no key "nope"`},
		{"{{ value .Labels.nope }}", `{{ value .Labels.nope }}: map has no key "nope"`},
		{"{{ .NilLabels.nope }}", `{{ .NilLabels.nope }}: map has no key "nope"`},
		{"{{ .Labels.nope | upper }}", `{{ .Labels.nope | upper }}: template: :1:10: executing "" at <.Labels.nope>: map has no entry for key "nope"`},
		{"{{ .Labels.nope | optional }}", `{{ .Labels.nope | optional }}: template: :1:10: executing "" at <.Labels.nope>: map has no entry for key "nope"`},
		{"{{ .NilInner.Value }}", "{{ .NilInner.Value }}: .NilInner is nil"},
		{"{{ value .NilInner.Value }}", "{{ value .NilInner.Value }}: .NilInner is nil"},
		{"{{ .Name.Length }}", "{{ .Name.Length }}: cannot read Length of string"},
		{"{{ .hidden }}", "{{ .hidden }}: no field hidden in templates.testData"},
		{"{{ .hidden | lower }}", "{{ .hidden | lower }}: template: :1:3: executing \"\" at <.hidden>: hidden is an unexported field of struct type *templates.testData"},
	}
	for _, c := range cases {
		_, err := mustParse(t, object("data:\n  a:\n  - "+quote(c.expr)+"\n")).Execute(newData(), "cluster")
		want := "template site/t.yaml, document 1: data: a: [0]: " + c.want
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", c.expr, err, want)
		}
	}
}

// TestStructuralSafety: whatever a data string holds, it lands in the one
// scalar the template put it in. It cannot add keys, list items or documents,
// nor be evaluated as a template itself.
func TestStructuralSafety(t *testing.T) {
	nasty := []string{
		"evil\nkind: Secret",
		"x\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen",
		"a: b",
		"- item",
		"[a, b]",
		"{a: b}",
		"&anchor x",
		"*alias",
		"!!map {}",
		"\"quoted\"",
		"'single'",
		"# comment",
		"x # comment",
		"{{ .Namespace }}",
		"{{ value .Labels }}",
		"}}{{",
		"yes",
		"null",
		"~",
		"12",
		"0x1F",
		"",
		" ",
		"\t\n",
		"\x00",
		"\x00value\x00{\"injected\":true}\x00",
		"\x00optional\x00null\x00",
		"...",
		"| block",
		"> folded",
		"%YAML 1.1",
		"\ufeffbom",
		"a\u2028b",
	}
	src := object(`data:
  fast: "{{ .Name }}"
  slow: "{{ .Name | trimSuffix \"never-there\" }}"
  mixed: "prefix-{{ .Name }}"
  optional: "{{ optional .Name }}"
  list:
  - "{{ .Name }}"
  - "{{ .Name | printf \"%s\" }}"
`)
	tp := mustParse(t, src)
	for _, s := range nasty {
		d := newData()
		d.Name = s
		objs, err := tp.Execute(d, "cluster")
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if len(objs) != 1 {
			t.Errorf("%q: %d objects", s, len(objs))
			continue
		}
		body := objs[0].Body
		want := map[string]any{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"name": "fixed"},
			"data": map[string]any{
				"fast": s, "slow": s, "mixed": "prefix-" + s, "optional": s,
				"list": []any{s, s},
			},
		}
		if s == "" {
			delete(want["data"].(map[string]any), "optional")
		}
		if !reflect.DeepEqual(body, want) {
			t.Errorf("%q:\n got %#v\nwant %#v", s, body, want)
			continue
		}
		// Encoded and read back, it is still one document with the same content.
		b, err := manifest.Encode(body)
		if err != nil {
			t.Errorf("%q: Encode: %v", s, err)
			continue
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		var back, extra any
		if err := dec.Decode(&back); err != nil {
			t.Errorf("%q: read back: %v\n%s", s, err, b)
			continue
		}
		if dec.Decode(&extra) == nil {
			t.Errorf("%q: a second document appeared:\n%s", s, b)
		}
		if asJSON(t, back) != asJSON(t, normalise(want)) {
			t.Errorf("%q: read back\n%s\nas %#v", s, b, back)
		}
	}
}

func normalise(v any) any {
	switch t := v.(type) {
	case string:
		return string([]rune(t))
	case map[string]any:
		m := map[string]any{}
		for k, x := range t {
			m[string([]rune(k))] = normalise(x)
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

// TestKeysFromDataStayInTheirMapping: a map from the data, emitted with value,
// brings its own keys, but only inside the mapping the template put it in, and
// every key and value is taken literally.
func TestKeysFromDataStayInTheirMapping(t *testing.T) {
	d := newData()
	d.Labels = map[string]string{
		"evil\nkind: Secret":    "x",
		"metadata":              "name: other",
		"a: b":                  "{{ .Namespace }}",
		"---":                   "\n---\n",
		"\x00value\x00{}\x00":   "v",
		"apiVersion":            "v2",
		"":                      "empty key",
		"kubernetes.io/os":      "linux",
		"{{ value .Labels }}":   "k",
		strings.Repeat("k", 99): "long",
	}
	body := run(t, object("  labels: \"{{ value .Labels }}\"\ndata:\n  fixed: x\n"), d)
	if got := keysOf(body); !reflect.DeepEqual(got, []string{"apiVersion", "data", "kind", "metadata"}) {
		t.Errorf("top-level keys %q", got)
	}
	if body["apiVersion"] != "v1" || body["kind"] != "ConfigMap" {
		t.Errorf("apiVersion %v kind %v", body["apiVersion"], body["kind"])
	}
	md := body["metadata"].(map[string]any)
	if got := keysOf(md); !reflect.DeepEqual(got, []string{"labels", "name"}) {
		t.Errorf("metadata keys %q", got)
	}
	labels := md["labels"].(map[string]any)
	if len(labels) != len(d.Labels) {
		t.Errorf("labels %#v", labels)
	}
	for k, v := range d.Labels {
		if labels[k] != v {
			t.Errorf("labels[%q] = %#v, want %q", k, labels[k], v)
		}
	}
	b, err := manifest.Encode(body)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := yaml.Unmarshal(b, &back); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if asJSON(t, back) != asJSON(t, body) {
		t.Errorf("read back %#v\nfrom\n%s", back, b)
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestWhen(t *testing.T) {
	cases := []struct {
		when string
		want bool
	}{
		{"{{ .On }}", true},
		{"{{ .Off }}", false},
		{"{{ .Name }}", true},
		{"{{ .Empty }}", false},
		{"{{ .Count }}", true},
		{"{{ .Zero }}", false},
		{"{{ .NilLabels }}", false},
		{"{{ value .On }}", true},
		{"{{ value .Off }}", false},
		{"{{ value .List }}", true},
		{"{{ value .EmptyList }}", false},
		{"{{ value .NilList }}", false},
		{"{{ value .Labels }}", true},
		{"{{ value .EmptyLabels }}", false},
		{"{{ value .Count }}", true},
		{"{{ value .Zero }}", false},
		{"{{ value .Ratio }}", true},
		{"{{ value .ZeroFloat }}", false},
		{"{{ value .NilInner }}", false},
		{"{{ optional .Empty }}", false},
		{"{{ optional .NilInner.Value }}", false},
		{"{{ optional .Name }}", true},
		{"{{ if .On }}yes{{ end }}", true},
		{"{{ if .Off }}yes{{ end }}", false},
		{"{{ not .On }}", false},
		{"{{ eq .Name \"alpha\" }}", true},
		{"{{ eq .Name \"beta\" }}", false},
		{"{{ .Item }}", false}, // when is evaluated before forEach, without an item
		{" {{ .Off }} ", false},
		{"literal text {{ .Empty }}", true},
	}
	for _, c := range cases {
		src := "x-render:\n  when: " + quote(c.when) + "\n" + object("")
		objs, err := mustParse(t, src).Execute(newData(), "cluster")
		if err != nil {
			t.Errorf("when %s: %v", c.when, err)
			continue
		}
		if got := len(objs) == 1; got != c.want {
			t.Errorf("when %s: rendered %v, want %v", c.when, got, c.want)
		}
	}
	_, err := mustParse(t, "x-render:\n  when: \"{{ .Nope }}\"\n"+object("")).Execute(newData(), "cluster")
	if want := "template site/t.yaml, document 1: when: {{ .Nope }}: no field Nope in templates.testData"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestTarget(t *testing.T) {
	src := "x-render:\n  target: management\n" + object("") + "---\n" + object("")
	objs, err := mustParse(t, src).Execute(newData(), "downstream")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].Target != "management" || objs[1].Target != "downstream" {
		t.Errorf("targets %+v", objs)
	}
	for _, o := range objs {
		if _, ok := o.Body["x-render"]; ok {
			t.Error("x-render left in the object")
		}
	}
}

func TestForEach(t *testing.T) {
	src := `x-render:
  forEach: "{{ value .Members }}"
apiVersion: v1
kind: ServiceAccount
metadata:
  name: "sa-{{ .Item.username }}"
  namespace: "{{ .Namespace }}"
  annotations:
    email: "{{ optional .Item.email }}"
    role: "{{ .Item.role | upper }}"
    whole: "{{ value .Item }}"
`
	objs, err := mustParse(t, src).Execute(newData(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("got %d objects", len(objs))
	}
	want := []map[string]any{
		{"name": "sa-alice", "namespace": "tenant-alpha", "annotations": map[string]any{
			"email": "alice@example.org", "role": "ADMIN",
			"whole": map[string]any{"username": "alice", "email": "alice@example.org", "role": "admin"},
		}},
		{"name": "sa-bob", "namespace": "tenant-alpha", "annotations": map[string]any{
			"role": "READONLY", "whole": map[string]any{"username": "bob", "role": "readonly"},
		}},
	}
	for i, o := range objs {
		if !reflect.DeepEqual(o.Body["metadata"], want[i]) {
			t.Errorf("object %d metadata %#v, want %#v", i, o.Body["metadata"], want[i])
		}
		if o.Target != "cluster" {
			t.Errorf("target %q", o.Target)
		}
	}

	// Items that are plain strings, with a when, and in a multi-document file.
	src = `x-render:
  when: "{{ .On }}"
  forEach: "{{ value .List }}"
` + object("data:\n  item: \"{{ .Item }}\"\n  name: \"{{ .Name }}\"\n") + "---\n" + object("")
	objs, err = mustParse(t, src).Execute(newData(), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 || objs[0].Body["data"].(map[string]any)["item"] != "a" || objs[1].Body["data"].(map[string]any)["item"] != "b" {
		t.Errorf("objects %+v", objs)
	}

	// No objects for empty, nil and omitted lists, nor when when is false.
	for _, x := range []string{
		"forEach: \"{{ value .EmptyList }}\"",
		"forEach: \"{{ value .NilList }}\"",
		"forEach: \"{{ optional .NilList }}\"",
		"forEach: \"{{ .NilList | value }}\"",
		"forEach: \"{{ value .List }}\"\n  when: \"{{ .Off }}\"",
	} {
		objs, err := mustParse(t, "x-render:\n  "+x+"\n"+object("")).Execute(newData(), "cluster")
		if err != nil || len(objs) != 0 {
			t.Errorf("%s: %d objects, %v", x, len(objs), err)
		}
	}

	// Errors.
	for _, c := range []struct{ x, want string }{
		{"forEach: \"{{ .List }}\"", "template site/t.yaml, document 1: forEach: {{ .List }} is not a list"},
		{"forEach: \"{{ value .Labels }}\"", "template site/t.yaml, document 1: forEach: {{ value .Labels }} is not a list"},
		{"forEach: \"{{ value .Nope }}\"", "template site/t.yaml, document 1: forEach: {{ value .Nope }}: no field Nope in templates.testData"},
	} {
		_, err := mustParse(t, "x-render:\n  "+c.x+"\n"+object("")).Execute(newData(), "cluster")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.x, err, c.want)
		}
	}
	_, err = mustParse(t, "x-render:\n  forEach: \"{{ value .Members }}\"\n"+object("data:\n  a: \"{{ .Item.nope }}\"\n")).Execute(newData(), "cluster")
	if want := `template site/t.yaml, document 1: data: a: {{ .Item.nope }}: map has no key "nope"`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	// Data that cannot carry an item.
	plain := struct{ List []string }{List: []string{"a"}}
	_, err = mustParse(t, "x-render:\n  forEach: \"{{ value .List }}\"\n"+object("")).Execute(plain, "cluster")
	if want := "template site/t.yaml: forEach needs data that supports .Item"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestExecuteGivesFreshValues: objects share nothing with the data or with each
// other, so later changes (the renderer adds labels) cannot leak.
func TestExecuteGivesFreshValues(t *testing.T) {
	d := newData()
	tp := mustParse(t, object("  labels: \"{{ value .Labels }}\"\ndata:\n  l: \"{{ value .List }}\"\n  lit: [1, 2]\n"))
	a := run(t, object("  labels: \"{{ value .Labels }}\"\n"), d)
	a["metadata"].(map[string]any)["labels"].(map[string]any)["added"] = "x"
	if _, ok := d.Labels["added"]; ok {
		t.Error("a change to the output reached the data")
	}
	objs1, _ := tp.Execute(d, "c")
	objs2, _ := tp.Execute(d, "c")
	objs1[0].Body["data"].(map[string]any)["l"].([]any)[0] = "changed"
	objs1[0].Body["data"].(map[string]any)["lit"].([]any)[0] = "changed"
	if objs2[0].Body["data"].(map[string]any)["l"].([]any)[0] != "a" || objs2[0].Body["data"].(map[string]any)["lit"].([]any)[0] != int64(1) {
		t.Error("two executions share values")
	}
}

func TestFuncs(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"{{ .Name | upper }}", "ALPHA"},
		{"{{ upper .Name | lower }}", "alpha"},
		{"{{ .Namespace | trimPrefix \"tenant-\" }}", "alpha"},
		{"{{ .Namespace | trimPrefix \"nope-\" }}", "tenant-alpha"},
		{"{{ .Namespace | trimSuffix \"-alpha\" }}", "tenant"},
		{"{{ .Namespace | replace \"-\" \"_\" }}", "tenant_alpha"},
		{"{{ replace \"a\" \"\" .Name }}", "lph"},
		{"{{ .List | join \",\" }}", "a,b"},
		{"{{ join \" \" .EmptyList }}", ""},
		{"{{ .Empty | default \"fallback\" }}", "fallback"},
		{"{{ .Name | default \"fallback\" }}", "alpha"},
		{"{{ default \"none\" .EmptyList }}", "none"},
		{"{{ default \"none\" .NilLabels }}", "none"},
		{"{{ default \"none\" .Count }}", "3"},
		{"{{ default \"none\" .Zero }}", "0"}, // only nil, "" and empty lists and maps are empty
		{"{{ default \"none\" .Off }}", "false"},
		{"ns-{{ .Name }}-{{ .Count }}", "ns-alpha-3"},
		{"{{ printf \"%s/%d\" .Name .Count }}", "alpha/3"},
		{"{{ range .List }}[{{ . }}]{{ end }}", "[a][b]"},
		{"{{ with .Inner }}{{ .Value }}{{ end }}", "in"},
		{"{{ len .Members }}", "2"},
		{"{{ (index .Members 1).Username }}", "bob"},
	}
	for _, c := range cases {
		body := run(t, object("data:\n  a: "+quote(c.expr)+"\n"), newData())
		if got := body["data"].(map[string]any)["a"]; got != c.want {
			t.Errorf("%s = %#v, want %q", c.expr, got, c.want)
		}
	}
	// value after another function gives that function's result as a value.
	body := run(t, object("data:\n  a: \"{{ .EmptyList | default .List | value }}\"\n"), newData())
	if got := body["data"].(map[string]any)["a"]; !reflect.DeepEqual(got, []any{"a", "b"}) {
		t.Errorf("got %#v", got)
	}
}

func TestLoadFS(t *testing.T) {
	ts, err := LoadFS(defaultFS, "namespace", "default:")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range ts {
		names = append(names, tp.Name+"|"+tp.File)
	}
	want := []string{
		"default:namespace/limitrange.yaml|limitrange.yaml",
		"default:namespace/namespace.yaml|namespace.yaml",
		"default:namespace/resourcequota.yaml|resourcequota.yaml",
		"default:namespace/rolebinding.yaml|rolebinding.yaml",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("got %q", names)
	}
	if _, err := LoadFS(defaultFS, "nope", "x:"); err == nil || !strings.HasPrefix(err.Error(), "read templates x:nope: ") {
		t.Errorf("got %v", err)
	}
}
