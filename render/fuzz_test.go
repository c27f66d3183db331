package render

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// FuzzRender renders arbitrary resource data with every profile. Whatever the
// input, rendering must not panic, every resource must be either rendered or
// skipped with a reason, and every rendered file must be valid YAML holding one
// valid object.
func FuzzRender(f *testing.F) {
	f.Add("test-ns", "Test resource", "test-project", "4", "PROJECT.MANAGER", "alice", false, false)
	f.Add("", "", "", "-1", "", "", true, false)
	f.Add("Bad_Slug!", "x\n---\nkind: Secret", "p", "abc", "manager", "bob@example.com", false, true)
	f.Add("a-very-long-slug-that-is-much-too-long-for-a-kubernetes-namespace-name", "n", "p", "1e308", "member", "ü", false, false)
	f.Add("ok", "{{ .Name }}", "{{", "0.5", "observer", "-leading", true, true)
	f.Add("ok", "\u2028", "p q", "NaN", "admin", "a:b", false, false)
	cfgs := map[string]*config.Config{
		"k8s-ut-namespace": mustConfig(f, "k8s-ut-namespace", "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}\nsync_users_to_cr: true\ncr_user_identity_field: username", ""),
		"namespace":        mustConfig(f, "namespace", "keycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}", ""),
		"okd":              mustConfig(f, "okd", "", ""),
		"rancher":          mustConfig(f, "rancher", "cluster_id: c-m-1\nkeycloak_enabled: true\nkeycloak: {keycloak_url: https://kc/}", ""),
	}
	f.Fuzz(func(t *testing.T, slug, name, projectSlug, limit, role, username string, paused, downscaled bool) {
		r := resource(1, slug, waldur.Limits{"cpu": waldur.Amount(limit), "storage": "10"})
		r.Name, r.ProjectSlug, r.ProjectName, r.CustomerSlug = name, projectSlug, name, projectSlug
		r.Paused, r.Downscaled = waldur.Flag(paused), waldur.Flag(downscaled)
		m := member("fuzz", role)
		m.OfferingUserUsername = username
		st := state([]waldur.Resource{r}, nil, m)
		for backend, cfg := range cfgs {
			res := mustRender(t, cfg, st)
			_, skipped := res.Skipped[r.UUID]
			if skipped == (len(res.Tenants) > 0) {
				t.Fatalf("%s: skipped=%v with %d tenants", backend, skipped, len(res.Tenants))
			}
			if skipped && res.Skipped[r.UUID] == "" {
				t.Fatalf("%s: skipped without a reason", backend)
			}
			for _, tn := range res.Tenants {
				for _, file := range tn.Files {
					var obj map[string]any
					if err := yaml.Unmarshal(file.Data, &obj); err != nil {
						t.Fatalf("%s: %s/%s is not YAML: %v\n%s", backend, tn.Dir, file.Name, err, file.Data)
					}
				}
				for _, o := range tn.Objects {
					if err := o.Validate(); err != nil {
						t.Fatalf("%s: invalid object rendered: %v", backend, err)
					}
				}
			}
		}
	})
}
