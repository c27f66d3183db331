package keycloak

import (
	"context"
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
