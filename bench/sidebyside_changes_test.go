//go:build linux

package bench

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
)

// What each pass of BenchmarkSideBySide must have done, and the one change
// its "one-change" step makes in Waldur.

// sideResource is the first resource of the world's offering that renders
// and carries limits: the one the one-change steps change.
func sideResource(b *testing.B, w *sideWorld) waldur.Resource {
	b.Helper()
	for _, r := range w.state.Offerings[0].Resources {
		if r.State == waldur.ResourceOK && r.Limits != nil && !r.Paused && !r.Downscaled {
			return r
		}
	}
	b.Fatal("synth's state has no resource to change")
	return waldur.Resource{}
}

// changedLimits are r's limits with a CPU limit that iteration i has not
// set before and that is above every earlier one (so that the month's peak
// allocation moves too).
func changedLimits(r waldur.Resource, i int) waldur.Limits {
	l := maps.Clone(r.Limits)
	l["cpu"] = waldur.Amount(strconv.Itoa(5000 + i))
	return l
}

// orderChange adds one pending-provider Update order raising one
// resource's CPU limit; the pass must approve it, apply it and set it done.
func orderChange(b *testing.B, w *sideWorld, i int) func(*testing.B, sideDelta) {
	r := sideResource(b, w)
	id := w.waldur.AddOrder(w.state.Offerings[0].OfferingUUID, waldur.Order{
		Type: waldur.OrderUpdate, State: waldur.OrderPendingProvider, MarketplaceResourceUUID: r.UUID,
		ResourceName: r.Name, ProjectSlug: r.ProjectSlug, PlanUUID: r.PlanUUID, Limits: changedLimits(r, i),
	})
	return func(b *testing.B, d sideDelta) {
		if o, ok := w.waldur.Order(id); !ok || o.State != waldur.OrderDone {
			b.Fatalf("the Update order %s is %q after the pass, want done", id, o.State)
		}
		if d.keycloakWrites != 0 {
			b.Errorf("a limit change wrote %d times to Keycloak", d.keycloakWrites)
		}
	}
}

// ordersFirst: every order of the seeded state is done and the Keycloak
// groups were made.
func ordersFirst(b *testing.B, w *sideWorld, d sideDelta) {
	for _, o := range w.state.Offerings[0].Orders {
		if got, _ := w.waldur.Order(o.UUID); got.State != waldur.OrderDone {
			b.Errorf("the %s order %s is %q after the first pass, want done", o.Type, o.UUID, got.State)
		}
	}
	keycloakBusy(b, w, d)
}

// memberChange adds an offering user to the team of sideResource's project
// (even i) or takes them out again (odd i); the pass must change one
// membership in Keycloak.
func memberChange(b *testing.B, w *sideWorld, i int) func(*testing.B, sideDelta) {
	o := w.state.Offerings[0]
	project := sideResource(b, w).ProjectUUID
	team := o.Teams[project]
	if len(team) == 0 {
		b.Fatalf("project %s has no team", project)
	}
	if i%2 == 1 {
		w.waldur.SetTeam(project, team)
	} else {
		u := outsider(b, o, team)
		w.waldur.SetTeam(project, append(slices.Clone(team), waldur.TeamMember{
			UUID: u.UserUUID, Username: u.UserUsername, FullName: u.UserFullName, Email: u.UserEmail,
			Role: team[0].Role, OfferingUserUsername: u.Username, OfferingUserState: u.State,
		}))
	}
	return func(b *testing.B, d sideDelta) {
		if d.keycloakWrites != 1 {
			b.Fatalf("one team change made %d Keycloak writes, want 1", d.keycloakWrites)
		}
	}
}

// outsider is an offering user in state OK who is not on team.
func outsider(b *testing.B, o waldur.OfferingState, team []waldur.TeamMember) waldur.OfferingUser {
	b.Helper()
	for _, u := range o.OfferingUsers {
		if u.State != "OK" || u.Username == "" {
			continue
		}
		if !slices.ContainsFunc(team, func(m waldur.TeamMember) bool { return m.UUID == u.UserUUID }) {
			return u
		}
	}
	b.Fatal("every offering user is on the team")
	return waldur.OfferingUser{}
}

// usageChange raises one resource's CPU limit in Waldur (as a done Update
// order leaves it); the report must post that resource's usage alone.
func usageChange(b *testing.B, w *sideWorld, i int) func(*testing.B, sideDelta) {
	id := sideResource(b, w).UUID
	r, ok := w.waldur.Resource(id)
	if !ok {
		b.Fatalf("the test Waldur lost resource %s", id)
	}
	r.Limits = changedLimits(r, i)
	w.waldur.AddResource(r)
	return func(b *testing.B, d sideDelta) {
		if d.usagePosts != 1 {
			b.Fatalf("one limit change gave %d set_usage posts, want 1", d.usagePosts)
		}
	}
}

func keycloakBusy(b *testing.B, _ *sideWorld, d sideDelta) {
	if d.keycloakWrites == 0 {
		b.Fatal("the first pass made no Keycloak writes")
	}
}

func keycloakQuiet(b *testing.B, _ *sideWorld, d sideDelta) {
	if d.keycloakWrites != 0 {
		b.Fatalf("a pass with nothing to do made %d Keycloak writes", d.keycloakWrites)
	}
}

func usagePosted(b *testing.B, w *sideWorld, d sideDelta) {
	if d.usagePosts == 0 {
		b.Fatal("the first report posted no usage")
	}
}

func usageQuiet(b *testing.B, _ *sideWorld, d sideDelta) {
	if d.usagePosts != 0 {
		b.Fatalf("a report with nothing new posted %d usages", d.usagePosts)
	}
}
