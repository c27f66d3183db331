package waldurtest

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendJSON appends v encoded exactly as json.Marshal encodes it. The
// fake's objects are maps of strings, numbers, booleans, nulls, lists and
// maps; those are written directly (keys sorted, as json.Marshal sorts
// them), anything else goes through json.Marshal. A listing page of
// hundreds of objects was most of what the fake spent answering a sync.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, v)
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e21 {
			return strconv.AppendFloat(b, v, 'f', -1, 64), nil
		}
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case []object:
		return appendList(b, v)
	case []any:
		return appendList(b, v)
	case map[string]any:
		return appendObject(b, v)
	}
	enc, err := json.Marshal(v)
	return append(b, enc...), err
}

func appendList[T any](b []byte, list []T) ([]byte, error) {
	if list == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, e := range list {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendJSON(b, e); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendObject[M ~map[string]any](b []byte, m M) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendString(b, k); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = appendJSON(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendString writes a string of printable ASCII that needs no escape
// as it is, any other through json.Marshal (its escapes of HTML
// characters, control characters and invalid UTF-8 included).
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, err := json.Marshal(s)
			return append(b, enc...), err
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}
