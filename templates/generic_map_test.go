package templates

import (
	"fmt"
	"reflect"
	"testing"
)

type loudKey string

func (k loudKey) String() string { return "key-" + string(k) }

type plainKey string

// TestMapToGeneric holds the map conversion's shortcuts to the general rule,
// keys as fmt.Sprint prints them: a key type with a String method keeps it.
func TestMapToGeneric(t *testing.T) {
	tests := []struct {
		name string
		in   any
	}{
		{"string to string", map[string]string{"a": "1", "b": "", "c d": "x"}},
		{"empty string to string", map[string]string{}},
		{"string to any", map[string]any{"a": 1, "b": []string{"x"}, "c": map[string]string{"d": "e"}, "n": nil}},
		{"string to int", map[string]int{"a": 1}},
		{"named key with String", map[loudKey]string{"a": "1"}},
		{"named key", map[plainKey]int{"a": 2}},
		{"int key", map[int]string{3: "c"}},
		{"named map", map[string]loudKey{"a": "v"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := reflect.ValueOf(tc.in)
			want := map[string]any{}
			it := v.MapRange()
			for it.Next() {
				want[fmt.Sprint(it.Key().Interface())] = toGeneric(it.Value())
			}
			if got := mapToGeneric(v); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %#v, want %#v", got, want)
			}
		})
	}
}
