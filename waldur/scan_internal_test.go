package waldur

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// splitArray cuts a page into the same records as decoding it into
// []json.RawMessage, and refuses what is not a valid JSON array.
func TestSplitArrayMatchesDecoding(t *testing.T) {
	for _, c := range []struct{ name, page string }{
		{"empty", `[]`},
		{"empty with space", " [ \n ] "},
		{"objects", `[{"uuid":"a"},{"uuid":"b","x":[1,2,{"y":"]"}]}]`},
		{"scalars", `[1, "two", null, true, -3.5e2, "a\"]b"]`},
		{"nested arrays", `[[],[[1]],{"a":{}}]`},
		{"spaces", "[ {\"a\" : 1 } ,\n\t{\"b\":\"\\\\\"} ]"},
		{"not an array", `{"a":1}`},
		{"invalid", `[{"a":1},]`},
		{"truncated", `[{"a":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var want []json.RawMessage
			werr := json.Unmarshal([]byte(c.page), &want)
			got, ok := splitArray([]byte(c.page))
			if werr != nil || strings.TrimSpace(c.page)[0] != '[' {
				if ok {
					t.Fatalf("split %q: %q, want a refusal", c.page, got)
				}
				return
			}
			if !ok || len(got) != len(want) {
				t.Fatalf("split %q: %q %v, want %q", c.page, got, ok, want)
			}
			for i := range want {
				if string(got[i]) != string(want[i]) {
					t.Errorf("record %d: %q, want %q", i, got[i], want[i])
				}
			}
		})
	}
}

// recordKey reads the uuid as decoding the record would: the last key that
// matches ignoring case, "" for a value that is not a string, escapes
// decoded.
func TestRecordKeyMatchesDecoding(t *testing.T) {
	for _, c := range []struct{ name, raw, want string }{
		{"plain", `{"uuid":"0D00-00AB","x":1}`, "0d0000ab"},
		{"spaces", "{ \"name\" : \"a\" , \"uuid\" : \" ab-cd \" }", "abcd"},
		{"nested uuid is not the record's", `{"team":{"uuid":"ff"},"uuid":"aa"}`, "aa"},
		{"nested only", `{"team":[{"uuid":"ff"}]}`, ""},
		{"folded key", `{"UUID":"AA"}`, "aa"},
		{"last wins", `{"uuid":"aa","Uuid":"bb"}`, "bb"},
		{"number", `{"uuid":12}`, ""},
		{"null", `{"uuid":null}`, ""},
		{"escaped value", `{"uuid":"a\u0062"}`, "ab"},
		{"escaped key", `{"\u0075uid":"cc"}`, "cc"},
		{"not an object", `["uuid"]`, ""},
		{"invalid", `{"uuid":`, ""},
		{"string with braces", `{"name":"}{\"","uuid":"dd"}`, "dd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := recordKey(json.RawMessage(c.raw)); got != c.want {
				t.Errorf("recordKey(%s) = %q, want %q", c.raw, got, c.want)
			}
		})
	}
}

// A page's records are cut out of its body, not copied one by one: the
// allocations of splitting a page do not grow with its records.
func TestDecodeRawsDoesNotCopyRecords(t *testing.T) {
	page := func(n int) *reply {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"uuid":"0d000000000040008000000000000001","name":"r","limits":{"cpu":2}}`)
		}
		b.WriteString("]")
		return &reply{body: []byte(b.String())}
	}
	for _, n := range []int{1, 300} {
		t.Run(fmt.Sprint(n, " records"), func(t *testing.T) {
			r := page(n)
			allocs := testing.AllocsPerRun(5, func() {
				if raws, err := decodeRaws(r); err != nil || len(raws) != n {
					t.Fatalf("%d records, %v", len(raws), err)
				}
			})
			if allocs > 2 {
				t.Errorf("%d records: %.0f allocations, want at most 2", n, allocs)
			}
		})
	}
}

// A UUID decodes the same through the shortcut for plain strings as through
// encoding/json.
func TestUUIDDecodesAsJSONString(t *testing.T) {
	for _, raw := range []string{
		`"0D000000-0000-4000-8000-000000000001"`, `"0d000000000040008000000000000001"`, `""`, `null`,
		`"not a uuid"`, `"\u0030d000000000040008000000000000001"`, `"caf\u00e9"`, "\"tab\tin\"", `12`, `"ü"`,
	} {
		t.Run(raw, func(t *testing.T) {
			var got UUID
			gerr := got.UnmarshalJSON([]byte(raw))
			var s string
			want, werr := UUID(""), json.Unmarshal([]byte(raw), &s)
			if werr == nil && s != "" {
				if p, err := ParseUUID(s); err == nil {
					want = p
				} else {
					want = UUID(strings.ToLower(strings.ReplaceAll(s, "-", "")))
				}
			}
			if raw == "null" {
				werr = nil
			}
			if got != want || (gerr != nil) != (werr != nil) {
				t.Errorf("UnmarshalJSON(%s) = %q, %v; want %q, error %t", raw, got, gerr, want, werr != nil)
			}
		})
	}
}

// Decoding a UUID as Waldur sends it allocates its string, without a nested decoding (3 allocations and a validity scan).
func TestUUIDDecodeAllocations(t *testing.T) {
	raw := []byte(`"0d000000000040008000000000000001"`)
	var u UUID
	if n := testing.AllocsPerRun(10, func() { _ = u.UnmarshalJSON(raw) }); n > 2 {
		t.Errorf("%.0f allocations, want at most 2", n)
	}
}

// Valid agrees with ParseUUID on values of 32 characters and refuses others.
func TestUUIDValidMatchesParse(t *testing.T) {
	for _, u := range []string{
		"0d000000000040008000000000000001", "0D000000000040008000000000000001", "0d00000000004000800000000000000g",
		"0d000000-0000-4000-8000-00000001", " 0d00000000004000800000000000001", "0d0000000000400080000000000000011",
		"", "0d00000000004000800000000000000:", "0d00000000004000800000000000000@", "0d00000000004000800000000000000`",
		"0d00000000004000800000000000000/", "0d00000000004000800000000000000G", "0d00000000004000800000000000000\x10",
	} {
		t.Run(u, func(t *testing.T) {
			_, err := ParseUUID(u)
			want := err == nil && len(u) == 32
			if got := UUID(u).Valid(); got != want {
				t.Errorf("Valid(%q) = %t, want %t", u, got, want)
			}
		})
	}
}

// A long listing decoded in parts at once gives what one pass gives: the
// same records in the same order, and the same bad records numbered as in
// the whole listing.
func TestDecodeRecordsInPartsMatchesOnePass(t *testing.T) {
	var raws []json.RawMessage
	for i := range 3*parallelRecords + 7 {
		rec := fmt.Sprintf(`{"uuid":"%032x","name":"r%d","state":"OK","limits":{"cpu":%d}}`, i+1, i, i%9)
		switch i % 97 {
		case 5:
			rec = fmt.Sprintf(`{"uuid":"not-a-uuid-%d","name":"bad"}`, i)
		case 50:
			rec = fmt.Sprintf(`{"uuid":"%032x","limits":"cpu"}`, i+1)
		}
		raws = append(raws, json.RawMessage(rec))
	}
	got, gotBad := decodeRecords[Resource](RecordResource, raws)
	want, wantBad := decodeRange[Resource](RecordResource, raws, 0)
	if len(want) < 2*parallelRecords || len(wantBad) == 0 {
		t.Fatalf("%d records and %d bad ones: the listing tests too little", len(want), len(wantBad))
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotBad, wantBad) {
		t.Errorf("in parts: %d records, %d bad (first %+v); one pass: %d, %d (first %+v)", len(got), len(gotBad), gotBad[0], len(want), len(wantBad), wantBad[0])
	}
}
