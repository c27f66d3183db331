package waldur

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDecodeTeamMemberMatchesJSON: whenever decodeTeamMember decodes a
// record, encoding/json decodes it to the same member without error; the
// wire's usual records take the fast path.
func TestDecodeTeamMemberMatchesJSON(t *testing.T) {
	usual := []string{
		`{"uuid":"0d8b4f3c-1a2b-4c5d-8e9f-0a1b2c3d4e5f","username":"alice","full_name":"Alice Ämmälä","email":"a@example.org","role":"admin","expiration_time":null,"offering_user_username":"alice01","offering_user_state":"OK"}`,
		` { "uuid" : "0D8B4F3C1A2B4C5D8E9F0A1B2C3D4E5F" , "role" : "member" } `,
		`{}`, `{"uuid":null}`, `{"uuid":""}`, `{"uuid":"not-a-uuid"}`, `{"extra":[1,{"a":null}],"role":"x"}`, `{"role":"a","role":"b"}`,
		`{"role":"a","role":null}`,
	}
	for _, s := range usual {
		t.Run(s, func(t *testing.T) {
			if _, ok := decodeTeamMember([]byte(s)); !ok {
				t.Fatalf("decodeTeamMember(%s) gave up", s)
			}
			check(t, s)
		})
	}
	t.Run("others", func(t *testing.T) {
		for _, s := range []string{`{"Role":"x"}`, `{"ROLE":"x"}`, `{"rol\u0065":"x"}`, `{"role":"a\nb"}`, `{"role":"\u00e9"}`,
			"{\"role\":\"\xff\"}", `{"role":1}`, `{"uuid":1}`, `{"role":true}`, `[]`, `"x"`, `{"ſole":"x"}`, `{"uuid":"a\"b"}`} {
			check(t, s)
		}
	})
	t.Run("random", func(t *testing.T) {
		keys := []string{`"uuid"`, `"UUID"`, `"username"`, `"full_name"`, `"Full_Name"`, `"email"`, `"role"`, `"expiration_time"`,
			`"offering_user_username"`, `"offering_user_state"`, `"other"`, `"rolé"`}
		values := []string{`"x"`, `""`, `null`, `1`, `"0d8b4f3c1a2b4c5d8e9f0a1b2c3d4e5f"`, `"a\"b"`, `"é"`, `{"a":"b"}`, `[]`, `true`}
		rng := rand.New(rand.NewPCG(29, 4))
		for range 20000 {
			var parts []string
			for range rng.IntN(6) {
				parts = append(parts, keys[rng.IntN(len(keys))]+":"+values[rng.IntN(len(values))])
			}
			check(t, "{"+strings.Join(parts, ",")+"}")
		}
	})
}

// check fails when decodeTeamMember decodes s other than encoding/json.
func check(t *testing.T, s string) {
	t.Helper()
	checkDecoder(t, decodeTeamMember, s)
}

// checkDecoder fails when decode decodes s other than encoding/json.
func checkDecoder[T any](t *testing.T, decode func([]byte) (T, bool), s string) {
	t.Helper()
	got, ok := decode([]byte(s))
	if !ok {
		return
	}
	var want T
	if err := json.Unmarshal([]byte(s), &want); err != nil {
		t.Fatalf("decode(%s) decoded what encoding/json refuses: %v", s, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decode(%s) = %+v, encoding/json %+v", s, got, want)
	}
}

// randomRecords checks decode against encoding/json on n random objects
// made of keys and values, duplicates included.
func randomRecords[T any](t *testing.T, decode func([]byte) (T, bool), keys, values []string, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(29, 4))
	fast := 0
	for range n {
		var parts []string
		for range rng.IntN(7) {
			parts = append(parts, keys[rng.IntN(len(keys))]+":"+values[rng.IntN(len(values))])
		}
		s := "{" + strings.Join(parts, ",") + "}"
		if _, ok := decode([]byte(s)); ok {
			fast++
		}
		checkDecoder(t, decode, s)
	}
	if fast < n/10 {
		t.Fatalf("only %d of %d random records took the fast path", fast, n)
	}
}

// fullResource is a resource with every field set, as a listing page
// carries it.
func fullResource() Resource {
	id := UUID("0d8b4f3c1a2b4c5d8e9f0a1b2c3d4e5f")
	return Resource{UUID: id, Name: "Ämmälä lab", Slug: "lab", BackendID: "ns-lab", State: ResourceOK,
		Limits: Limits{"cpu": "4", "ram": "8192"}, OfferingUUID: id, PlanUUID: id, ProjectUUID: id,
		ProjectName: "P", ProjectSlug: "p", ProjectDescription: "d", CustomerUUID: id, CustomerName: "C",
		CustomerSlug: "c", Paused: true, RestrictMemberAccess: true, EndDate: "2027-01-01",
		Created: time.Date(2026, 11, 28, 3, 0, 0, 123, time.UTC), BackendMetadata: map[string]any{"ns": "lab", "n": 1.5,
			"l": []any{"a", nil}}, LastSync: "2026-11-28T03:00:00Z",
		OfferingPluginOptions: &PluginOptions{EnableMembershipSyncStatus: true}}
}

// TestDecodeResourceMatchesJSON: whenever decodeResource decodes a record,
// encoding/json decodes it to the same resource without error; the wire's
// usual records take the fast path.
func TestDecodeResourceMatchesJSON(t *testing.T) {
	full, err := json.Marshal(fullResource())
	if err != nil {
		t.Fatal(err)
	}
	usual := []string{string(full), `{}`, `{"uuid":"0d8b4f3c1a2b4c5d8e9f0a1b2c3d4e5f","paused":"false","limits":null,"backend_metadata":{}}`,
		`{"limits":{"cpu":4},"limits":{"ram":"1"},"backend_metadata":{"a":1},"backend_metadata":{"b":2}}`,
		`{"offering_plugin_options":{"enable_membership_sync_status":true},"offering_plugin_options":{"x":1}}`,
		`{"created":null,"plan_uuid":null,"extra":[1,{"a":null}]}`}
	for _, s := range usual {
		t.Run(s, func(t *testing.T) {
			if _, ok := decodeResource([]byte(s)); !ok {
				t.Fatalf("decodeResource(%s) gave up", s)
			}
			checkDecoder(t, decodeResource, s)
		})
	}
	t.Run("others", func(t *testing.T) {
		for _, s := range []string{`{"Name":"x"}`, `{"name":"a\nb"}`, `{"name":1}`, `{"paused":"maybe"}`, `{"created":"yesterday"}`,
			`{"limits":[1]}`, `{"limits":{"cpu":true}}`, `{"backend_metadata":"x"}`, `{"offering_plugin_options":1}`, `[]`,
			`{"ſlug":"x"}`, `{"uuid":1}`} {
			checkDecoder(t, decodeResource, s)
		}
	})
	t.Run("random", func(t *testing.T) {
		keys := []string{`"uuid"`, `"name"`, `"NAME"`, `"state"`, `"limits"`, `"offering_uuid"`, `"plan_uuid"`, `"project_uuid"`,
			`"customer_slug"`, `"paused"`, `"Paused"`, `"downscaled"`, `"end_date"`, `"created"`, `"backend_metadata"`,
			`"last_sync"`, `"offering_plugin_options"`, `"other"`, `"nämé"`}
		values := []string{`"x"`, `""`, `null`, `1`, `"0d8b4f3c1a2b4c5d8e9f0a1b2c3d4e5f"`, `"a"b"`, `"é"`, `{"a":"b"}`,
			`{"cpu":2}`, `{"enable_membership_sync_status":"true"}`, `[]`, `true`, `"true"`, `"2026-11-28T03:00:00Z"`,
			`{"cpu":" 2 ","ram":-1.5e3}`, `{"a":null}`, `{"a":{"b":1}}`, `{}`, `{"enable_membership_sync_status":1,"x":[]}`,
			`{"Enable_Membership_Sync_Status":true}`, `{"a\u0062":"c"}`, `{"a":"\u0062"}`}
		randomRecords(t, decodeResource, keys, values, 30000)
	})
}

// TestDecodeOfferingUserMatchesJSON: whenever decodeOfferingUser decodes a
// record, encoding/json decodes it to the same offering user without error;
// the wire's usual records take the fast path.
func TestDecodeOfferingUserMatchesJSON(t *testing.T) {
	id := UUID("0d8b4f3c1a2b4c5d8e9f0a1b2c3d4e5f")
	full, err := json.Marshal(OfferingUser{UUID: id, Username: "alice01", State: "OK", UserUUID: id, UserUsername: "alice",
		UserEmail: "a@example.org", UserFullName: "Alice Ämmälä", UserFirstName: "Alice", UserLastName: "Ämmälä",
		UserCivilNumber: "123", IsRestricted: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{string(full), `{}`, `{"is_restricted":null,"user_uuid":null,"extra":{"a":[1]}}`} {
		t.Run(s, func(t *testing.T) {
			if _, ok := decodeOfferingUser([]byte(s)); !ok {
				t.Fatalf("decodeOfferingUser(%s) gave up", s)
			}
			checkDecoder(t, decodeOfferingUser, s)
		})
	}
	t.Run("random", func(t *testing.T) {
		keys := []string{`"uuid"`, `"username"`, `"Username"`, `"state"`, `"user_uuid"`, `"user_username"`, `"user_email"`,
			`"user_full_name"`, `"user_first_name"`, `"user_last_name"`, `"user_civil_number"`, `"is_restricted"`,
			`"IS_RESTRICTED"`, `"other"`, `"ſtate"`}
		values := []string{`"x"`, `""`, `null`, `1`, `"0d8b4f3c1a2b4c5d8e9f0a1b2c3d4e5f"`, `"a"b"`, `"é"`, `{"a":"b"}`,
			`[]`, `true`, `"false"`, "\"\xff\""}
		randomRecords(t, decodeOfferingUser, keys, values, 20000)
	})
}

// TestNestedFieldsWithoutReflection: the nested objects a resource usually
// carries (limits, backend metadata, plugin options) are decoded without
// json.Unmarshal, and the others are left to it untouched.
func TestNestedFieldsWithoutReflection(t *testing.T) {
	for _, tc := range []struct {
		v                     string
		limits, strings, opts bool
	}{
		{`null`, true, true, true},
		{`{}`, true, true, true},
		{`{"cpu":4,"ram":"1 Gi","storage":-1.5e3}`, true, false, true},
		{`{"namespace":"ns-1","cluster":"c"}`, true, true, true},
		{`{"enable_membership_sync_status":true}`, false, false, true},
		{`{"cpu":null}`, false, false, true},
		{`{"cpu":"\u0031"}`, false, false, true},
		{`{"c\u0070u":1}`, false, false, false},
		{`{"enable_membership_sync_status":"maybe"}`, true, true, false},
		{`{"Enable_membership_sync_status":true}`, false, false, false},
		{`[]`, false, false, false},
	} {
		t.Run(tc.v, func(t *testing.T) {
			var l Limits
			var m map[string]any
			var o *PluginOptions
			if got := setLimits(&l, []byte(tc.v)); got != tc.limits {
				t.Errorf("setLimits = %v, want %v", got, tc.limits)
			}
			if got := setStrings(&m, []byte(tc.v)); got != tc.strings {
				t.Errorf("setStrings = %v, want %v", got, tc.strings)
			}
			if got := setOptions(&o, []byte(tc.v)); got != tc.opts {
				t.Errorf("setOptions = %v, want %v", got, tc.opts)
			}
			if !tc.limits && l != nil || !tc.strings && m != nil || !tc.opts && o != nil {
				t.Errorf("a refused value changed the field: %v %v %v", l, m, o)
			}
		})
	}
}
