package waldur

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/internal/parallel"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// uuidKeys names the uuid-valued keys each kind of record needs valid: the
// record's own uuid always, the others when they are set.
var uuidKeys = map[string]func(any) []keyed{
	RecordResource: func(v any) []keyed {
		r := v.(*Resource)
		return []keyed{{"uuid", r.UUID, true}, {"project_uuid", r.ProjectUUID, false}, {"offering_uuid", r.OfferingUUID, false}}
	},
	RecordOrder: func(v any) []keyed {
		o := v.(*Order)
		return []keyed{{"uuid", o.UUID, true}, {"marketplace_resource_uuid", o.MarketplaceResourceUUID, false}}
	},
	RecordOfferingUser: func(v any) []keyed {
		u := v.(*OfferingUser)
		return []keyed{{"uuid", u.UUID, true}, {"user_uuid", u.UserUUID, false}}
	},
	RecordServiceAccount: func(v any) []keyed {
		a := v.(*ServiceAccount)
		return []keyed{{"uuid", a.UUID, true}, {"project_uuid", a.ProjectUUID, false}}
	},
	RecordCourseAccount: func(v any) []keyed {
		a := v.(*CourseAccount)
		return []keyed{{"uuid", a.UUID, true}, {"project_uuid", a.ProjectUUID, false}}
	},
	RecordTeamMember: func(v any) []keyed {
		m := v.(*TeamMember)
		return []keyed{{"uuid", m.UUID, true}}
	},
}

type keyed struct {
	key      string
	value    UUID
	required bool
}

// decodeRecords decodes each raw record of a listing into T on its own. A
// record that does not decode, or whose uuid keys are malformed, is left out
// and returned as a BadRecord naming the key; the others are returned.
func decodeRecords[T any](kind string, raws []json.RawMessage) ([]T, []BadRecord) {
	if len(raws) < 2*parallelRecords || runtime.GOMAXPROCS(0) < 2 {
		return decodeRange[T](kind, raws, 0)
	}
	// A long listing is decoded in parts at once (the server waits for the
	// next request meanwhile); the records keep their order.
	parts := runtime.GOMAXPROCS(0)
	size := (len(raws) + parts - 1) / parts
	outs := make([][]T, parts)
	bads := make([][]BadRecord, parts)
	parallel.For(parts, parts, func(p int) {
		lo, hi := min(p*size, len(raws)), min((p+1)*size, len(raws))
		outs[p], bads[p] = decodeRange[T](kind, raws[lo:hi], lo)
	})
	return slices.Concat(outs...), slices.Concat(bads...)
}

// parallelRecords is the fewest records decodeRecords gives each part.
const parallelRecords = 500

// decodeRange is decodeRecords over raws, the records from number first
// (from 0) of the listing.
func decodeRange[T any](kind string, raws []json.RawMessage, first int) ([]T, []BadRecord) {
	out := make([]T, 0, len(raws))
	var bad []BadRecord
	for i, raw := range raws {
		i += first
		var v T
		if err := decodeOne(&v, raw); err != nil {
			key := failingKey[T](raw)
			var te *json.UnmarshalTypeError
			if key == "" && errors.As(err, &te) && te.Field != "" {
				key = te.Field
			}
			if key == "" {
				key = "(record)"
			}
			bad = append(bad, BadRecord{Kind: kind, UUID: validKey(raw), Key: key,
				Reason: fmt.Sprintf("record %d of the listing does not decode: key %s: %s", i+1, key, redact.String(err.Error()))})
			continue
		}
		if b, ok := checkUUIDs(kind, &v); !ok {
			b.Reason = fmt.Sprintf("record %d of the listing: %s", i+1, b.Reason)
			bad = append(bad, b)
			continue
		}
		out = append(out, v)
	}
	return out, bad
}

// decodeOne decodes raw into v as json.Unmarshal does; a team member, a
// resource and an offering user take their decoder of fastrecord.go when
// that one can.
func decodeOne[T any](v *T, raw []byte) error {
	ok := false
	switch p := any(v).(type) {
	case *TeamMember:
		*p, ok = decodeTeamMember(raw)
	case *Resource:
		*p, ok = decodeResource(raw)
	case *OfferingUser:
		*p, ok = decodeOfferingUser(raw)
	}
	if ok {
		return nil
	}
	var zero T
	*v = zero
	return json.Unmarshal(raw, v)
}

// failingKey finds the JSON key of T whose value does not decode, by decoding
// the record's keys one by one; "" when none does on its own.
func failingKey[T any](raw json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return ""
	}
	t := reflect.TypeFor[T]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		v, ok := fields[name]
		if name == "" || !ok {
			continue
		}
		if json.Unmarshal(v, reflect.New(f.Type).Interface()) != nil {
			return name
		}
	}
	return ""
}

// checkUUIDs checks the uuid keys of a decoded record.
func checkUUIDs(kind string, v any) (BadRecord, bool) {
	keys := uuidKeys[kind](v)
	own := keys[0].value
	if !own.Valid() {
		own = ""
	}
	for _, k := range keys {
		if k.value == "" && !k.required {
			continue
		}
		if !k.value.Valid() {
			shown := string(k.value)
			if len(shown) > 80 {
				shown = shown[:80] + "…"
			}
			reason := fmt.Sprintf("key %s: %q is not a uuid", k.key, redact.String(shown))
			if k.value == "" {
				reason = fmt.Sprintf("key %s is missing or empty", k.key)
			}
			return BadRecord{Kind: kind, UUID: own, Key: k.key, Reason: reason}, false
		}
	}
	return BadRecord{}, true
}

// validKey is the record's uuid when it is a valid one.
func validKey(raw json.RawMessage) UUID {
	id := UUID(recordKey(raw))
	if !id.Valid() {
		return ""
	}
	return id
}

// badRecordsText joins bad records for a log line.
func badRecordsText(bad []BadRecord) string {
	parts := make([]string, len(bad))
	for i, b := range bad {
		parts[i] = b.String()
	}
	return strings.Join(parts, "; ")
}
