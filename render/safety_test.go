package render

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/waldur"
)

// reservedTeam is alice (fine) and one member of every kind of name
// Kubernetes treats specially.
func reservedTeam() (ok []string, reserved []waldur.TeamMember) {
	names := []string{
		"system:anonymous", "system:serviceaccount:kube-system:default", "System:Masters", "system:authenticated",
		"kube:admin", "   ", "bob\x00", "eve\u202egnp", "tab\tname", " padded", "carol\n",
	}
	for i, n := range names {
		m := member("x", "PROJECT.MANAGER")
		m.UUID = waldur.UUID(strings.Replace(string(resUUID(100+i)), "a", "e", 1))
		m.OfferingUserUsername = n
		m.Username = n
		reserved = append(reserved, m)
	}
	return []string{"alice"}, reserved
}

// TestReservedNamesNeverGranted: a member whose offering username Kubernetes
// reserves is left out of every subject, user list and Keycloak group, and
// reported with the tenant and the user named; the rest of the tenant renders.
func TestReservedNamesNeverGranted(t *testing.T) {
	tests := []struct{ backend, settings, extra string }{
		{"k8s-ut-namespace", "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}\nsync_users_to_cr: true\ncr_user_identity_field: username\n", ""},
		{"namespace", "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}\n", ""},
		{"okd", "", ""},
		{"rancher", "cluster_id: c-m-1\nkeycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}\n", ""},
	}
	_, reserved := reservedTeam()
	team := append([]waldur.TeamMember{member("alice", "PROJECT.MANAGER")}, reserved...)
	for _, tt := range tests {
		t.Run(tt.backend, func(t *testing.T) {
			r := resource(1, "team", limits("cpu", 1))
			res := mustRender(t, mustConfig(t, tt.backend, tt.settings, tt.extra), state([]waldur.Resource{r}, nil, team...))
			if len(res.Tenants) == 0 || len(res.Skipped) > 0 {
				t.Fatalf("tenant not rendered: %v", res.Skipped)
			}
			stream := string(res.Stream())
			inGroup := false
			for _, g := range res.Groups {
				inGroup = inGroup || slices.Contains(g.Members, "alice")
			}
			if !strings.Contains(stream, "alice") && !inGroup {
				t.Errorf("alice is missing from the tenant and its groups:\n%s", stream)
			}
			for _, m := range reserved {
				name := m.OfferingUserUsername
				if strings.TrimSpace(name) != "" && strings.Contains(strings.ToLower(stream), strings.ToLower(strings.TrimSpace(name))) {
					t.Errorf("%q is rendered:\n%s", name, stream)
				}
				for _, g := range res.Groups {
					for _, gm := range g.Members {
						if gm == name {
							t.Errorf("%q is a member of Keycloak group %s", name, g.Path())
						}
					}
				}
				found := false
				for _, e := range res.Changes.ByAction(changeset.Skip) {
					if e.Kind == "Member" && e.Resource == string(r.UUID) && strings.Contains(e.Subject, strconv.Quote(name)) &&
						strings.Contains(e.Reason, "left out of tenant ") {
						found = true
					}
				}
				if !found {
					t.Errorf("no member skip entry for %q: %v", name, res.Changes.Entries)
				}
			}
		})
	}
}

// TestReservedIdentityNeverBound: the identity bound as a RoleBinding user (here
// the email) is checked too, with the user prefix applied.
func TestReservedIdentityNeverBound(t *testing.T) {
	mallory := member("mallory", "PROJECT.MEMBER")
	mallory.Email = "system:masters"
	alice := member("alice", "PROJECT.MANAGER")
	st := state([]waldur.Resource{resource(1, "web", limits("cpu", 1))}, nil, alice, mallory)
	for _, prefix := range []string{"", "oidc:"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			res := mustRender(t, mustConfig(t, "namespace", "user_identity_field: email\nuser_prefix: '"+prefix+"'\n", ""), st)
			stream := string(res.Stream())
			bound := strings.Contains(stream, "name: "+prefix+"system:masters")
			var skip *changeset.Entry
			for _, e := range res.Changes.ByAction(changeset.Skip) {
				if e.Kind == "Member" && strings.Contains(e.Subject, `"mallory"`) {
					skip = &e
				}
			}
			if prefix == "" {
				if bound || skip == nil || !strings.Contains(skip.Reason, "system:") {
					t.Errorf("bound=%v skip=%v\n%s", bound, skip, stream)
				}
			} else if !bound || skip != nil {
				t.Errorf("with a prefix the subject %ssystem:masters is no reserved name: bound=%v skip=%v", prefix, bound, skip)
			}
			if !strings.Contains(stream, "name: "+prefix+"alice@example.com") {
				t.Errorf("alice not bound:\n%s", stream)
			}
		})
	}
}

// TestRancherProjectGroupsNeverShared: two Waldur projects of different
// customers with the same slug would get the same child group; the resource
// created later is skipped with both projects named, and resources of one
// project still share their group.
func TestRancherProjectGroupsNeverShared(t *testing.T) {
	first := resource(1, "first", limits("cpu", 1))
	sibling := resource(2, "sibling", limits("cpu", 1)) // same project as first
	other := resource(3, "other", limits("cpu", 1))
	other.ProjectUUID, other.CustomerUUID, other.CustomerSlug = project2UUID, "c0570000000040008000000000000002", "other-customer"
	st := state([]waldur.Resource{other, sibling, first}, nil, member("alice", "PROJECT.MANAGER"))
	st.Offerings[0].Teams[project2UUID] = []waldur.TeamMember{member("mallory", "PROJECT.MANAGER")}
	cfg := mustConfig(t, "rancher", "cluster_id: c-m-1\nkeycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}\n", "")
	res := mustRender(t, cfg, st)
	why, skipped := res.Skipped[other.UUID]
	if !skipped {
		t.Fatalf("the later project's resource was rendered; groups: %+v", res.Groups)
	}
	for _, want := range []string{string(projectUUID), string(project2UUID), string(first.UUID), "/c_cm1/project_test-project_workloads-manage"} {
		if !strings.Contains(why, want) {
			t.Errorf("reason %q does not name %s", why, want)
		}
	}
	if len(res.Skipped) != 1 || len(res.Tenants) != 4 {
		t.Errorf("skipped %v, %d tenants; want first and sibling rendered", res.Skipped, len(res.Tenants))
	}
	for _, g := range res.Groups {
		for _, m := range g.Members {
			if m == "mallory" {
				t.Errorf("mallory of the other project is in %s", g.Path())
			}
		}
	}
	// Distinct groups per project resolve it.
	cfg = mustConfig(t, "rancher", "cluster_id: c-m-1\nkeycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}\nkeycloak_groups: {child: 'p_{project_uuid}_{role}'}\n", "")
	if res := mustRender(t, cfg, st); len(res.Skipped) != 0 {
		t.Errorf("with {project_uuid} in the pattern: skipped %v", res.Skipped)
	}
}

// TestUnknownStateKeepsTenant: a resource whose state is missing or not one
// Waldur defines is never rendered as removed: its tenant stays byte for byte,
// it is in Kept and reported, and not counted as a termination even with a
// Terminate order.
func TestUnknownStateKeepsTenant(t *testing.T) {
	cfg := mustConfig(t, "k8s-ut-namespace", "", utComponents)
	a, b, c := resource(1, "a", utLimits()), resource(2, "b", utLimits()), resource(3, "c", utLimits())
	prev := mustRender(t, cfg, state([]waldur.Resource{a, b, c}, nil)).Tree(nil)
	// A hand edit in Git must survive too: kept means exactly as it is.
	for p := range prev {
		if strings.HasPrefix(p, "test-offering/cluster/waldur-b/managed") {
			prev[p] = append(prev[p], []byte("# edited in git\n")...)
		}
	}
	b.State, c.State = "", "Frozen"
	term := waldur.Order{UUID: "d0000000000040008000000000000003", Type: waldur.OrderTerminate, State: waldur.OrderExecuting, MarketplaceResourceUUID: c.UUID}
	res := mustRender(t, cfg, state([]waldur.Resource{a, b, c}, []waldur.Order{term}))
	for _, r := range []waldur.Resource{b, c} {
		why, kept := res.Kept[r.UUID]
		if !kept || !strings.Contains(why, "kept exactly as it is") {
			t.Errorf("%s (state %q): kept=%v %q", r.Slug, r.State, kept, why)
		}
		if _, ok := res.Terminations[r.UUID]; ok {
			t.Errorf("%s counted as a termination", r.Slug)
		}
		if _, ok := res.Skipped[r.UUID]; ok {
			t.Errorf("%s in Skipped: kept is its own outcome", r.Slug)
		}
	}
	next := res.Tree(prev)
	for p, data := range prev {
		if strings.Contains(p, "/waldur-b/") || strings.Contains(p, "/waldur-c/") {
			if string(next[p]) != string(data) {
				t.Errorf("%s changed or removed", p)
			}
		}
	}
	for _, e := range res.Compare(prev, next).Entries {
		if e.Action != changeset.Unchanged {
			t.Errorf("unexpected %s", e)
		}
	}
	if n := len(res.Changes.Filter(func(e changeset.Entry) bool { return e.Kind == "Resource" && e.Action == changeset.Skip })); n != 2 {
		t.Errorf("%d resource skip entries, want 2: %v", n, res.Changes.Entries)
	}
}

// TestUnmappedComponentDropped: a limit of a component no quota key maps is
// dropped with a warning and the rest renders; the hint names what works for
// the profile (k8s_resource only where it is read).
func TestUnmappedComponentDropped(t *testing.T) {
	fpga := "  backend_components:\n    fpga: {type: fpga, measured_unit: units, accounting_type: limit, label: FPGA}\n"
	tests := []struct{ backend, settings, quotaKey, hint string }{
		{"k8s-ut-namespace", "", "cpu", "component_quota_mapping"},
		{"namespace", "", "limits.cpu", "k8s_resource"},
		{"okd", "", "requests.cpu", "k8s_resource"},
		{"rancher", "cluster_id: c-m-1\n", "limits.cpu", "k8s_resource"},
	}
	for _, tt := range tests {
		t.Run(tt.backend, func(t *testing.T) {
			r := resource(1, "fpga", limits("cpu", 2, "fpga", 3))
			res := mustRender(t, mustConfig(t, tt.backend, tt.settings, fpga), state([]waldur.Resource{r}, nil))
			if len(res.Skipped) > 0 {
				t.Fatalf("skipped: %v", res.Skipped)
			}
			q := renderedQuota(t, res)
			if q[tt.quotaKey] == nil || len(q) > 2 {
				t.Errorf("quota %v", q)
			}
			if len(res.Warnings) != 1 {
				t.Fatalf("warnings %v", res.Warnings)
			}
			w := res.Warnings[0]
			if w.Resource != r.UUID || !strings.Contains(w.Message, "component fpga") || !strings.Contains(w.Message, tt.hint) {
				t.Errorf("warning %+v", w)
			}
			if tt.backend == "k8s-ut-namespace" && strings.Contains(w.Message, "k8s_resource") {
				t.Errorf("k8s-ut-namespace ignores k8s_resource, the hint must not suggest it: %s", w.Message)
			}
		})
	}
}

// TestOKDLeastPrivilege: observers and roles the mapping does not know get no
// more than members (view).
func TestOKDLeastPrivilege(t *testing.T) {
	team := []waldur.TeamMember{
		member("mem", "PROJECT.MEMBER"), member("obs", "observer"), member("guest", "guest"),
		member("adm", "PROJECT.ADMIN"), member("boss", "PROJECT.MANAGER"), member("own", "CUSTOMER.OWNER"),
	}
	res := mustRender(t, mustConfig(t, "okd", "", ""), state([]waldur.Resource{resource(1, "x", limits("cpu", 1))}, nil, team...))
	want := map[string]string{"mem": "view", "obs": "view", "guest": "view", "adm": "edit", "boss": "edit", "own": "admin"}
	got := map[string]string{}
	for _, tn := range res.Tenants {
		for _, o := range tn.Objects {
			if o.Kind() == "RoleBinding" {
				subj := o["subjects"].([]any)[0].(map[string]any)["name"].(string)
				got[subj] = nested(o, "roleRef")["name"].(string)
			}
		}
	}
	for u, role := range want {
		if got[u] != role {
			t.Errorf("%s is bound to %q, want %q", u, got[u], role)
		}
	}
}
