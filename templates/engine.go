// Package templates holds the object shapes waldur-gitops renders (the defaults of
// every profile are embedded from this directory) and the engine that evaluates
// them, and a site's own templates, against typed tenant data.
//
// A template is a YAML file of one or more documents, each a Kubernetes object.
// Values are filled structurally: the YAML is parsed first, then every string
// scalar holding "{{ … }}" is evaluated as a Go text/template against the tenant
// data, and its result replaces that one scalar. Data can therefore never add
// keys, documents or YAML syntax, whatever characters it holds.
//
//   - "{{ .Name }}" yields a string.
//   - "{{ value .Quota }}" yields the value itself (a map, list, number, …).
//   - "{{ optional .Labels }}" does the same but drops the key (or list item)
//     when the value is missing: nil or an empty string. An empty, non-nil list or
//     map is kept. Written like this (not in a pipeline), a nil pointer or a map
//     without the key along the path also counts as missing.
//
// A document may carry a top-level "x-render" mapping, removed from the output:
//
//	x-render:
//	  target: management              # output directory of the object (profile default otherwise)
//	  when: "{{ .Keycloak.Enabled }}" # render only when true / non-empty
//	  forEach: "{{ value .RoleBindings }}" # one object per item, available as .Item
package templates

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"go.yaml.in/yaml/v3"
)

// Itemer is implemented by template data that can expose a forEach item as .Item.
type Itemer interface {
	WithItem(item any) any
}

// Template is one parsed template file.
type Template struct {
	// Name identifies the template in errors: "default:<profile>/<file>" or the site file path.
	Name string
	// File is the base file name; a site template with the same file name replaces a default.
	File string
	docs []*document
	sum  [sha256.Size]byte
}

// Digest is a SHA-256 of the template's name and text: two templates with
// the same digest render the same data to the same objects.
func (t *Template) Digest() [sha256.Size]byte { return t.sum }

type document struct {
	index   int
	target  string
	when    *expr
	forEach *expr
	body    *node
}

type nodeKind int

const (
	literalNode nodeKind = iota
	exprNode
	mappingNode
	sequenceNode
)

type node struct {
	kind  nodeKind
	lit   any
	expr  *expr
	keys  []string
	vals  []*node
	items []*node
}

type exprMode int

const (
	textMode exprMode = iota
	valueMode
	optionalMode
)

// expr is one templated scalar. Scalars of the form "{{ .A.B }}",
// "{{ value .A.B }}" and "{{ optional .A.B }}" are evaluated by walking the
// fields directly (fast); anything else runs through text/template.
type expr struct {
	src  string
	mode exprMode
	path []string // fast path when non-nil
	tmpl *template.Template
}

// value and optional cannot hand a value through text/template, which prints
// everything: they print it as JSON between markers, which eval recognises when
// they make up the whole output. The markers hold a random key of digits chosen
// at start-up, so that no data (a name holding NUL bytes, say) can forge one, and
// a marker mangled by a later function (upper, printf) is still recognised, as an
// error.
var (
	markKey      = randomDigits(16)
	markValue    = "\x00" + markKey + "value\x00"
	markOptional = "\x00" + markKey + "optional\x00"
	markEnd      = "\x00" + markKey + "end\x00"
)

// randomDigits returns n random bytes as 3n decimal digits.
func randomDigits(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails: crypto/rand crashes the program instead
	var s strings.Builder
	for _, c := range b {
		fmt.Fprintf(&s, "%03d", c)
	}
	return s.String()
}

var funcs = template.FuncMap{
	"value":      func(v any) (string, error) { return marker(markValue, v) },
	"optional":   func(v any) (string, error) { return marker(markOptional, v) },
	"lower":      strings.ToLower,
	"upper":      strings.ToUpper,
	"trimPrefix": func(p, s string) string { return strings.TrimPrefix(s, p) },
	"trimSuffix": func(p, s string) string { return strings.TrimSuffix(s, p) },
	"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
	"join":       func(sep string, l []string) string { return strings.Join(l, sep) },
	"default": func(d, v any) any {
		if isEmpty(toGeneric(reflect.ValueOf(v))) {
			return d
		}
		return v
	},
}

func marker(kind string, v any) (string, error) {
	b, err := json.Marshal(toGeneric(reflect.ValueOf(v)))
	if err != nil {
		return "", err
	}
	return kind + string(b) + markEnd, nil
}

// Parse parses one template file. name is used in errors.
func Parse(name string, data []byte) (*Template, error) {
	t := &Template{Name: name, File: path.Base(name), sum: sha256.Sum256([]byte(name + "\x00" + string(data)))}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("template %s: invalid YAML: %w", name, err)
		}
		if len(n.Content) == 0 || n.Content[0].Tag == "!!null" {
			continue
		}
		d, err := compileDocument(n.Content[0], i)
		if err != nil {
			return nil, fmt.Errorf("template %s, document %d: %w", name, i+1, err)
		}
		t.docs = append(t.docs, d)
	}
	if len(t.docs) == 0 {
		return nil, fmt.Errorf("template %s: no documents", name)
	}
	return t, nil
}

func compileDocument(root *yaml.Node, index int) (*document, error) {
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("a document must be a mapping (a Kubernetes object), got line %d", root.Line)
	}
	d := &document{index: index}
	body := &yaml.Node{Kind: yaml.MappingNode, Tag: root.Tag}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "x-render" {
			body.Content = append(body.Content, k, v)
			continue
		}
		if err := d.compileDirectives(v); err != nil {
			return nil, err
		}
	}
	keys := map[string]bool{}
	for i := 0; i < len(body.Content); i += 2 {
		keys[body.Content[i].Value] = true
	}
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		if !keys[k] {
			return nil, fmt.Errorf("object has no %s", k)
		}
	}
	var err error
	d.body, err = compileNode(body)
	if err != nil {
		return nil, err
	}
	if md := d.body.vals[slices.Index(d.body.keys, "metadata")]; md.kind != mappingNode || !slices.Contains(md.keys, "name") {
		return nil, fmt.Errorf("object has no metadata.name")
	}
	return d, nil
}

func (d *document) compileDirectives(v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return fmt.Errorf("x-render must be a mapping")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i].Value, v.Content[i+1]
		if val.Kind != yaml.ScalarNode {
			return fmt.Errorf("x-render.%s must be a string", k)
		}
		var err error
		switch k {
		case "target":
			d.target = val.Value
		case "when":
			d.when, err = compileExpr(val.Value)
		case "forEach":
			d.forEach, err = compileExpr(val.Value)
		default:
			return fmt.Errorf("x-render.%s: unknown directive (known: target, when, forEach)", k)
		}
		if err != nil {
			return fmt.Errorf("x-render.%s: %w", k, err)
		}
	}
	return nil
}

func compileNode(n *yaml.Node) (*node, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := &node{kind: mappingNode}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping keys must be strings", k.Line)
			}
			if strings.Contains(k.Value, "{{") {
				return nil, fmt.Errorf("line %d: key %q: keys cannot be templated; emit a whole mapping with value", k.Line, k.Value)
			}
			if k.Tag == "!!merge" { // it would come out as a literal "<<" key
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line)
			}
			if slices.Contains(out.keys, k.Value) {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := compileNode(n.Content[i+1])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k.Value, err)
			}
			out.keys = append(out.keys, k.Value)
			out.vals = append(out.vals, v)
		}
		return out, nil
	case yaml.SequenceNode:
		out := &node{kind: sequenceNode}
		for _, item := range n.Content {
			c, err := compileNode(item)
			if err != nil {
				return nil, err
			}
			out.items = append(out.items, c)
		}
		return out, nil
	case yaml.ScalarNode:
		if n.Tag == "!!str" && strings.Contains(n.Value, "{{") {
			e, err := compileExpr(n.Value)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return &node{kind: exprNode, expr: e}, nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		if _, isStr := v.(string); !isStr && n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!bool" && n.Tag != "!!null" {
			v = n.Value // timestamps and the like stay text
		}
		if i, ok := v.(int); ok {
			v = int64(i)
		}
		return &node{kind: literalNode, lit: v}, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func compileExpr(src string) (*expr, error) {
	t, err := template.New("").Funcs(funcs).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, fmt.Errorf("template expression %q: %w", src, err)
	}
	e := &expr{src: src, tmpl: t}
	if root := t.Tree.Root; len(root.Nodes) == 1 {
		if a, ok := root.Nodes[0].(*parse.ActionNode); ok && len(a.Pipe.Decl) == 0 && len(a.Pipe.Cmds) == 1 {
			e.mode, e.path = fastPath(a.Pipe.Cmds[0].Args)
		}
	}
	if e.path == nil {
		e.mode = textMode
		switch {
		case strings.Contains(src, "optional"):
			e.mode = optionalMode
		case strings.Contains(src, "value"):
			e.mode = valueMode
		}
	}
	return e, nil
}

// fastPath recognises ".A.B", "value .A.B" and "optional .A.B".
func fastPath(args []parse.Node) (exprMode, []string) {
	mode := textMode
	if len(args) == 2 {
		id, ok := args[0].(*parse.IdentifierNode)
		if !ok {
			return textMode, nil
		}
		switch id.Ident {
		case "value":
			mode = valueMode
		case "optional":
			mode = optionalMode
		default:
			return textMode, nil
		}
		args = args[1:]
	}
	if len(args) != 1 {
		return textMode, nil
	}
	switch f := args[0].(type) {
	case *parse.FieldNode:
		return mode, f.Ident
	case *parse.DotNode:
		return mode, []string{}
	}
	return textMode, nil
}

// errOmit marks an optional value that is empty.
var errOmit = errors.New("omit")

// eval evaluates the expression against data, returning a generic value.
func (e *expr) eval(data any) (any, error) {
	if e.path != nil {
		v, err := lookup(reflect.ValueOf(data), e.path)
		if (errors.Is(err, errNilPath) || errors.Is(err, errNoKey)) && e.mode == optionalMode {
			return nil, errOmit
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.src, err)
		}
		g := toGeneric(v)
		switch e.mode {
		case textMode:
			if g == nil {
				return "", nil
			}
			if s, ok := g.(string); ok {
				return s, nil
			}
			return fmt.Sprint(v.Interface()), nil
		case optionalMode:
			if isMissing(g) {
				return nil, errOmit
			}
		}
		return g, nil
	}
	var b strings.Builder
	if err := e.tmpl.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("%s: %w", e.src, err)
	}
	out := b.String()
	for _, m := range []string{markValue, markOptional} {
		if strings.HasPrefix(out, m) && strings.HasSuffix(out, markEnd) && strings.Count(out, markKey) == 2 {
			var g any
			dec := json.NewDecoder(strings.NewReader(out[len(m) : len(out)-len(markEnd)]))
			dec.UseNumber()
			if err := dec.Decode(&g); err != nil {
				return nil, fmt.Errorf("%s: %w", e.src, err)
			}
			g = fromJSON(g)
			if m == markOptional && isMissing(g) {
				return nil, errOmit
			}
			return g, nil
		}
	}
	if strings.Contains(out, markKey) {
		return nil, fmt.Errorf("%s: value and optional must make up the whole scalar", e.src)
	}
	return out, nil
}

// truthy evaluates a when-expression.
func (e *expr) truthy(data any) (bool, error) {
	v, err := e.eval(data)
	if errors.Is(err, errOmit) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if s, ok := v.(string); ok {
		s = strings.TrimSpace(s)
		return s != "" && s != "false" && s != "0" && s != "<no value>", nil
	}
	return !isEmpty(v) && v != false && v != int64(0) && v != float64(0), nil
}

// Object is one object a template produced and the output target it goes to.
type Object struct {
	Target string
	Body   map[string]any
}

// Execute renders every document of t against data; defaultTarget applies to
// documents that name no target.
func (t *Template) Execute(data any, defaultTarget string) ([]Object, error) {
	var out []Object
	for _, d := range t.docs {
		if d.when != nil {
			ok, err := d.when.truthy(data)
			if err != nil {
				return nil, fmt.Errorf("template %s, document %d: when: %w", t.Name, d.index+1, err)
			}
			if !ok {
				continue
			}
		}
		target := d.target
		if target == "" {
			target = defaultTarget
		}
		items := []any{nil}
		if d.forEach != nil {
			v, err := d.forEach.eval(data)
			if err != nil && !errors.Is(err, errOmit) {
				return nil, fmt.Errorf("template %s, document %d: forEach: %w", t.Name, d.index+1, err)
			}
			list, ok := v.([]any)
			if v != nil && !ok {
				return nil, fmt.Errorf("template %s, document %d: forEach: %s is not a list", t.Name, d.index+1, d.forEach.src)
			}
			items = list
		}
		for _, item := range items {
			scope := data
			if d.forEach != nil {
				it, ok := data.(Itemer)
				if !ok {
					return nil, fmt.Errorf("template %s: forEach needs data that supports .Item", t.Name)
				}
				scope = it.WithItem(item)
			}
			v, err := d.body.build(scope)
			if err != nil {
				return nil, fmt.Errorf("template %s, document %d: %w", t.Name, d.index+1, err)
			}
			out = append(out, Object{Target: target, Body: v.(map[string]any)})
		}
	}
	return out, nil
}

// build evaluates the node into a fresh generic value.
func (n *node) build(data any) (any, error) {
	switch n.kind {
	case literalNode:
		return n.lit, nil
	case exprNode:
		return n.expr.eval(data)
	case mappingNode:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			v, err := n.vals[i].build(data)
			if errors.Is(err, errOmit) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			m[k] = v
		}
		return m, nil
	case sequenceNode:
		l := make([]any, 0, len(n.items))
		for i, item := range n.items {
			v, err := item.build(data)
			if errors.Is(err, errOmit) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l = append(l, v)
		}
		return l, nil
	}
	return nil, fmt.Errorf("unknown node")
}

// LoadFS parses every *.yaml and *.yml file directly in dir of fsys, sorted by
// name; prefix is put before each file name in template names.
func LoadFS(fsys fs.FS, dir, prefix string) ([]*Template, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read templates %s%s: %w", prefix, dir, err)
	}
	var out []*Template
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		p := path.Join(dir, e.Name())
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("read template %s%s: %w", prefix, p, err)
		}
		t, err := Parse(prefix+p, b)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
