package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestTeamEditPassesTheAccessGuard is the removal policy's example: in a
// realm of 24 managed memberships, one member going from readwrite to
// manager in a project of 3 tenants while another member leaves that
// project is an ordinary sync (the guard counts (subject, tenant) pairs
// that lose all access: 3 of 24); six pairs losing all access at once are
// refused with exit 7, by `keycloak` and by `sync`.
func TestTeamEditPassesTheAccessGuard(t *testing.T) {
	wsrv, waldurCfg := serveExample(t)
	kc := kctest.NewServer()
	defer kc.Close()
	gsrv, _, url := gitRepo(t)
	cfg := withGit(t, keycloakConfigFrom(t, waldurCfg, kc.URL, "", true), gsrv, url)
	addExampleUsers(t, kc, cfg)
	team := teamEditProject(t, wsrv, kc)
	sync := func(what string, want int, args ...string) string {
		t.Helper()
		code, _, stderr := run(t, append([]string{"sync", "--config", cfg}, args...)...)
		if code != want {
			t.Fatalf("%s: exit %d, want %d\n%s", what, code, want, stderr)
		}
		return stderr
	}
	sync("first sync", ExitOK)
	if n := realmMemberships(kc, "hpc"); n != 24 {
		t.Fatalf("the hpc realm holds %d memberships, want 24", n)
	}

	// ute goes from readwrite (member) to manager, wim leaves: the example.
	edited := slices.Clone(team)
	edited[0].Role = "PROJECT.MANAGER"
	wsrv.SetTeam(teamEditUUID, edited[:3])
	sync("a role change and a leaver", ExitOK)
	for i := range 3 {
		tenant := fmt.Sprintf("/ns_team-edit-%d", i)
		if m := members(kc, tenant+"_admin"); !slices.Contains(m, "ute") || slices.Contains(m, "wim") {
			t.Errorf("%s_admin: members %v, want ute and not wim", tenant, m)
		}
		if m := members(kc, tenant+"_readwrite"); len(m) != 0 {
			t.Errorf("%s_readwrite: members %v, want none", tenant, m)
		}
	}

	// Back as it was (additions only), then two members leave: six pairs.
	wsrv.SetTeam(teamEditUUID, team)
	sync("the team restored", ExitOK)
	wsrv.SetTeam(teamEditUUID, team[1:3])
	code, _, stderr := run(t, "keycloak", "--config", cfg)
	if code != ExitGuard || !strings.Contains(stderr, "refusing to remove 6 of 24 (subject, tenant) pairs of Keycloak memberships at once") {
		t.Errorf("keycloak, six pairs: exit %d, want %d\n%s", code, ExitGuard, stderr)
	}
	if stderr := sync("six pairs", ExitGuard); !strings.Contains(stderr, "--allow-mass-prune") {
		t.Errorf("sync, six pairs: %s", stderr)
	}
	if m := members(kc, "/ns_team-edit-0_readwrite"); !slices.Contains(m, "ute") {
		t.Errorf("the refused runs took ute away: %v", m)
	}
	sync("six pairs, allowed", ExitOK, "--allow-mass-prune")
}

const teamEditUUID = waldur.UUID("7ea0ed170000000000000000000000a1")

// teamEditProject adds, before the first sync, a project of three UT
// namespaces whose team of four (ute and wim readwrite, max manager, zoe
// admin) are Keycloak users, and takes ktamm out of the climate project: the
// hpc realm then holds 24 memberships (the example's 13, less one, and 12).
// It returns the new team.
func teamEditProject(t *testing.T, wsrv interface {
	AddResource(waldur.Resource) waldur.UUID
	SetTeam(waldur.UUID, []waldur.TeamMember)
}, kc *kctest.Server) []waldur.TeamMember {
	t.Helper()
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	member := func(name, role string) waldur.TeamMember {
		kc.AddUser("hpc", name)
		return waldur.TeamMember{UUID: waldur.UUID(fmt.Sprintf("%x", name+"-0000000000000000")[:32]), Username: name + "@idp.example.edu",
			FullName: name, Role: role, OfferingUserUsername: name, OfferingUserState: "OK"}
	}
	team := []waldur.TeamMember{member("ute", "PROJECT.MEMBER"), member("max", "PROJECT.MANAGER"), member("zoe", "PROJECT.ADMIN"), member("wim", "PROJECT.MEMBER")}
	for _, o := range snap.Offerings {
		if o.Name != "UT namespaces" {
			continue
		}
		var tpl waldur.Resource
		for _, r := range o.Resources {
			if r.State == waldur.ResourceOK {
				tpl = r
			}
		}
		for i := range 3 {
			r := tpl
			r.UUID = waldur.UUID(fmt.Sprintf("7ea0ed17%024x", i))
			r.Name, r.Slug = fmt.Sprintf("Team edit %d", i), fmt.Sprintf("team-edit-%d", i)
			r.ProjectUUID, r.ProjectSlug, r.ProjectName = teamEditUUID, "team-edit", "Team edit"
			wsrv.AddResource(r)
		}
		const climate = waldur.UUID("0b853544669912ced6b3a191927f38c8")
		wsrv.SetTeam(climate, slices.DeleteFunc(slices.Clone(o.Teams[climate]), func(m waldur.TeamMember) bool { return m.OfferingUserUsername == "ktamm" }))
	}
	wsrv.SetTeam(teamEditUUID, team)
	return team
}

// realmMemberships counts the memberships of every group of a realm.
func realmMemberships(kc *kctest.Server, realm string) int {
	n := 0
	for _, p := range kc.Paths(realm) {
		if g, ok := kc.Group(realm, p); ok {
			n += len(g.Members)
		}
	}
	return n
}
