package config_test

import (
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/config"
)

// A registered backend that reuses a built-in profile is accepted as its
// backend_type and its settings are decoded and checked as that profile's;
// an unknown type's error lists every registered type.
func TestRegisteredBackendReusesProfile(t *testing.T) {
	backend.Register(backend.Backend{
		Type: "namespace-lite", Profile: backend.Namespace, Order: 60,
		DefaultTarget: backend.TargetCluster, Targets: []string{backend.TargetCluster},
	})
	t.Cleanup(func() { backend.Unregister("namespace-lite") })
	doc := func(typ, prefix string) []byte {
		return []byte(`offerings:
  - name: Lite
    waldur_api_url: https://waldur.example.org
    waldur_offering_uuid: 66c0217f031fec833da0e057be1c007e
    backend_type: ` + typ + `
    backend_settings:
      namespace_prefix: "` + prefix + `"
`)
	}
	l, err := config.Parse(doc("namespace-lite", "lite-"), "lite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s := l.Offerings[0].Settings.Namespace; s == nil || s.NamespacePrefix != "lite-" || s.QuotaName != "waldur-quota" {
		t.Errorf("settings %+v, want the namespace profile's, defaulted", l.Offerings[0].Settings)
	}
	if _, err := config.Parse(doc("namespace-lite", "Bad_"), "lite.yaml"); err == nil || !strings.Contains(err.Error(), "backend_settings.namespace_prefix") {
		t.Errorf("a bad prefix: %v, want the namespace profile's check", err)
	}
	_, err = config.Parse(doc("nope", "x-"), "lite.yaml")
	if err == nil || !strings.Contains(err.Error(), "want one of k8s-ut-namespace, namespace, okd, rancher, namespace-lite") {
		t.Errorf("an unknown type: %v, want every registered type listed", err)
	}
}
