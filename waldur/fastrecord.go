package waldur

import (
	"bytes"
	"unicode/utf8"
)

// decodeTeamMember decodes a team member record, a flat object of strings,
// without reflection; ok is false when raw holds anything it does not handle
// exactly as encoding/json would (a key that is not a field's exact name but
// might match one ignoring case, a string with an escape or invalid UTF-8, a
// value of another type for a field), and the caller then uses
// json.Unmarshal. A no-op reads one team per project, about 4,000 at 10,000
// tenants (BENCHMARKS.md, "A no-op sync as a CronJob starts it");
// TestDecodeTeamMemberMatchesJSON holds it to encoding/json. raw must be
// valid JSON, as every record cut from a validated page is.
func decodeTeamMember(raw []byte) (m TeamMember, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return m, false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		kend := skipValue(raw, i)
		key := raw[i+1 : kend-1]
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return m, false
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if !m.set(key, raw[i:vend]) {
			return m, false
		}
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if i >= len(raw) || raw[i] != '}' {
		return m, false
	}
	return m, true
}

// teamMemberKeys are TeamMember's JSON names.
var teamMemberKeys = []string{"uuid", "username", "full_name", "email", "role", "expiration_time", "offering_user_username", "offering_user_state"}

// set stores the JSON value v of key in m; false when it cannot be sure to
// do what encoding/json does.
func (m *TeamMember) set(key, v []byte) bool {
	if string(key) == "uuid" {
		return m.UUID.UnmarshalJSON(v) == nil
	}
	var dst *string
	switch string(key) {
	case "username":
		dst = &m.Username
	case "full_name":
		dst = &m.FullName
	case "email":
		dst = &m.Email
	case "role":
		dst = &m.Role
	case "expiration_time":
		dst = &m.ExpirationTime
	case "offering_user_username":
		dst = &m.OfferingUserUsername
	case "offering_user_state":
		dst = &m.OfferingUserState
	default:
		// Another key is ignored, unless encoding/json would match it to
		// a field ignoring case.
		if bytes.ContainsFunc(key, func(r rune) bool { return r >= utf8.RuneSelf || r == '\\' }) {
			return false
		}
		for _, k := range teamMemberKeys {
			if bytes.EqualFold(key, []byte(k)) {
				return false
			}
		}
		return true
	}
	switch {
	case string(v) == "null": // encoding/json leaves a string as it is
		return true
	case len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v):
		return false
	}
	*dst = string(v[1 : len(v)-1])
	return true
}
