package render

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Fixed UUIDs used across the tests.
const (
	offeringUUID = "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0f0f"
	customerUUID = "c0570000000040008000000000000001"
	projectUUID  = "b0b00000000040008000000000000001"
	project2UUID = "b0b00000000040008000000000000002"
)

// resUUID returns a deterministic resource UUID for index i.
func resUUID(i int) waldur.UUID { return waldur.UUID(fmt.Sprintf("a0000000000040008000%012d", i)) }

// mustConfig parses a one-offering config with the given backend settings YAML
// (indented under backend_settings) and extra offering-level YAML.
func mustConfig(t testing.TB, backendType, settings, extra string) *config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "offerings:\n- name: Test offering\n  waldur_api_url: https://waldur.example.com/api/\n  waldur_offering_uuid: %s\n  backend_type: %s\n", offeringUUID, backendType)
	if extra != "" {
		b.WriteString(extra)
	}
	if settings != "" {
		b.WriteString("  backend_settings:\n")
		for _, l := range strings.Split(strings.TrimRight(settings, "\n"), "\n") {
			b.WriteString("    " + l + "\n")
		}
	}
	l, err := config.Parse([]byte(b.String()), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	return l.Config
}

// resource builds an OK resource with the site agent test suite's defaults.
func resource(i int, slug string, limits waldur.Limits) waldur.Resource {
	return waldur.Resource{
		UUID: resUUID(i), Name: "Resource " + slug, Slug: slug, State: waldur.ResourceOK, Limits: limits,
		OfferingUUID: offeringUUID, ProjectUUID: projectUUID, ProjectName: "Test Project", ProjectSlug: "test-project",
		CustomerUUID: customerUUID, CustomerName: "Test Customer", CustomerSlug: "test-customer",
		Created: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC),
	}
}

func limits(kv ...any) waldur.Limits {
	l := waldur.Limits{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i].(string)] = waldur.Amount(fmt.Sprint(kv[i+1]))
	}
	return l
}

// member builds a team member whose offering username, email and civil number
// derive from name.
func member(name, role string) waldur.TeamMember {
	return waldur.TeamMember{
		UUID: waldur.UUID(fmt.Sprintf("%032x", []byte(name)[:min(len(name), 16)])), Username: name + "@idp",
		FullName: strings.ToUpper(name[:1]) + name[1:], Email: name + "@example.com", Role: role,
		OfferingUserUsername: name, OfferingUserState: "OK",
	}
}

// state wraps resources, orders and a team for the test offering.
func state(res []waldur.Resource, orders []waldur.Order, team ...waldur.TeamMember) *waldur.State {
	teams := map[waldur.UUID][]waldur.TeamMember{}
	for _, r := range res {
		teams[r.ProjectUUID] = team
	}
	var users []waldur.OfferingUser
	for _, m := range team {
		users = append(users, waldur.OfferingUser{
			UUID: m.UUID, Username: m.OfferingUserUsername, State: "OK", UserUUID: m.UUID, UserEmail: m.Email,
			UserFullName: m.FullName, UserCivilNumber: "XX" + strings.ToUpper(m.OfferingUserUsername),
		})
	}
	return &waldur.State{Offerings: []waldur.OfferingState{{
		Name: "Test offering", OfferingUUID: offeringUUID, Resources: res, Orders: orders, Teams: teams, OfferingUsers: users,
	}}}
}

// mustRender renders with the default templates of every offering.
func mustRender(t testing.TB, cfg *config.Config, st *waldur.State) *Result {
	t.Helper()
	tpls, err := LoadTemplates(cfg)
	if err != nil {
		t.Fatalf("templates: %v", err)
	}
	res, err := New(cfg, tpls).Render(st)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return res
}

// dump lays a result out as one text: every file of the tree, then the Keycloak
// groups, then the skipped resources.
func dump(res *Result) []byte {
	var b bytes.Buffer
	tree := res.Tree(nil)
	paths := make([]string, 0, len(tree))
	for p := range tree {
		if p != MarkerFile {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(&b, "=== %s\n%s", p, tree[p])
	}
	b.WriteString("=== keycloak groups\n")
	for _, g := range res.Groups {
		fmt.Fprintf(&b, "%s members=%v resources=%d description=%q\n", g.Path(), g.Members, len(g.Resources), g.Description)
	}
	b.WriteString("=== skipped\n")
	for _, e := range res.Changes.ByAction("skip") {
		fmt.Fprintf(&b, "%s: %s\n", e.Subject, e.Reason)
	}
	if len(res.Warnings) > 0 {
		b.WriteString("=== warnings\n")
		for _, w := range res.Warnings {
			fmt.Fprintf(&b, "%s: %s\n", w.Subject, w.Message)
		}
	}
	return b.Bytes()
}

// golden compares got with testdata/<name>.golden, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./render -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update after checking):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the first lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
