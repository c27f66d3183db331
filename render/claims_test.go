package render

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

const (
	offNS = "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0001"
	offUT = "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0002"
)

// twoOfferings is a namespace and a k8s-ut-namespace offering in one realm,
// both with the namespace prefix waldur-.
func twoOfferings(t *testing.T) *config.Config {
	t.Helper()
	text := `offerings:
- name: Plain
  waldur_api_url: https://waldur.example.com/api/
  waldur_offering_uuid: ` + offNS + `
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
  backend_settings:
    namespace_prefix: waldur-
    keycloak_enabled: true
    keycloak:
      keycloak_url: https://keycloak.example.org/
      keycloak_realm: hpc
- name: UT
  waldur_api_url: https://waldur.example.com/api/
  waldur_offering_uuid: ` + offUT + `
  backend_type: k8s-ut-namespace
  backend_components:
    cpu: {accounting_type: limit}
  backend_settings:
    cr_namespace: waldur-system
    namespace_prefix: waldur-
    keycloak_enabled: true
    keycloak:
      keycloak_url: https://keycloak.example.org/
      keycloak_realm: hpc
`
	l, err := config.Parse([]byte(text), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return l.Config
}

// sameSlug is one resource per offering with the slug genomics-pipeline, in
// different projects of different customers; the UT one is older.
func sameSlug() *waldur.State {
	r := func(i int, off, project, customer string, created time.Time) waldur.Resource {
		res := resource(i, "genomics-pipeline", limits("cpu", 2))
		res.OfferingUUID, res.ProjectUUID, res.CustomerUUID, res.Created = waldur.UUID(off), waldur.UUID(project), waldur.UUID(customer), created
		return res
	}
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	plain := r(1, offNS, projectUUID, customerUUID, day.Add(24*time.Hour))
	ut := r(2, offUT, project2UUID, "c0570000000040008000000000000002", day)
	team := func(name string) []waldur.TeamMember { return []waldur.TeamMember{member(name, "admin")} }
	return &waldur.State{Offerings: []waldur.OfferingState{
		{Name: "Plain", OfferingUUID: offNS, Resources: []waldur.Resource{plain}, Teams: map[waldur.UUID][]waldur.TeamMember{projectUUID: team("alice")}},
		{Name: "UT", OfferingUUID: offUT, Resources: []waldur.Resource{ut}, Teams: map[waldur.UUID][]waldur.TeamMember{project2UUID: team("bob")}},
	}}
}

// TestNamesUniqueAcrossOfferings: two offerings' resources with the same
// slug would share a namespace and the Keycloak groups ns_<slug>_*; the one
// created first keeps the names, the other is skipped naming both, and no
// group ever holds both teams.
func TestNamesUniqueAcrossOfferings(t *testing.T) {
	cfg := twoOfferings(t)
	st := sameSlug()
	res := mustRender(t, cfg, st)
	res.ResolveClaims(cfg, st, nil)
	plain, ut := st.Offerings[0].Resources[0].UUID, st.Offerings[1].Resources[0].UUID
	why, skipped := res.Skipped[plain]
	if !skipped || !strings.Contains(why, string(ut)) || !strings.Contains(why, "UT") {
		t.Fatalf("the younger resource: skipped %v (%q), want skipped naming %s of UT", skipped, why, ut)
	}
	for _, tn := range res.Tenants {
		if tn.Resource == plain {
			t.Errorf("the loser still renders %s", tn.Dir)
		}
	}
	for _, g := range res.Groups {
		for _, r := range g.Resources {
			if r == plain {
				t.Errorf("group %s still needs the loser", g.Path())
			}
		}
		for _, m := range g.Members {
			if strings.Contains(m, "alice") {
				t.Errorf("group %s has a member of the other customer: %v", g.Path(), g.Members)
			}
		}
	}
	var entry bool
	for _, e := range res.Changes.Entries {
		entry = entry || (e.Kind == "Resource" && e.Resource == string(plain) && e.Action == "skip")
	}
	if !entry {
		t.Error("no skip entry for the loser")
	}

	// The younger one's tenant is in place already: it keeps its names.
	res = mustRender(t, cfg, st)
	res.ResolveClaims(cfg, st, func(id waldur.UUID) bool { return id == plain })
	if _, skipped := res.Skipped[ut]; !skipped {
		t.Errorf("the resource in place lost its names: skipped %v", res.Skipped)
	}
	if _, skipped := res.Skipped[plain]; skipped {
		t.Error("the resource in place was skipped")
	}
}

// TestClaimsLeaveDistinctNamesAlone: different slugs, nothing skipped.
func TestClaimsLeaveDistinctNamesAlone(t *testing.T) {
	cfg := twoOfferings(t)
	st := sameSlug()
	st.Offerings[1].Resources[0].Slug = "climate"
	res := mustRender(t, cfg, st)
	n := len(res.Tenants)
	res.ResolveClaims(cfg, st, nil)
	if len(res.Skipped) != 0 || len(res.Tenants) != n {
		t.Errorf("skipped %v, tenants %d of %d", res.Skipped, len(res.Tenants), n)
	}
}

// TestClaimsWithoutObjects: a render that dropped its objects
// (WithoutObjects) claims exactly the names a full render claims.
func TestClaimsWithoutObjects(t *testing.T) {
	cfg, st := twoOfferings(t), sameSlug()
	tpls, err := LoadTemplates(cfg)
	if err != nil {
		t.Fatal(err)
	}
	full, err := New(cfg, tpls).Render(st)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := New(cfg, tpls).WithoutObjects().Render(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range lean.Tenants {
		if tn.Objects != nil {
			t.Fatalf("%s kept its objects", tn.Dir)
		}
	}
	who := claimants(cfg, st)
	want, got := full.claimList(cfg, who), lean.claimList(cfg, who)
	objects := 0
	for _, c := range want {
		if strings.Contains(c.claim, " on cluster ") {
			objects++
		}
	}
	if objects == 0 {
		t.Fatal("the full render claims no object names")
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("without objects the claims are\n%v\nwant\n%v", got, want)
	}
}
