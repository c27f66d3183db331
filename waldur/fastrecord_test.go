package waldur

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
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
	got, ok := decodeTeamMember([]byte(s))
	if !ok {
		return
	}
	var want TeamMember
	if err := json.Unmarshal([]byte(s), &want); err != nil {
		t.Fatalf("decodeTeamMember(%s) decoded what encoding/json refuses: %v", s, err)
	}
	if got != want {
		t.Fatalf("decodeTeamMember(%s) = %+v, encoding/json %+v", s, got, want)
	}
}
