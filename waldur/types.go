// Package waldur holds the Waldur marketplace data this tool consumes (resources,
// orders, teams, offering users), a client that reads it from the Waldur REST API,
// and the snapshot format that records it for offline rendering.
package waldur

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UUID is a Waldur UUID in its canonical wire form: 32 lowercase hex characters.
// It decodes from the dashed form too, so snapshots and configs may use either.
type UUID string

// ParseUUID normalises s (with or without dashes, any case) to a UUID.
func ParseUUID(s string) (UUID, error) {
	if lowerHex32(s) {
		return UUID(s), nil // already canonical, as Waldur sends them
	}
	h := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	if len(h) != 32 {
		return "", fmt.Errorf("invalid uuid %q: want 32 hex digits", s)
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", fmt.Errorf("invalid uuid %q: %q is not a hex digit", s, c)
		}
	}
	return UUID(h), nil
}

// lowerHex32 reports whether s is 32 lowercase hex digits.
func lowerHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Hex returns the 32-hex form.
func (u UUID) Hex() string { return string(u) }

// Dashed returns the canonical 8-4-4-4-12 form, or the raw value when u is not a
// well-formed UUID.
func (u UUID) Dashed() string {
	s := string(u)
	if len(s) != 32 {
		return s
	}
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}

// UnmarshalJSON accepts null, "" and both UUID spellings. A malformed value is kept
// as given (lower-cased, dashes removed) so that one bad record can be reported by
// whoever uses it instead of failing the decoding of a whole page.
func (u *UUID) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*u = ""
		return nil
	}
	s, plain := plainString(b)
	if !plain {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("uuid: %w", err)
		}
	}
	if s == "" {
		*u = ""
		return nil
	}
	p, err := ParseUUID(s)
	if err != nil {
		*u = UUID(strings.ToLower(strings.ReplaceAll(s, "-", "")))
		return nil
	}
	*u = p
	return nil
}

// plainString is the JSON string b when it is one of printable ASCII
// without escapes, as every UUID on the wire is; ok is false otherwise and
// the caller decodes b with encoding/json.
func plainString(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	for _, c := range in {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(in), true
}

// Valid reports whether u is 32 lowercase hex digits.
// (ParseUUID accepts upper case too, and so does Valid.)
func (u UUID) Valid() bool {
	if len(u) != 32 {
		return false
	}
	for i := range len(u) {
		if c := u[i]; (c < '0' || c > '9') && (c|0x20 < 'a' || c|0x20 > 'f') {
			return false
		}
	}
	return true
}

// Amount is a numeric value that Waldur may send as a JSON number or as a string
// ("4", "57.25"). The text is kept as received so that a bad value ("abc", "-1")
// reaches the renderer, which reports it per resource, instead of failing decoding.
type Amount string

// UnmarshalJSON accepts numbers, strings and null.
func (a *Amount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*a = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("amount: %w", err)
		}
		*a = Amount(strings.TrimSpace(s))
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("amount: %w", err)
		}
		*a = Amount(n.String())
	}
	return nil
}

// MarshalJSON writes the amount as a JSON number when it is one, else as a string,
// so that a snapshot round-trips exactly what the API sent.
func (a Amount) MarshalJSON() ([]byte, error) {
	if a == "" {
		return []byte("null"), nil
	}
	if c := a[0]; (c == '-' || (c >= '0' && c <= '9')) && json.Valid([]byte(a)) {
		return []byte(a), nil
	}
	return json.Marshal(string(a))
}

// Float parses the amount.
func (a Amount) Float() (float64, error) {
	f, err := strconv.ParseFloat(string(a), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number", string(a))
	}
	return f, nil
}

// Int parses the amount as a whole number; "4.0" is accepted, "4.5" is not.
func (a Amount) Int() (int64, error) {
	if i, err := strconv.ParseInt(string(a), 10, 64); err == nil {
		return i, nil
	}
	f, err := a.Float()
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("%q is not a whole number", string(a))
	}
	return int64(f), nil
}

// Limits maps a component type to its amount.
type Limits map[string]Amount

// Flag is a boolean that also accepts the strings "true"/"false" and null.
type Flag bool

// UnmarshalJSON accepts true, false, null, "true", "false".
func (f *Flag) UnmarshalJSON(b []byte) error {
	switch strings.Trim(strings.ToLower(string(bytes.TrimSpace(b))), `"`) {
	case "true", "1":
		*f = true
	case "false", "0", "null", "":
		*f = false
	default:
		return fmt.Errorf("flag: %s is not a boolean", b)
	}
	return nil
}

// Resource states as Waldur spells them.
const (
	ResourceCreating    = "Creating"
	ResourceOK          = "OK"
	ResourceErred       = "Erred"
	ResourceUpdating    = "Updating"
	ResourceTerminating = "Terminating"
	ResourceTerminated  = "Terminated"
)

// Order states and types as Waldur spells them.
const (
	OrderPendingProvider = "pending-provider"
	OrderExecuting       = "executing"
	OrderDone            = "done"
	OrderErred           = "erred"

	OrderCreate    = "Create"
	OrderUpdate    = "Update"
	OrderTerminate = "Terminate"
	OrderRestore   = "Restore"
)

// Resource is a marketplace provider resource (GET /api/marketplace-provider-resources/).
type Resource struct {
	UUID                 UUID      `json:"uuid"`
	Name                 string    `json:"name"`
	Slug                 string    `json:"slug"`
	BackendID            string    `json:"backend_id"`
	State                string    `json:"state"`
	Limits               Limits    `json:"limits,omitempty"`
	OfferingUUID         UUID      `json:"offering_uuid"`
	PlanUUID             UUID      `json:"plan_uuid,omitempty"`
	ProjectUUID          UUID      `json:"project_uuid"`
	ProjectName          string    `json:"project_name"`
	ProjectSlug          string    `json:"project_slug"`
	ProjectDescription   string    `json:"project_description,omitempty"`
	CustomerUUID         UUID      `json:"customer_uuid"`
	CustomerName         string    `json:"customer_name"`
	CustomerSlug         string    `json:"customer_slug"`
	Paused               Flag      `json:"paused"`
	Downscaled           Flag      `json:"downscaled"`
	RestrictMemberAccess Flag      `json:"restrict_member_access"`
	EndDate              string    `json:"end_date,omitempty"`
	Created              time.Time `json:"created"`
	// BackendMetadata is what the provider last recorded about where the
	// resource lives (set_backend_metadata); LastSync when it last reported a
	// successful sync (refresh_last_sync). Both are compared before writing,
	// so a run that changes nothing writes nothing.
	BackendMetadata map[string]any `json:"backend_metadata,omitempty"`
	LastSync        string         `json:"last_sync,omitempty"`
	// OfferingPluginOptions are the offering's plugin options, of which only
	// enable_membership_sync_status is read.
	OfferingPluginOptions *PluginOptions `json:"offering_plugin_options,omitempty"`
}

// PluginOptions are the plugin options of an offering the tool reads.
type PluginOptions struct {
	// EnableMembershipSyncStatus asks the provider to report each member's
	// sync state per resource (set_membership_sync_statuses, Waldur 8.1.0+).
	EnableMembershipSyncStatus Flag `json:"enable_membership_sync_status,omitempty"`
}

// Order is a marketplace order (GET /api/marketplace-orders/).
type Order struct {
	UUID                    UUID      `json:"uuid"`
	Type                    string    `json:"type"`
	State                   string    `json:"state"`
	MarketplaceResourceUUID UUID      `json:"marketplace_resource_uuid"`
	ResourceName            string    `json:"resource_name,omitempty"`
	ProjectSlug             string    `json:"project_slug,omitempty"`
	Limits                  Limits    `json:"limits,omitempty"`
	PlanUUID                UUID      `json:"plan_uuid,omitempty"`
	Created                 time.Time `json:"created"`
}

// TeamMember is one entry of GET /api/marketplace-provider-resources/{uuid}/team/.
type TeamMember struct {
	UUID                 UUID   `json:"uuid"`
	Username             string `json:"username"`
	FullName             string `json:"full_name"`
	Email                string `json:"email,omitempty"`
	Role                 string `json:"role"`
	ExpirationTime       string `json:"expiration_time,omitempty"`
	OfferingUserUsername string `json:"offering_user_username,omitempty"`
	OfferingUserState    string `json:"offering_user_state,omitempty"`
}

// OfferingUser is one entry of GET /api/marketplace-offering-users/.
type OfferingUser struct {
	UUID            UUID   `json:"uuid"`
	Username        string `json:"username,omitempty"`
	State           string `json:"state,omitempty"`
	UserUUID        UUID   `json:"user_uuid"`
	UserUsername    string `json:"user_username,omitempty"`
	UserEmail       string `json:"user_email,omitempty"`
	UserFullName    string `json:"user_full_name,omitempty"`
	UserFirstName   string `json:"user_first_name,omitempty"`
	UserLastName    string `json:"user_last_name,omitempty"`
	UserCivilNumber string `json:"user_civil_number,omitempty"`
	IsRestricted    Flag   `json:"is_restricted"`
}

// ServiceAccount is one entry of GET
// /api/marketplace-provider-offerings/{uuid}/list_project_service_accounts/:
// a project's service account (state OK, Closed or Erred).
type ServiceAccount struct {
	UUID        UUID   `json:"uuid"`
	State       string `json:"state"`
	ProjectUUID UUID   `json:"project_uuid"`
	Username    string `json:"username,omitempty"`
	Email       string `json:"email,omitempty"`
}

// CourseAccount is one entry of GET
// /api/marketplace-provider-offerings/{uuid}/list_course_accounts/: an
// account of a course project (state OK, Closed, Erred or Pending). Waldur
// sends a null username for an account without one; it decodes as "".
type CourseAccount struct {
	UUID        UUID   `json:"uuid"`
	State       string `json:"state"`
	ProjectUUID UUID   `json:"project_uuid"`
	Username    string `json:"username,omitempty"`
	Email       string `json:"email,omitempty"`
}

// AccountOK is the state of a service or course account that is in use; the
// other states (Closed, Erred, Pending) give no access.
const AccountOK = "OK"

// Project roles, normalised to Waldur's legacy short names.
const (
	RoleAdmin   = "admin"
	RoleManager = "manager"
	RoleMember  = "member"
)

// NormalizeRole maps both spellings Waldur uses for a role (PROJECT.MANAGER or
// manager; CUSTOMER.OWNER or owner, …) to the lower-case short name. Unknown
// names are lower-cased and returned as they are, so custom role mappings can
// still match them.
func NormalizeRole(role string) string {
	r := strings.ToLower(strings.TrimSpace(role))
	switch r {
	case "project.admin":
		return RoleAdmin
	case "project.manager":
		return RoleManager
	case "project.member":
		return RoleMember
	case "customer.owner":
		return "owner"
	case "customer.manager":
		return "service_manager"
	case "customer.support":
		return "support"
	}
	return r
}

// OfferingState is everything the renderer needs about one offering.
type OfferingState struct {
	// Name is the offering's name in the config file; it keys the snapshot.
	Name         string `json:"name"`
	OfferingUUID UUID   `json:"offering_uuid"`
	// Resources in states Creating, OK, Erred, Updating and Terminating.
	Resources []Resource `json:"resources"`
	// Orders in states pending-provider and executing.
	Orders []Order `json:"orders"`
	// Teams maps a project UUID to the team of that project's resources.
	Teams map[UUID][]TeamMember `json:"teams"`
	// OfferingUsers of the offering (is_restricted=false).
	OfferingUsers []OfferingUser `json:"offering_users"`
	// ServiceAccounts are the project service accounts of the offering, in
	// every state, sorted by uuid.
	ServiceAccounts []ServiceAccount `json:"service_accounts,omitempty"`
	// CourseAccounts are the course accounts of the offering, in every
	// state, sorted by uuid.
	CourseAccounts []CourseAccount `json:"course_accounts,omitempty"`
	// Terminated lists, sorted, the resources of the offering in state
	// Terminated (modified within the client's TerminatedWindow): their
	// tenants are positively terminated, not vanished. A resource that is
	// also in Resources (its state changed between the two reads) is left
	// out here.
	Terminated []UUID `json:"terminated,omitempty"`
	// PlanQuotas maps a plan UUID to its quotas, read only for the plans of
	// pending-provider and executing Update orders that carry no limits (a
	// plan switch): such an order is rendered with its plan's quotas. A plan
	// that answered 404 is absent.
	PlanQuotas map[UUID]Limits `json:"plan_quotas,omitempty"`
	// BadRecords are the records Waldur sent that could not be used; they
	// were left out of the lists above. A bad resource with a valid UUID
	// must keep its tenant exactly as it is.
	BadRecords []BadRecord `json:"bad_records,omitempty"`
}

// IsTerminated reports whether the resource is listed in Terminated.
func (s *OfferingState) IsTerminated(id UUID) bool {
	_, ok := slices.BinarySearch(s.Terminated, id)
	return ok
}

// Kinds of BadRecord.
const (
	RecordResource     = "resource"
	RecordOrder        = "order"
	RecordOfferingUser = "offering_user"
	RecordTeamMember   = "team_member"
	// RecordServiceAccount is a project service account.
	RecordServiceAccount = "service_account"
	// RecordCourseAccount is a course account.
	RecordCourseAccount = "course_account"
)

// BadRecord is one record of a listing that was skipped: it did not decode, a
// uuid in it is malformed, or what belongs to it could not be read (the team
// of a resource deleted between listing and reading). The rest of the
// offering is read as usual.
type BadRecord struct {
	// Kind is RecordResource, RecordOrder, RecordOfferingUser, RecordTeamMember,
	// RecordServiceAccount or RecordCourseAccount.
	Kind string `json:"kind"`
	// UUID is the record's own uuid when it is a valid one, else empty.
	UUID UUID `json:"uuid,omitempty"`
	// Resource is, for a team member, the resource whose team listed it.
	Resource UUID `json:"resource,omitempty"`
	// Key is the JSON key at fault ("uuid", "project_uuid", "created", "team", …).
	Key string `json:"key"`
	// Reason says what is wrong, naming the key.
	Reason string `json:"reason"`
}

// String describes the record.
func (b BadRecord) String() string {
	s := b.Kind
	if b.UUID != "" {
		s += " " + string(b.UUID)
	}
	if b.Resource != "" {
		s += " of resource " + string(b.Resource)
	}
	return s + ": " + b.Reason
}

// State is the Waldur state of every configured offering.
type State struct {
	Offerings []OfferingState `json:"offerings"`
	// Unread maps the config name of every offering that could not be read
	// to the reason. Such an offering has no OfferingState: its tenants are
	// kept exactly as they are and none of its orders move. Never recorded
	// in a snapshot.
	Unread map[string]string `json:"-"`
}

// Offering returns the state recorded for the named offering.
func (s *State) Offering(name string) (*OfferingState, bool) {
	for i := range s.Offerings {
		if s.Offerings[i].Name == name {
			return &s.Offerings[i], true
		}
	}
	return nil, false
}

// Only returns a copy of s in which every offering holds only the resources
// ids names; nil for a nil s.
func (s *State) Only(ids []UUID) *State {
	if s == nil {
		return nil
	}
	out := *s
	out.Offerings = make([]OfferingState, len(s.Offerings))
	for i, o := range s.Offerings {
		o.Resources = slices.DeleteFunc(slices.Clone(o.Resources), func(r Resource) bool { return !slices.Contains(ids, r.UUID) })
		out.Offerings[i] = o
	}
	return &out
}
