package keycloak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
)

// TestMemoryKey: a memory is used only for the Keycloak, realm and offerings
// it was made for.
func TestMemoryKey(t *testing.T) {
	off := func(uuid string) *config.Offering {
		return &config.Offering{WaldurOfferingUUID: uuid, Settings: config.Settings{Namespace: &config.NamespaceSettings{}}}
	}
	base := Target{URL: "https://sso.example.org/", Realm: "waldur", Offerings: []*config.Offering{off("0001")}}
	m := NewMemory("")
	if err := m.put(context.Background(), &realmMemory{Key: memoryKey(base), URL: "https://sso.example.org", Realm: "waldur", Groups: map[string]*memGroup{}}, true); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		t     Target
		found bool
		why   string
	}{
		{"same", base, true, ""},
		{"trailing slash", Target{URL: "https://sso.example.org", Realm: "waldur", Offerings: base.Offerings}, true, ""},
		{"another realm", Target{URL: base.URL, Realm: "other", Offerings: base.Offerings}, false, "nothing remembered"},
		{"another Keycloak", Target{URL: "https://sso2.example.org/", Realm: "waldur", Offerings: base.Offerings}, false, "nothing remembered"},
		{"other offerings", Target{URL: base.URL, Realm: "waldur", Offerings: []*config.Offering{off("0001"), off("0002")}}, false, "another config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, why, _ := m.take(context.Background(), tc.t, time.Now())
			if (r != nil) != tc.found || !strings.Contains(why, tc.why) {
				t.Errorf("found %v (%q), want %v (%q)", r != nil, why, tc.found, tc.why)
			}
		})
	}
}

// testRealm is a remembered realm of n groups with members.
func testRealm(n int) *realmMemory {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := &realmMemory{Key: "k", URL: "https://sso.example.org", Realm: "waldur", LastPass: at, EventsFrom: 7, EventsRead: at, Groups: map[string]*memGroup{}}
	for i := range n {
		g := &memGroup{ID: fmt.Sprintf("id-%d", i), Name: fmt.Sprintf("ns_%d_admin", i), Attributes: map[string][]string{AttrManagedBy: {ManagedBy}},
			MembersRead: true, ChildrenRead: true, Verified: at.Add(time.Duration(i) * time.Millisecond)}
		for m := range 3 {
			g.Members = append(g.Members, User{ID: fmt.Sprintf("u-%d", (i+m)%7), Username: fmt.Sprintf("user%d", (i+m)%7)})
		}
		r.Groups["/"+g.Name] = g
	}
	return r
}

// TestStateFormats: the stored state reads back as it was written, and a
// state file of version 1 (plain JSON, as written before) is still read.
func TestStateFormats(t *testing.T) {
	want := testRealm(5)
	v1, err := json.Marshal(stateFile{Version: 1, Realms: []*realmMemory{want}})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := encodeState(stateFile{Realms: []*realmMemory{want}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"version 1, plain JSON", v1}, {"version 2, gzip'd", v2}} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := decodeState(tc.data)
			if err != nil || len(f.Realms) != 1 {
				t.Fatalf("decode: %v, %d realms", err, len(f.Realms))
			}
			if got := f.Realms[0]; !reflect.DeepEqual(got, want) {
				t.Errorf("read back:\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// TestStateOverBound: a state over the bound is not written, with one error
// for the whole process; the memory is still kept in the process.
func TestStateOverBound(t *testing.T) {
	defer func(n int) { maxState = n }(maxState)
	maxState = 200
	path := filepath.Join(t.TempDir(), "state")
	m := NewMemory(path)
	ctx := context.Background()
	var errs []error
	for range 3 {
		errs = append(errs, m.put(ctx, testRealm(50), true))
	}
	if !errors.Is(errs[0], ErrStateTooLarge) || errs[1] != nil || errs[2] != nil {
		t.Errorf("errors %v, want one ErrStateTooLarge then none", errs)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a state over the bound was written")
	}
	if len(m.realms) != 1 {
		t.Errorf("the memory lost the realm it could not store")
	}
}
