package manifest

import (
	"reflect"
	"strings"
	"testing"
)

func TestIsDNS1123Label(t *testing.T) {
	cases := map[string]bool{
		"a":                      true,
		"0":                      true,
		"tenant-alpha":           true,
		"a1-b2":                  true,
		"1abc":                   true,
		strings.Repeat("a", 63):  true,
		strings.Repeat("a", 64):  false,
		"":                       false,
		"-a":                     false,
		"a-":                     false,
		"A":                      false,
		"Tenant":                 false,
		"a_b":                    false,
		"a.b":                    false,
		"a b":                    false,
		"a\n":                    false,
		"ä":                      false,
		"a--b":                   true,
		"xn--bcher-kva":          true,
		strings.Repeat("a-", 31): false, // ends with '-'
	}
	for s, want := range cases {
		if got := IsDNS1123Label(s); got != want {
			t.Errorf("IsDNS1123Label(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestIsQualifiedName(t *testing.T) {
	cases := map[string]bool{
		"tier":                            true,
		"Tier":                            true, // the name part may hold upper case
		"a":                               true,
		"a.b_c-d":                         true,
		"app.kubernetes.io/managed-by":    true,
		"waldur.io/resource-uuid":         true,
		"example.com/Name_1":              true,
		"a/b":                             true,
		strings.Repeat("n", 63):           true,
		strings.Repeat("n", 64):           false,
		"p/" + strings.Repeat("n", 63):    true,
		"p/" + strings.Repeat("n", 64):    false,
		"":                                false,
		"/":                               false,
		"/name":                           false, // empty prefix
		"prefix/":                         false, // empty name
		"Example.com/name":                false, // prefix must be lower case
		"ex_ample.com/name":               false,
		"-example.com/name":               false,
		"example.com./name":               false,
		"a/b/c":                           false,
		"-a":                              false,
		"a-":                              false,
		"_a":                              false,
		"a b":                             false,
		"a:b":                             false,
		"name\n":                          false,
		"ä":                               false,
		"openshift.io/display-name":       true,
		"field.cattle.io/resourceQuota":   true,
		"pod-security.kubernetes.io/warn": true,
	}
	// The prefix limit is the length of a DNS subdomain, 253.
	cases[strings.Repeat("p", 253)+"/n"] = true
	cases[strings.Repeat("p", 254)+"/n"] = false
	for s, want := range cases {
		if got := IsQualifiedName(s); got != want {
			t.Errorf("IsQualifiedName(%.70q) = %v, want %v", s, got, want)
		}
	}
}

func TestIsLabelValue(t *testing.T) {
	cases := map[string]bool{
		"":                       true, // an empty value is allowed
		"a":                      true,
		"Research":               true,
		"a.b_c-D9":               true,
		"0":                      true,
		strings.Repeat("v", 63):  true,
		strings.Repeat("v", 64):  false,
		"-a":                     false,
		"a-":                     false,
		"_a":                     false,
		"a.":                     false,
		"a b":                    false,
		"a/b":                    false,
		"a:b":                    false,
		"ä":                      false,
		"a\n":                    false,
		"restricted":             true,
		"4a5b6c7d-0000-4000-800": true,
	}
	for s, want := range cases {
		if got := IsLabelValue(s); got != want {
			t.Errorf("IsLabelValue(%q) = %v, want %v", s, got, want)
		}
	}
}

// obj builds a valid object and lets a test change it.
func obj(change func(o Object, md map[string]any)) Object {
	md := map[string]any{
		"name":      "tenant-alpha",
		"namespace": "tenant-alpha",
		"labels":    map[string]any{"tier": "research", LabelManagedBy: ManagedByValue},
		"annotations": map[string]any{
			"openshift.io/description": "any text: \"quoted\", {braces}, new\nlines",
			AnnotationOffering:         "66c0217f031fec833da0e057be1c007e",
		},
	}
	o := Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
	if change != nil {
		change(o, md)
	}
	return o
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		o      Object
		errors []string // substrings of the error, in order; none when valid
	}{
		{"valid", obj(nil), nil},
		{"valid without labels and annotations", obj(func(_ Object, md map[string]any) {
			delete(md, "labels")
			delete(md, "annotations")
		}), nil},
		{"valid cluster-scoped", obj(func(_ Object, md map[string]any) { delete(md, "namespace") }), nil},
		{"valid subdomain name", obj(func(_ Object, md map[string]any) { md["name"] = "a.b-c.d" }), nil},
		{"valid 253-character name", obj(func(_ Object, md map[string]any) {
			md["name"] = strings.Repeat(strings.Repeat("a", 62)+".", 4)[:252] + "b"
		}), nil},
		{"valid namespace", obj(func(o Object, md map[string]any) {
			o["kind"] = "Namespace"
			delete(md, "namespace")
		}), nil},
		{"empty labels and annotations", obj(func(_ Object, md map[string]any) {
			md["labels"] = map[string]any{}
			md["annotations"] = map[string]any{}
		}), nil},
		{"empty label value", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": ""} }), nil},
		{"63-character label value", obj(func(_ Object, md map[string]any) {
			md["labels"] = map[string]any{"a": "A" + strings.Repeat("b_.-", 15) + "z9"}
		}), nil},

		{"no apiVersion", obj(func(o Object, _ map[string]any) { delete(o, "apiVersion") }), []string{"apiVersion is missing"}},
		{"apiVersion not a string", obj(func(o Object, _ map[string]any) { o["apiVersion"] = int64(1) }), []string{"apiVersion is missing"}},
		{"no kind", obj(func(o Object, _ map[string]any) { delete(o, "kind") }), []string{"kind is missing"}},
		{"no kind and no apiVersion", Object{"metadata": map[string]any{"name": "x"}}, []string{"apiVersion is missing", "kind is missing"}},
		{"no metadata", Object{"apiVersion": "v1", "kind": "ConfigMap"}, []string{"metadata.name is missing"}},
		{"metadata not a mapping", Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"}, []string{"metadata.name is missing"}},
		{"name missing", obj(func(_ Object, md map[string]any) { delete(md, "name") }), []string{"metadata.name is missing"}},
		{"name empty", obj(func(_ Object, md map[string]any) { md["name"] = "" }), []string{"metadata.name is missing"}},
		{"name not a string", obj(func(_ Object, md map[string]any) { md["name"] = int64(5) }), []string{"metadata.name is missing"}},
		{"name upper case", obj(func(_ Object, md map[string]any) { md["name"] = "Tenant" }), []string{`metadata.name "Tenant" is not a valid object name`}},
		{"name with underscore", obj(func(_ Object, md map[string]any) { md["name"] = "a_b" }), []string{"not a valid object name"}},
		{"name with colon", obj(func(_ Object, md map[string]any) { md["name"] = "oidc:alice" }), []string{"not a valid object name"}},
		{"name too long", obj(func(_ Object, md map[string]any) { md["name"] = strings.Repeat("a", 254) }), []string{"not a valid object name (RFC 1123 subdomain)"}},
		{"name with trailing newline", obj(func(_ Object, md map[string]any) { md["name"] = "a\n" }), []string{"not a valid object name"}},
		{"namespace name with a dot", obj(func(o Object, md map[string]any) {
			o["kind"] = "Namespace"
			md["name"] = "a.b"
			delete(md, "namespace")
		}), []string{`metadata.name "a.b" is not a valid namespace name (RFC 1123 label, at most 63 characters)`}},
		{"namespace name too long", obj(func(o Object, md map[string]any) {
			o["kind"] = "Namespace"
			md["name"] = strings.Repeat("a", 64)
			delete(md, "namespace")
		}), []string{"is not a valid namespace name"}},
		{"namespace invalid", obj(func(_ Object, md map[string]any) { md["namespace"] = "Bad_NS" }), []string{`metadata.namespace Bad_NS is not a valid namespace name`}},
		{"namespace with a dot", obj(func(_ Object, md map[string]any) { md["namespace"] = "a.b" }), []string{"metadata.namespace a.b is not a valid namespace name"}},
		{"namespace empty", obj(func(_ Object, md map[string]any) { md["namespace"] = "" }), []string{"metadata.namespace  is not a valid namespace name"}},
		{"namespace null", obj(func(_ Object, md map[string]any) { md["namespace"] = nil }), []string{"metadata.namespace <nil> is not a valid namespace name"}},
		{"namespace not a string", obj(func(_ Object, md map[string]any) { md["namespace"] = []any{"a"} }), []string{"metadata.namespace [a] is not a valid namespace name"}},
		{"labels not a mapping", obj(func(_ Object, md map[string]any) { md["labels"] = "tier=research" }), []string{"metadata.labels is not a mapping"}},
		{"annotations not a mapping", obj(func(_ Object, md map[string]any) { md["annotations"] = []any{} }), []string{"metadata.annotations is not a mapping"}},
		{"label key invalid", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"bad key": "x"} }), []string{`metadata.labels key "bad key" is not a valid qualified name`}},
		{"label key with upper-case prefix", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"Example.com/a": "x"} }), []string{"is not a valid qualified name"}},
		{"label key too long", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{strings.Repeat("k", 64): "x"} }), []string{"is not a valid qualified name"}},
		{"label value too long", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": strings.Repeat("v", 64)} }), []string{"metadata.labels[a] value", "is not a valid label value"}},
		{"label value with space", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": "b c"} }), []string{`metadata.labels[a] value "b c" is not a valid label value`}},
		{"label value with slash", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": "b/c"} }), []string{"is not a valid label value"}},
		{"label value starting with a dash", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": "-b"} }), []string{"is not a valid label value"}},
		{"label value ending with a dot", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": "b."} }), []string{"is not a valid label value"}},
		{"label value a number", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": int64(1)} }), []string{"metadata.labels[a] is not a string"}},
		{"label value a boolean", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": true} }), []string{"metadata.labels[a] is not a string"}},
		{"label value null", obj(func(_ Object, md map[string]any) { md["labels"] = map[string]any{"a": nil} }), []string{"metadata.labels[a] is not a string"}},
		{"annotation value any string", obj(func(_ Object, md map[string]any) {
			md["annotations"] = map[string]any{"a": strings.Repeat("x y/z\n", 100), "b": "", "c": "{{ .Name }}"}
		}), nil},
		{"annotation key invalid", obj(func(_ Object, md map[string]any) { md["annotations"] = map[string]any{"a b": "x"} }), []string{`metadata.annotations key "a b" is not a valid qualified name`}},
		{"annotation value not a string", obj(func(_ Object, md map[string]any) { md["annotations"] = map[string]any{"n": int64(1)} }), []string{"metadata.annotations[n] is not a string"}},
		{"annotation value a map", obj(func(_ Object, md map[string]any) { md["annotations"] = map[string]any{"n": map[string]any{}} }), []string{"metadata.annotations[n] is not a string"}},
		{"several problems at once", Object{
			"kind":     "Namespace",
			"metadata": map[string]any{"name": "Bad", "labels": map[string]any{"k": int64(1)}},
		}, []string{"apiVersion is missing", "is not a valid namespace name", "metadata.labels[k] is not a string"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.Validate()
			if len(c.errors) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", c.errors)
			}
			rest := err.Error()
			for _, want := range c.errors {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("error %q lacks %q (in order)", err, want)
				}
				rest = rest[i+len(want):]
			}
		})
	}
}

// TestValidateDoesNotChange: checking an object does not add to it (an object
// without metadata stays without).
func TestValidateDoesNotChange(t *testing.T) {
	for _, o := range []Object{
		{"apiVersion": "v1", "kind": "ConfigMap"},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"},
		obj(nil),
	} {
		before := clone(o)
		_ = o.Validate()
		if !reflect.DeepEqual(map[string]any(o), before) {
			t.Errorf("Validate changed %v into %v", before, o)
		}
	}
}

func clone(o Object) map[string]any {
	return normalise(map[string]any(o)).(map[string]any)
}

func TestAccessors(t *testing.T) {
	o := obj(nil)
	if o.APIVersion() != "v1" || o.Kind() != "ConfigMap" || o.Name() != "tenant-alpha" || o.Namespace() != "tenant-alpha" {
		t.Errorf("accessors: %q %q %q %q", o.APIVersion(), o.Kind(), o.Name(), o.Namespace())
	}
	if got := o.ID(); got != "ConfigMap/tenant-alpha/tenant-alpha" {
		t.Errorf("ID = %q", got)
	}
	ns := Object{"kind": "Namespace", "metadata": map[string]any{"name": "n"}}
	if got := ns.ID(); got != "Namespace/n" {
		t.Errorf("ID = %q", got)
	}
	odd := Object{"kind": int64(1), "metadata": map[string]any{"name": []any{"x"}}}
	if odd.Kind() != "" || odd.Name() != "" || odd.Namespace() != "" {
		t.Error("non-string fields must read as empty")
	}
	if (Object{"metadata": "x"}).Name() != "" {
		t.Error("metadata that is not a mapping must read as empty")
	}
}

func TestSetStrings(t *testing.T) {
	o := Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name":   "x",
		"labels": map[string]any{"keep": "1", LabelManagedBy: "someone-else"},
	}}
	o.SetStrings("labels", map[string]string{LabelManagedBy: ManagedByValue, LabelResourceUUID: "u"})
	o.SetStrings("annotations", map[string]string{AnnotationProject: "p"})
	o.SetStrings("annotations", nil) // nothing to add: no change
	want := map[string]any{
		"name":        "x",
		"labels":      map[string]any{"keep": "1", LabelManagedBy: ManagedByValue, LabelResourceUUID: "u"},
		"annotations": map[string]any{AnnotationProject: "p"},
	}
	if !reflect.DeepEqual(o["metadata"], want) {
		t.Errorf("metadata = %v, want %v", o["metadata"], want)
	}

	// No metadata yet: it is created.
	bare := Object{"kind": "X"}
	bare.SetStrings("labels", map[string]string{"a": "b"})
	if !reflect.DeepEqual(bare["metadata"], map[string]any{"labels": map[string]any{"a": "b"}}) {
		t.Errorf("metadata = %v", bare["metadata"])
	}
	// Null labels become a map; labels that are not a mapping stay as they are,
	// so that Validate reports them instead of the template's mistake vanishing.
	null := Object{"apiVersion": "v1", "kind": "X", "metadata": map[string]any{"name": "x", "labels": nil}}
	null.SetStrings("labels", map[string]string{"a": "b"})
	if !reflect.DeepEqual(null.Metadata()["labels"], map[string]any{"a": "b"}) {
		t.Errorf("null labels: %v", null.Metadata()["labels"])
	}
	wrong := Object{"apiVersion": "v1", "kind": "X", "metadata": map[string]any{"name": "x", "labels": "tier=a"}}
	wrong.SetStrings("labels", map[string]string{"a": "b"})
	if wrong.Metadata()["labels"] != "tier=a" {
		t.Errorf("labels replaced: %v", wrong.Metadata()["labels"])
	}
	if err := wrong.Validate(); err == nil || err.Error() != "metadata.labels is not a mapping" {
		t.Errorf("Validate: %v", err)
	}
	// An empty kv does not even create metadata.
	empty := Object{"kind": "X"}
	empty.SetStrings("labels", map[string]string{})
	if _, ok := empty["metadata"]; ok {
		t.Error("empty SetStrings created metadata")
	}
}
