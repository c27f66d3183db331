package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with the config file, located by its key path.
type Problem struct {
	// Path is the key path, e.g. offerings[0].backend_settings.namespace_prefix.
	Path string
	// Line is the 1-based line in the file, 0 when unknown.
	Line int
	// Message says what is wrong.
	Message string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", p.Path, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Message)
}

// ValidationError lists every problem found in a config file.
type ValidationError struct {
	File     string
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid config %s: %d problem(s)", e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// report collects problems and warnings while decoding and validating.
type report struct {
	problems []Problem
	warnings []string
	// lines maps every key path met while decoding to its line, so that problems
	// found after decoding can be located too.
	lines map[string]int
	// expanding holds the mappings whose merge keys are being expanded, to stop a
	// mapping that merges itself.
	expanding map[*yaml.Node]bool
}

// addf records a problem at path. Its line is n's, or without n the line of path
// or, for a key that is missing, of its nearest parent.
func (r *report) addf(path string, n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	} else {
		line = r.lineOf(path)
	}
	r.problems = append(r.problems, Problem{Path: path, Line: line, Message: fmt.Sprintf(format, args...)})
}

func (r *report) lineOf(path string) int {
	for path != "" {
		if l := r.lines[path]; l > 0 {
			return l
		}
		path = path[:max(strings.LastIndexAny(path, ".["), 0)]
	}
	return 0
}

func (r *report) seen(path string, n *yaml.Node) {
	if path == "" || n == nil {
		return
	}
	if r.lines == nil {
		r.lines = map[string]int{}
	}
	if _, ok := r.lines[path]; !ok {
		r.lines[path] = n.Line
	}
}

// sortProblems orders the problems by line, then key path; problems without a
// line come first.
func (r *report) sortProblems() {
	sort.SliceStable(r.problems, func(i, j int) bool {
		a, b := r.problems[i], r.problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Path < b.Path
	})
}

// Ignored marks a key the Python site agent reads but this tool does not use. It
// accepts any value, so a site-agent config loads, and its presence is reported as
// a warning.
type Ignored struct{ set bool }

var (
	ignoredType = reflect.TypeOf(Ignored{})
	nodeType    = reflect.TypeOf(yaml.Node{})
	secretType  = reflect.TypeOf(Secret(""))
)

// decodeNode decodes n into v, recording every unknown key and type mismatch in r
// instead of stopping at the first. v must be settable.
func decodeNode(n *yaml.Node, v reflect.Value, path string, r *report) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return
		}
		n = n.Content[0]
	}
	r.seen(path, n)
	// An anchor that contains its own alias cannot recurse here: every step goes
	// one level down the (finite) Go type. Merge keys are guarded in mappingPairs.
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch v.Type() {
	case ignoredType:
		v.Set(reflect.ValueOf(Ignored{set: true}))
		r.warnings = append(r.warnings, fmt.Sprintf("%s: used by the Python site agent, ignored by waldur-gitops", path))
		return
	case nodeType:
		v.Set(reflect.ValueOf(*n))
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // leave the zero value (or the default already set)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		decodeNode(n, v.Elem(), path, r)
	case reflect.Struct:
		decodeStruct(n, v, path, r)
	case reflect.Map:
		decodeMap(n, v, path, r)
	case reflect.Slice:
		decodeSlice(n, v, path, r)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag == "!!bool" {
			got := describe(n)
			if v.Type() == secretType {
				got = kindOf(n) // never echo what may be a credential
			}
			r.addf(path, n, "expected a string, got %s", got)
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || err != nil {
			r.addf(path, n, "expected true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			r.addf(path, n, "expected a whole number, got %s", describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || err != nil {
			r.addf(path, n, "expected a number, got %s", describe(n))
			return
		}
		v.SetFloat(f)
	default:
		panic(fmt.Sprintf("config: unsupported field type %s at %s", v.Type(), path))
	}
}

// decodeMap decodes a mapping into a map, one entry per key, refusing
// duplicate and non-string keys.
func decodeMap(n *yaml.Node, v reflect.Value, path string, r *report) {
	if n.Kind != yaml.MappingNode {
		r.addf(path, n, "expected a mapping, got %s", describe(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	pairs := mappingPairs(n, path, r)
	seen := map[string]bool{}
	for i := 0; i+1 < len(pairs); i += 2 {
		k, val := pairs[i], pairs[i+1]
		if k.Kind != yaml.ScalarNode {
			r.addf(path, k, "mapping keys must be strings")
			continue
		}
		sub := path + "." + k.Value
		if seen[k.Value] {
			r.addf(sub, k, "duplicate key")
			continue
		}
		seen[k.Value] = true
		r.seen(sub, k)
		elem := reflect.New(v.Type().Elem()).Elem()
		decodeNode(val, elem, sub, r)
		v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), elem)
	}
}

// decodeSlice decodes a sequence into a slice, one element per item.
func decodeSlice(n *yaml.Node, v reflect.Value, path string, r *report) {
	if n.Kind != yaml.SequenceNode {
		r.addf(path, n, "expected a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		decodeNode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), r)
	}
	v.Set(s)
}

// decodeStruct matches mapping keys to the struct's yaml-tagged fields.
func decodeStruct(n *yaml.Node, v reflect.Value, path string, r *report) {
	if n.Kind != yaml.MappingNode {
		r.addf(path, n, "expected a mapping, got %s", describe(n))
		return
	}
	fields := structFields(v.Type())
	seen := map[string]bool{}
	pairs := mappingPairs(n, path, r)
	for i := 0; i+1 < len(pairs); i += 2 {
		k, val := pairs[i], pairs[i+1]
		key := k.Value
		sub := key
		if path != "" {
			sub = path + "." + key
		}
		if seen[key] {
			r.addf(sub, k, "duplicate key")
			continue
		}
		seen[key] = true
		r.seen(sub, k)
		idx, ok := fields[key]
		if !ok {
			known := usedKeys(v.Type(), fields)
			if near := closest(key, known); near != "" {
				r.addf(sub, k, "unknown key: did you mean %s? (known keys: %s)", near, strings.Join(known, ", "))
			} else {
				r.addf(sub, k, "unknown key (known keys: %s)", strings.Join(known, ", "))
			}
			continue
		}
		decodeNode(val, v.FieldByIndex(idx), sub, r)
	}
}

// mappingPairs returns the key and value nodes of mapping n, alternating, with
// YAML merge keys (<<: *anchor, or a list of aliases) expanded as PyYAML does: a
// key written in n wins over a merged one, and an earlier merged mapping over a
// later one.
func mappingPairs(n *yaml.Node, path string, r *report) []*yaml.Node {
	var own, merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!merge" {
			own = append(own, k, v)
			continue
		}
		sources := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		}
		for _, src := range sources {
			if src.Kind == yaml.AliasNode {
				if r.expanding[src.Alias] {
					r.addf(path, src, "alias *%s refers to the value that contains it", src.Value)
					continue
				}
				src = src.Alias
			}
			if src.Kind != yaml.MappingNode {
				r.addf(path, k, "a merge key (<<) needs a mapping or a list of mappings, got %s", kindOf(src))
				continue
			}
			if r.expanding == nil {
				r.expanding = map[*yaml.Node]bool{}
			}
			r.expanding[src] = true
			merged = append(merged, mappingPairs(src, path, r)...)
			delete(r.expanding, src)
		}
	}
	if len(merged) == 0 {
		return own
	}
	have := map[string]bool{}
	for i := 0; i < len(own); i += 2 {
		have[own[i].Value] = true
	}
	var out []*yaml.Node
	for i := 0; i < len(merged); i += 2 {
		if key := merged[i].Value; !have[key] {
			have[key] = true
			out = append(out, merged[i], merged[i+1])
		}
	}
	return append(out, own...)
}

// structFields maps each yaml key of t to its field index path; fields tagged
// `yaml:",inline"` contribute their own keys.
func structFields(t reflect.Type) map[string][]int {
	m := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if opts == "inline" {
			for k, idx := range structFields(t.Field(i).Type) {
				m[k] = append([]int{i}, idx...)
			}
			continue
		}
		if name != "" && name != "-" {
			m[name] = []int{i}
		}
	}
	return m
}

// usedKeys are the keys of a struct's fields that this tool uses, sorted:
// the site-agent keys it accepts and ignores are left out.
func usedKeys(t reflect.Type, fields map[string][]int) []string {
	var out []string
	for _, k := range sortedKeys(fields) {
		if t.FieldByIndex(fields[k]).Type != ignoredType {
			out = append(out, k)
		}
	}
	return out
}

// closest is the key of known that is nearest to key, when it is near
// enough to be a likely typo: at most a third of its length (and at least
// one edit) away.
func closest(key string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > max(1, len(key)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys(m map[string][]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describe names the kind of value a node holds, for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!str":
		return fmt.Sprintf("string %q", n.Value)
	case "!!null":
		return "null"
	}
	return fmt.Sprintf("%s %s", strings.TrimPrefix(n.Tag, "!!"), n.Value)
}

// kindOf names the kind of value a node holds without quoting the value.
func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!null":
		return "null"
	}
	return "a " + strings.TrimPrefix(n.Tag, "!!")
}
