package waldur

import (
	"bytes"
	"encoding/json"
	"strings"
)

// A listing page is decoded in two steps: the page is split into its
// records, then each record is decoded on its own (decodeRecords), so that
// one bad record is reported and skipped. The split and the record's uuid
// key need no decoding: splitArray validates the page once and cuts its
// elements out of the body without copying them, and scanKey reads one
// top-level string of a record. Both give up (ok false) on anything they do
// not handle, and the caller then decodes with encoding/json as before, so
// the results and error messages are the same.

// splitArray returns the elements of a JSON array, as slices of b; ok is
// false when b is not a valid JSON array.
func splitArray(b []byte) (out []json.RawMessage, ok bool) {
	valid, n := validCount(b)
	if !valid {
		return nil, false
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	out = make([]json.RawMessage, 0, n)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, true
	}
	for i < len(b) {
		end := skipValue(b, i)
		out = append(out, json.RawMessage(b[i:end:end]))
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, false
		}
		if b[i] == ']' {
			return out, true
		}
		i = skipSpace(b, i+1) // the comma
	}
	return nil, false
}

// scanKey returns the string value of the last top-level key of the valid
// JSON object raw that equals key ignoring case (as encoding/json matches a
// struct field), "" when that value is not a string; found is false when
// raw has no such key. ok is false when raw is not an object or a key or
// the value holds an escape: the caller decodes instead.
func scanKey(raw []byte, key string) (value string, found, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return "", false, false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		kend := skipValue(raw, i)
		k := raw[i+1 : kend-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			return "", false, false
		}
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return "", false, false
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if strings.EqualFold(string(k), key) {
			found, value = true, ""
			if v := raw[i:vend]; len(v) >= 2 && v[0] == '"' {
				if bytes.IndexByte(v, '\\') >= 0 {
					return "", false, false
				}
				value = string(v[1 : len(v)-1])
			}
		}
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if i >= len(raw) || raw[i] != '}' {
		return "", false, false
	}
	return value, found, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at b[i], which
// must be the start of a valid JSON value.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if depth == 0 {
				return min(i+1, len(b))
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
