package waldur

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The listing records a no-op reads by the thousand (team members, one team
// per project; resources; offering users) are decoded without reflection:
// decodeObject walks the record's keys and a per-type set method stores the
// fields it knows. Each gives up (ok false) on anything it does not handle
// exactly as encoding/json would — a key that is not a field's exact name
// but might match one ignoring case, a string with an escape or invalid
// UTF-8, a value of another type for a field, a field value that does not
// decode — and the caller then uses json.Unmarshal, which also reports the
// error. BENCHMARKS.md, "A no-op sync as a CronJob starts it", has the cost;
// TestDecodeTeamMemberMatchesJSON, TestDecodeResourceMatchesJSON and
// TestDecodeOfferingUserMatchesJSON hold them to encoding/json. raw must be
// valid JSON, as every record cut from a validated page is.

// decodeObject calls set with each key (without quotes) and raw value of
// the JSON object raw, in order; false when raw is not an object or set
// gives up.
func decodeObject(raw []byte, set func(key, v []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		kend := skipValue(raw, i)
		key := raw[i+1 : kend-1]
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if !set(key, raw[i:vend]) {
			return false
		}
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return i < len(raw) && raw[i] == '}'
}

// otherKey reports whether encoding/json ignores key, one that is none of
// names exactly: false when it might match one of them ignoring case.
func otherKey(key []byte, names []string) bool {
	if bytes.ContainsFunc(key, func(r rune) bool { return r >= utf8.RuneSelf || r == '\\' }) {
		return false
	}
	for _, k := range names {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return true
}

// setString stores the JSON string v in dst as encoding/json does (null
// leaves dst as it is); false for another type, an escape or invalid UTF-8.
func setString(dst *string, v []byte) bool {
	switch {
	case string(v) == "null":
		return true
	case !escapeFree(v):
		return false
	}
	*dst = string(v[1 : len(v)-1])
	return true
}

// decodeTeamMember decodes a team member record, a flat object of strings.
func decodeTeamMember(raw []byte) (m TeamMember, ok bool) {
	ok = decodeObject(raw, m.set)
	return m, ok
}

// teamMemberKeys are TeamMember's JSON names.
var teamMemberKeys = []string{"uuid", "username", "full_name", "email", "role", "expiration_time", "offering_user_username", "offering_user_state"}

// set stores the JSON value v of key in m; false when it cannot be sure to
// do what encoding/json does.
func (m *TeamMember) set(key, v []byte) bool {
	switch string(key) {
	case "uuid":
		return m.UUID.UnmarshalJSON(v) == nil
	case "username":
		return setString(&m.Username, v)
	case "full_name":
		return setString(&m.FullName, v)
	case "email":
		return setString(&m.Email, v)
	case "role":
		return setString(&m.Role, v)
	case "expiration_time":
		return setString(&m.ExpirationTime, v)
	case "offering_user_username":
		return setString(&m.OfferingUserUsername, v)
	case "offering_user_state":
		return setString(&m.OfferingUserState, v)
	}
	return otherKey(key, teamMemberKeys)
}

// decodeOfferingUser decodes an offering user record.
func decodeOfferingUser(raw []byte) (u OfferingUser, ok bool) {
	ok = decodeObject(raw, u.set)
	return u, ok
}

// offeringUserKeys are OfferingUser's JSON names.
var offeringUserKeys = []string{"uuid", "username", "state", "user_uuid", "user_username", "user_email", "user_full_name",
	"user_first_name", "user_last_name", "user_civil_number", "is_restricted"}

// set stores the JSON value v of key in u; false when it cannot be sure to
// do what encoding/json does.
func (u *OfferingUser) set(key, v []byte) bool {
	switch string(key) {
	case "uuid":
		return u.UUID.UnmarshalJSON(v) == nil
	case "user_uuid":
		return u.UserUUID.UnmarshalJSON(v) == nil
	case "is_restricted":
		return u.IsRestricted.UnmarshalJSON(v) == nil
	case "username":
		return setString(&u.Username, v)
	case "state":
		return setString(&u.State, v)
	case "user_username":
		return setString(&u.UserUsername, v)
	case "user_email":
		return setString(&u.UserEmail, v)
	case "user_full_name":
		return setString(&u.UserFullName, v)
	case "user_first_name":
		return setString(&u.UserFirstName, v)
	case "user_last_name":
		return setString(&u.UserLastName, v)
	case "user_civil_number":
		return setString(&u.UserCivilNumber, v)
	}
	return otherKey(key, offeringUserKeys)
}

// decodeResource decodes a resource record.
func decodeResource(raw []byte) (r Resource, ok bool) {
	ok = decodeObject(raw, r.set)
	return r, ok
}

// resourceKeys are Resource's JSON names.
var resourceKeys = []string{"uuid", "name", "slug", "backend_id", "state", "limits", "offering_uuid", "plan_uuid",
	"project_uuid", "project_name", "project_slug", "project_description", "customer_uuid", "customer_name",
	"customer_slug", "paused", "downscaled", "restrict_member_access", "end_date", "created", "backend_metadata",
	"last_sync", "offering_plugin_options"}

// set stores the JSON value v of key in r; false when it cannot be sure to
// do what encoding/json does. The fields that are not strings take their own
// UnmarshalJSON, as encoding/json calls it; the nested objects take their
// usual shape here and anything else json.Unmarshal into the field.
func (r *Resource) set(key, v []byte) bool {
	var uuid *UUID
	var flag *Flag
	switch string(key) {
	case "uuid":
		uuid = &r.UUID
	case "offering_uuid":
		uuid = &r.OfferingUUID
	case "plan_uuid":
		uuid = &r.PlanUUID
	case "project_uuid":
		uuid = &r.ProjectUUID
	case "customer_uuid":
		uuid = &r.CustomerUUID
	case "paused":
		flag = &r.Paused
	case "downscaled":
		flag = &r.Downscaled
	case "restrict_member_access":
		flag = &r.RestrictMemberAccess
	case "created":
		return r.Created.UnmarshalJSON(v) == nil
	case "limits":
		return setLimits(&r.Limits, v) || json.Unmarshal(v, &r.Limits) == nil
	case "backend_metadata":
		return setStrings(&r.BackendMetadata, v) || json.Unmarshal(v, &r.BackendMetadata) == nil
	case "offering_plugin_options":
		return setOptions(&r.OfferingPluginOptions, v) || json.Unmarshal(v, &r.OfferingPluginOptions) == nil
	default:
		return r.setString(key, v)
	}
	if uuid != nil {
		return uuid.UnmarshalJSON(v) == nil
	}
	return flag.UnmarshalJSON(v) == nil
}

// setString stores the string field key of r, or ignores another key.
func (r *Resource) setString(key, v []byte) bool {
	var dst *string
	switch string(key) {
	case "name":
		dst = &r.Name
	case "slug":
		dst = &r.Slug
	case "backend_id":
		dst = &r.BackendID
	case "state":
		dst = &r.State
	case "project_name":
		dst = &r.ProjectName
	case "project_slug":
		dst = &r.ProjectSlug
	case "project_description":
		dst = &r.ProjectDescription
	case "customer_name":
		dst = &r.CustomerName
	case "customer_slug":
		dst = &r.CustomerSlug
	case "end_date":
		dst = &r.EndDate
	case "last_sync":
		dst = &r.LastSync
	default:
		return otherKey(key, resourceKeys)
	}
	return setString(dst, v)
}

// The nested objects of a resource, decoded here in the shape the wire
// usually has them and left to json.Unmarshal otherwise. Each does what
// json.Unmarshal into the field does: null clears it, an object adds its
// keys to what the field already holds (a repeated key of the record
// merges). Each returns false, having changed nothing, for a value it does
// not handle; the caller then decodes it with json.Unmarshal.

// setLimits stores the object v of numbers and escape-free strings in dst.
func setLimits(dst *Limits, v []byte) bool {
	return setPlainMap(dst, v, func(x []byte) bool {
		return x[0] == '-' || (x[0] >= '0' && x[0] <= '9') || escapeFree(x)
	}, func(x []byte) Amount {
		if x[0] == '"' {
			return Amount(strings.TrimSpace(string(x[1 : len(x)-1])))
		}
		return Amount(x) // a number keeps its text, as json.Number does
	})
}

// setStrings stores the object v of escape-free strings in dst.
func setStrings(dst *map[string]any, v []byte) bool {
	return setPlainMap(dst, v, escapeFree, func(x []byte) any { return string(x[1 : len(x)-1]) })
}

// setPlainMap stores the JSON object v in the map dst when every key is
// escape-free and every value one accept takes, each converted by value.
func setPlainMap[M ~map[string]V, V any](dst *M, v []byte, accept func([]byte) bool, value func([]byte) V) bool {
	if string(v) == "null" {
		*dst = nil
		return true
	}
	n, ok := plainObject(v, accept)
	if !ok {
		return false
	}
	if *dst == nil {
		*dst = make(M, n)
	}
	return decodeObject(v, func(k, x []byte) bool {
		(*dst)[string(k)] = value(x)
		return true
	})
}

// pluginOptionKeys are PluginOptions' JSON names.
var pluginOptionKeys = []string{"enable_membership_sync_status"}

// setOptions stores the plugin options object v in dst.
func setOptions(dst **PluginOptions, v []byte) bool {
	if string(v) == "null" {
		*dst = nil
		return true
	}
	var o PluginOptions
	if *dst != nil {
		o = **dst
	}
	if !decodeObject(v, func(key, v []byte) bool {
		if string(key) == pluginOptionKeys[0] {
			return o.EnableMembershipSyncStatus.UnmarshalJSON(v) == nil
		}
		return otherKey(key, pluginOptionKeys)
	}) {
		return false
	}
	if *dst == nil {
		*dst = new(PluginOptions)
	}
	**dst = o
	return true
}

// plainObject reports whether v is a JSON object whose keys are all
// escape-free valid strings and whose values value all accepts, and counts
// its keys.
func plainObject(v []byte, value func([]byte) bool) (n int, ok bool) {
	ok = decodeObject(v, func(key, x []byte) bool {
		n++
		return bytes.IndexByte(key, '\\') < 0 && utf8.Valid(key) && value(x)
	})
	return n, ok
}

// escapeFree reports whether the JSON value x is a string without escapes
// and of valid UTF-8.
func escapeFree(x []byte) bool {
	return len(x) >= 2 && x[0] == '"' && bytes.IndexByte(x, '\\') < 0 && utf8.Valid(x)
}
