package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// Resource statuses.
const (
	StatusActive     = "active"
	StatusPaused     = "paused"
	StatusDownscaled = "downscaled"
)

// offeringInput indexes one offering's state for rendering.
type offeringInput struct {
	o      *config.Offering
	st     *waldur.OfferingState
	orders map[waldur.UUID][]*waldur.Order
	users  map[string]*waldur.OfferingUser
	// updates are the limits of each resource's newest executing Update
	// order that has limits (its own, or its plan's quotas); held the
	// executing Update orders that have neither, with the reason.
	updates map[waldur.UUID]waldur.Limits
	held    map[waldur.UUID]string
	// holds are the quota values kept while usage is above a cut.
	holds QuotaHolds
}

func newOfferingInput(o *config.Offering, st *waldur.OfferingState) *offeringInput {
	in := &offeringInput{o: o, st: st, orders: map[waldur.UUID][]*waldur.Order{}, users: map[string]*waldur.OfferingUser{}}
	for i := range st.Orders {
		ord := &st.Orders[i]
		in.orders[ord.MarketplaceResourceUUID] = append(in.orders[ord.MarketplaceResourceUUID], ord)
	}
	for _, l := range in.orders {
		slices.SortFunc(l, func(a, b *waldur.Order) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID)) })
	}
	for i := range st.OfferingUsers {
		u := &st.OfferingUsers[i]
		if u.Username != "" {
			in.users[u.Username] = u
		}
	}
	in.updates, in.held = UpdateLimits(st.Orders, st.PlanQuotas)
	return in
}

// UpdateLimits returns, per resource, the limits its newest executing Update
// order asks for, and the executing Update orders that cannot be fulfilled,
// with the reason. An Update order carries the complete new limit set; one
// without limits (a plan switch) asks for its plan's quotas, as the Python
// site agent reads them (planQuotas, by plan UUID, see
// waldur.OfferingState.PlanQuotas). An order with neither is held: it is not
// fulfilled by rendering (the resource keeps the limits it has without that
// order) and stays executing, rather than being finished with old limits.
func UpdateLimits(orders []waldur.Order, planQuotas map[waldur.UUID]waldur.Limits) (map[waldur.UUID]waldur.Limits, map[waldur.UUID]string) {
	sorted := make([]*waldur.Order, 0, len(orders))
	for i := range orders {
		if o := &orders[i]; o.State == waldur.OrderExecuting && o.Type == waldur.OrderUpdate {
			sorted = append(sorted, o)
		}
	}
	slices.SortStableFunc(sorted, func(a, b *waldur.Order) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID)) })
	updates := map[waldur.UUID]waldur.Limits{}
	held := map[waldur.UUID]string{}
	for _, o := range sorted {
		if len(o.Limits) > 0 {
			updates[o.MarketplaceResourceUUID] = o.Limits
			continue
		}
		q, read := planQuotas[o.PlanUUID]
		switch {
		case o.PlanUUID == "":
			held[o.UUID] = "the update order has neither limits nor a plan; it stays executing until Waldur sets its limits"
		case !o.PlanUUID.Valid():
			held[o.UUID] = fmt.Sprintf("the update order has no limits and its plan_uuid %q is not a UUID; it stays executing", o.PlanUUID)
		case !read:
			held[o.UUID] = fmt.Sprintf("the update order has no limits and the quotas of its plan %s were not read (the plan is missing in Waldur or the state predates plan reading); it stays executing", o.PlanUUID)
		case len(q) == 0:
			held[o.UUID] = fmt.Sprintf("the update order has no limits and its plan %s has no quotas; it stays executing", o.PlanUUID)
		default:
			updates[o.MarketplaceResourceUUID] = q
		}
	}
	return updates, held
}

// lifecycle decides whether a resource is rendered and which executing orders the
// rendering fulfils. Terminating and Terminated resources, and resources with an
// executing Terminate order, are absent; a Creating resource is rendered once its
// Create (or Restore) order is executing.
func (in *offeringInput) lifecycle(r *waldur.Resource) (orders []waldur.UUID, render bool) {
	approved := false
	for _, o := range in.orders[r.UUID] {
		if o.State != waldur.OrderExecuting {
			continue
		}
		switch o.Type {
		case waldur.OrderCreate, waldur.OrderRestore:
			approved = true
			orders = append(orders, o.UUID)
		case waldur.OrderUpdate:
			if _, held := in.held[o.UUID]; !held {
				orders = append(orders, o.UUID)
			}
		case waldur.OrderTerminate:
			return nil, false
		}
	}
	switch r.State {
	case waldur.ResourceOK, waldur.ResourceErred, waldur.ResourceUpdating:
		return orders, true
	case waldur.ResourceCreating:
		return orders, approved
	}
	return nil, false
}

// terminations records the resources being terminated and their Terminate orders.
func (in *offeringInput) terminations(into map[waldur.UUID][]waldur.UUID) {
	for i := range in.st.Resources {
		r := &in.st.Resources[i]
		if _, seen := into[r.UUID]; !seen && (r.State == waldur.ResourceTerminating || r.State == waldur.ResourceTerminated) {
			into[r.UUID] = nil
		}
	}
	for _, o := range in.st.Orders {
		if o.Type == waldur.OrderTerminate && (o.State == waldur.OrderPendingProvider || o.State == waldur.OrderExecuting) {
			into[o.MarketplaceResourceUUID] = append(into[o.MarketplaceResourceUUID], o.UUID)
		}
	}
}

// updateLimits returns the limits of the newest executing Update order that
// can be fulfilled, if any (see UpdateLimits).
func (in *offeringInput) updateLimits(r *waldur.Resource) waldur.Limits {
	return in.updates[r.UUID]
}

// tenantData builds the profile-independent part of the template data, then lets
// the profile fill in the rest. Any error leaves the resource out.
func (in *offeringInput) tenantData(p profile, r *waldur.Resource) (*TenantData, error) {
	if !r.UUID.Valid() {
		return nil, changeset.Because(changeset.CauseInvalidName, fmt.Errorf("resource uuid %q is not a UUID", r.UUID))
	}
	d := &TenantData{
		Offering: OfferingData{Name: in.o.Name, UUID: in.o.WaldurOfferingUUID, BackendType: in.o.BackendType},
		Resource: ResourceData{
			UUID: string(r.UUID), UUIDDashed: r.UUID.Dashed(), Name: r.Name, Slug: r.Slug,
			State: r.State, BackendID: r.BackendID, Status: status(r),
		},
		Project:  ScopeData{UUID: string(r.ProjectUUID), UUIDDashed: r.ProjectUUID.Dashed(), Name: r.ProjectName, Slug: r.ProjectSlug, Description: r.ProjectDescription},
		Customer: ScopeData{UUID: string(r.CustomerUUID), UUIDDashed: r.CustomerUUID.Dashed(), Name: r.CustomerName, Slug: r.CustomerSlug},
	}
	var err error
	if d.Resource.Limits, err = EffectiveLimits(in.o, r, in.updateLimits(r)); err != nil {
		return nil, err
	}
	d.hold = in.holds[r.UUID].Keep
	c := in.o.Settings.Common()
	d.NamespaceLabels = nilIfEmpty(c.NamespaceLabels)
	d.NamespaceAnnotations = nilIfEmpty(c.NamespaceAnnotations)
	if err := p.fill(in, r, d); err != nil {
		return nil, err
	}
	d.Namespace = d.Name
	return d, nil
}

func status(r *waldur.Resource) string {
	switch {
	case bool(r.Paused):
		return StatusPaused
	case bool(r.Downscaled):
		return StatusDownscaled
	}
	return StatusActive
}

// EffectiveLimits are the limits a resource is rendered with: update (the
// limits of its newest executing Update order, see UpdateLimits; nil for none) or else its own,
// parsed, with the status rules applied: paused gives every component its
// paused_limits value (default 0), downscaled its downscaled_limits value
// (default 0 for types not listed). The usage report bills limit-based
// components with the same values.
func EffectiveLimits(o *config.Offering, r *waldur.Resource, update waldur.Limits) (map[string]float64, error) {
	l := r.Limits
	if update != nil {
		l = update
	}
	out := make(map[string]float64, len(l))
	var bad []string
	for _, k := range sortedKeys(l) {
		v, err := l[k].Float()
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s=%q is not a number", k, string(l[k])))
		case v < 0:
			bad = append(bad, fmt.Sprintf("%s=%s is negative", k, l[k]))
		default:
			if err := exactAmount(string(l[k]), v); err != nil {
				bad = append(bad, fmt.Sprintf("%s=%v", k, err))
			}
		}
		out[k] = v
	}
	if len(bad) > 0 {
		return nil, changeset.Because(changeset.CauseInvalidLimits, fmt.Errorf("invalid resource limits: %s", strings.Join(bad, ", ")))
	}
	c := o.Settings.Common()
	var set map[string]int64
	switch status(r) {
	case StatusPaused:
		set = c.PausedLimits
	case StatusDownscaled:
		set = c.DownscaledLimits
	default:
		return out, nil
	}
	for k := range out {
		out[k] = float64(set[o.ComponentType(k)])
	}
	return out, nil
}

// members returns the resource's team members that have an offering username,
// with their normalised Waldur role, and the project's service and course
// accounts in state OK (see accountMembers), sorted by username. A resource
// with restrict_member_access has none. A member whose offering username Kubernetes
// reserves (see reservedName) is left out and recorded in d.
func (in *offeringInput) members(d *TenantData, r *waldur.Resource, role func(waldurRole string) string) []Member {
	if r.RestrictMemberAccess {
		return []Member{}
	}
	team := in.st.Teams[r.ProjectUUID]
	out := make([]Member, 0, len(team))
	for _, m := range team {
		if m.OfferingUserUsername == "" || inactiveUserStates[m.OfferingUserState] {
			continue
		}
		if why := reservedName(m.OfferingUserUsername); why != "" {
			d.exclude(m.OfferingUserUsername, "offering username: "+why)
			continue
		}
		wr := waldur.NormalizeRole(m.Role)
		email := m.Email
		if u, ok := in.users[m.OfferingUserUsername]; ok && u.UserEmail != "" {
			email = u.UserEmail
		}
		out = append(out, Member{Username: m.OfferingUserUsername, Email: email, WaldurRole: wr, Role: role(wr)})
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Username, b.Username) })
	out = slices.CompactFunc(out, func(a, b Member) bool { return a.Username == b.Username })
	return in.accountMembers(d, r, out, role)
}

// Waldur roles given to the accounts of a project that are not team members.
const (
	// RoleServiceAccount is the Waldur role of a project service account.
	RoleServiceAccount = "service_account"
	// RoleCourseAccount is the Waldur role of a course account.
	RoleCourseAccount = "course_account"
)

// accountMembers adds to the team members the project service accounts and
// course accounts of the resource's project in state OK, under the Waldur
// roles RoleServiceAccount and RoleCourseAccount, by their username. An account
// whose username is already a member (a team member, or an account listed
// before it: service accounts first, each kind by uuid) is not added again;
// one without a username, or with one that Kubernetes reserves, is left out
// (the latter recorded in d). The result is sorted by username.
func (in *offeringInput) accountMembers(d *TenantData, r *waldur.Resource, team []Member, role func(string) string) []Member {
	type account struct{ username, email, role string }
	var accounts []account
	for _, a := range in.st.ServiceAccounts {
		if a.State == waldur.AccountOK && a.ProjectUUID == r.ProjectUUID {
			accounts = append(accounts, account{a.Username, a.Email, RoleServiceAccount})
		}
	}
	for _, a := range in.st.CourseAccounts {
		if a.State == waldur.AccountOK && a.ProjectUUID == r.ProjectUUID {
			accounts = append(accounts, account{a.Username, a.Email, RoleCourseAccount})
		}
	}
	if len(accounts) == 0 {
		return team
	}
	seen := map[string]bool{}
	for _, m := range team {
		seen[m.Username] = true
	}
	out := team
	for _, a := range accounts {
		if a.username == "" || seen[a.username] {
			continue
		}
		if why := reservedName(a.username); why != "" {
			d.exclude(a.username, strings.ReplaceAll(a.role, "_", " ")+" username: "+why)
			continue
		}
		seen[a.username] = true
		out = append(out, Member{Username: a.username, Email: a.email, WaldurRole: a.role, Role: role(a.role)})
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.Username, b.Username) })
	return out
}

// inactiveUserStates are offering-user states whose account is going or gone.
var inactiveUserStates = map[string]bool{
	"Requested deletion": true, "Deleting": true, "Deleted": true, "Error deleting": true,
}

// identity returns the attribute of a member named by field, "" when unknown.
func (in *offeringInput) identity(m Member, field string) string {
	u := in.users[m.Username]
	switch field {
	case "username":
		return m.Username
	case "email":
		return m.Email
	}
	if u == nil {
		return ""
	}
	switch field {
	case "civil_number":
		return u.UserCivilNumber
	case "full_name":
		return u.UserFullName
	case "first_name":
		return u.UserFirstName
	case "last_name":
		return u.UserLastName
	}
	return ""
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// reservedName says why name must never become a Kubernetes user or group
// (an RBAC subject, a ManagedNamespace user, a Keycloak member whose name the
// cluster sees), "" when it may. Kubernetes reserves the system: prefix for its
// own identities (system:anonymous, system:masters, system:serviceaccount:…,
// system:authenticated), OpenShift the kube: prefix (kube:admin); both are
// matched without regard to case. Empty names, names with surrounding white
// space and names with control or invisible characters are refused too: they
// cannot be told apart from other names when read.
func reservedName(name string) string {
	if printableASCII(name) {
		return reservedASCII(name)
	}
	return reservedUnicode(name)
}

// reservedUnicode is reservedName for any name.
func reservedUnicode(name string) string {
	lower := strings.ToLower(name)
	switch {
	case strings.TrimSpace(name) == "":
		return "the name is empty or only white space"
	case !utf8.ValidString(name):
		return "the name is not valid UTF-8"
	case strings.IndexFunc(name, invisible) >= 0:
		return "the name contains a control or invisible character"
	case strings.TrimSpace(name) != name:
		return "the name begins or ends with white space"
	case strings.HasPrefix(lower, "system:"):
		return "the name begins with system:, which Kubernetes reserves for its own users and groups"
	case strings.HasPrefix(lower, "kube:"):
		return "the name begins with kube:, which OpenShift reserves for its own users"
	}
	return ""
}

// printableASCII reports whether name is non-empty and of the bytes 0x20-0x7e
// only: no control, format or separator character, valid UTF-8.
func printableASCII(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return name != ""
}

// reservedASCII is reservedName for a printable ASCII name, whose only white
// space is the space, without a rune scan or a lower-cased copy.
func reservedASCII(name string) string {
	switch {
	case strings.Trim(name, " ") == "":
		return "the name is empty or only white space"
	case name[0] == ' ' || name[len(name)-1] == ' ':
		return "the name begins or ends with white space"
	case hasPrefixFold(name, "system:"):
		return "the name begins with system:, which Kubernetes reserves for its own users and groups"
	case hasPrefixFold(name, "kube:"):
		return "the name begins with kube:, which OpenShift reserves for its own users"
	}
	return ""
}

// hasPrefixFold reports whether the ASCII name begins with the lower-case
// ASCII prefix, ignoring case.
func hasPrefixFold(name, prefix string) bool {
	if len(name) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// invisible reports control, format (zero-width, bidi) and line or paragraph
// separator characters.
func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) || r == utf8.RuneError
}
