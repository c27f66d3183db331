package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// errNilPath reports a nil pointer or interface met before the end of a path;
// errNoKey a key a map (nil or not) does not hold. optional treats both as a
// missing value.
var (
	errNilPath = errors.New("is nil")
	errNoKey   = errors.New("map has no key")
)

// missError is errNilPath or errNoKey with where it happened. Its text is
// made only when it is read: optional expressions meet these errors for
// every tenant and drop them (BENCHMARKS.md, "A no-op sync as a CronJob
// starts it").
type missError struct {
	cause error
	path  []string // errNilPath: the path up to the nil
	key   string   // errNoKey: the missing key
}

func (e *missError) Error() string {
	if e.cause == errNoKey {
		return fmt.Sprintf("%v %q", errNoKey, e.key)
	}
	return "." + strings.Join(e.path, ".") + " " + e.cause.Error()
}

func (e *missError) Unwrap() error { return e.cause }

// lookup follows a chain of struct fields and string map keys from v.
func lookup(v reflect.Value, path []string) (reflect.Value, error) {
	for i, name := range path {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return reflect.Value{}, &missError{cause: errNilPath, path: path[:i]}
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Struct:
			// Unexported fields stay out of reach, as in text/template.
			sf, ok := v.Type().FieldByName(name)
			if !ok || !sf.IsExported() {
				return reflect.Value{}, fmt.Errorf("no field %s in %s", name, v.Type())
			}
			f, err := v.FieldByIndexErr(sf.Index)
			if err != nil { // through a nil embedded pointer
				return reflect.Value{}, &missError{cause: errNilPath, path: path[:i+1]}
			}
			v = f
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return reflect.Value{}, fmt.Errorf("cannot index %s with %q", v.Type(), name)
			}
			f := v.MapIndex(reflect.ValueOf(name).Convert(v.Type().Key()))
			if !f.IsValid() {
				return reflect.Value{}, &missError{cause: errNoKey, key: name}
			}
			v = f
		default:
			return reflect.Value{}, fmt.Errorf("cannot read %s of %s", name, v.Type())
		}
	}
	return v, nil
}

// stringType is the type string; stringMapType is map[string]string, the
// commonest map of template data (labels, annotations, quotas).
var (
	stringType    = reflect.TypeFor[string]()
	stringMapType = reflect.TypeFor[map[string]string]()
)

// mapToGeneric is toGeneric of a non-nil map: keys as fmt.Sprint prints them.
// A key of type string is taken as it is, and a map[string]string is read
// without reflection: the same result without a formatted copy of every key.
func mapToGeneric(v reflect.Value) map[string]any {
	m := make(map[string]any, v.Len())
	if v.Type() == stringMapType && v.CanInterface() {
		for k, e := range v.Interface().(map[string]string) {
			m[k] = e
		}
		return m
	}
	plainKey := v.Type().Key() == stringType
	it := v.MapRange()
	for it.Next() {
		if plainKey {
			m[it.Key().String()] = toGeneric(it.Value())
		} else {
			m[fmt.Sprint(it.Key().Interface())] = toGeneric(it.Value())
		}
	}
	return m
}

// toGeneric converts a Go value to the JSON data model: nil, string, bool, int64,
// float64, []any and map[string]any. Structs become maps keyed by their json tag
// (or field name). A nil slice, map or pointer becomes nil; an empty one stays empty.
func toGeneric(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return toGeneric(v.Elem())
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		l := make([]any, v.Len())
		for i := range l {
			l[i] = toGeneric(v.Index(i))
		}
		return l
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		return mapToGeneric(v)
	case reflect.Struct:
		m := map[string]any{}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			g := toGeneric(v.Field(i))
			if strings.Contains(opts, "omitempty") && isEmpty(g) {
				continue
			}
			m[name] = g
		}
		return m
	}
	return fmt.Sprint(v.Interface())
}

// fromJSON turns json.Number values into int64 or float64.
func fromJSON(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case []any:
		for i := range t {
			t[i] = fromJSON(t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = fromJSON(t[k])
		}
	}
	return v
}

// isMissing is true for nil and "".
func isMissing(v any) bool { return v == nil || v == "" }

// isEmpty is true for nil, "", and empty lists and maps.
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}
