package templates_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/templates"
)

// The default templates of every profile, executed against render.TenantData
// shaped the way each profile fills it, in a full and a minimal variant.

func base() *render.TenantData {
	return &render.TenantData{
		Offering: render.OfferingData{Name: "Plain namespaces", UUID: "66c0217f031fec833da0e057be1c007e", BackendType: "namespace"},
		Resource: render.ResourceData{
			UUID: "0b1c2d3e4f5a4b7c8d9e0f1a2b3c4d5e", UUIDDashed: "0b1c2d3e-4f5a-4b7c-8d9e-0f1a2b3c4d5e",
			Name: "Alpha: GPU work", Slug: "alpha", State: "OK", Status: "active",
			Limits: map[string]float64{"cpu": 4, "ram": 16},
		},
		Project:   render.ScopeData{UUID: "11111111111141118111111111111111", Name: "Proj", Slug: "proj"},
		Customer:  render.ScopeData{UUID: "22222222222242228222222222222222", Name: "Org", Slug: "org"},
		Name:      "tenant-alpha",
		Namespace: "tenant-alpha",
		Members: []render.Member{
			{Username: "alice", Email: "alice@example.org", WaldurRole: "admin", Role: "admin"},
			{Username: "bob", WaldurRole: "member", Role: "readonly"},
		},
	}
}

// execute runs every default template of profile and returns the objects by
// target, each checked the way the renderer checks them.
func execute(t *testing.T, profile, defaultTarget string, d *render.TenantData) map[string][]manifest.Object {
	t.Helper()
	ts, err := templates.Defaults(profile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]manifest.Object{}
	for _, tp := range ts {
		objs, err := tp.Execute(d, defaultTarget)
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		for _, o := range objs {
			mo := manifest.Object(o.Body)
			if err := mo.Validate(); err != nil {
				t.Errorf("%s: %s: %v", tp.Name, mo.ID(), err)
			}
			if _, err := manifest.Encode(o.Body); err != nil {
				t.Errorf("%s: %s: %v", tp.Name, mo.ID(), err)
			}
			out[o.Target] = append(out[o.Target], mo)
		}
	}
	return out
}

func ids(objs []manifest.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.ID())
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestK8sUTDefaults(t *testing.T) {
	d := base()
	d.Quota = map[string]string{"cpu": "4", "memory": "16Gi"}
	d.Groups = &render.RoleLists{Admin: []string{"ns_alpha_admin"}, ReadWrite: []string{"ns_alpha_readwrite"}, ReadOnly: []string{"ns_alpha_readonly"}}
	d.Users = &render.RoleLists{Admin: []string{"alice@example.org"}, ReadWrite: []string{}, ReadOnly: []string{}}
	d.NamespaceLabels = map[string]string{"tier": "research"}
	d.K8sUT = &render.K8sUTData{CRNamespace: "waldur-system", Owner: map[string]string{"orgID": "2222", "projectID": "1111"}}
	got := execute(t, "k8s-ut-namespace", "cluster", d)
	if !reflect.DeepEqual(ids(got["cluster"]), []string{"ManagedNamespace/waldur-system/tenant-alpha"}) || len(got) != 1 {
		t.Fatalf("objects %v", got)
	}
	wantSpec := `{"adminGroups":["ns_alpha_admin"],"adminUsers":["alice@example.org"],"labels":{"tier":"research"},` +
		`"name":"tenant-alpha","owner":{"orgID":"2222","projectID":"1111"},"quota":{"cpu":"4","memory":"16Gi"},` +
		`"roGroups":["ns_alpha_readonly"],"roUsers":[],"rwGroups":["ns_alpha_readwrite"],"rwUsers":[]}`
	if s := jsonOf(t, got["cluster"][0]["spec"]); s != wantSpec {
		t.Errorf("spec\n%s\nwant\n%s", s, wantSpec)
	}

	// Keycloak off, users not synced, no owner, no labels: the optional fields go.
	d = base()
	d.Quota = map[string]string{}
	d.K8sUT = &render.K8sUTData{CRNamespace: "waldur-system"}
	got = execute(t, "k8s-ut-namespace", "cluster", d)
	if s := jsonOf(t, got["cluster"][0]["spec"]); s != `{"name":"tenant-alpha","quota":{}}` {
		t.Errorf("minimal spec %s", s)
	}
}

func TestNamespaceDefaults(t *testing.T) {
	d := base()
	d.QuotaName = "waldur-quota"
	d.Quota = map[string]string{"requests.cpu": "4", "requests.nvidia.com/gpu": "1"}
	d.NamespaceLabels = map[string]string{"tier": "research"}
	d.LimitRange = &render.LimitRangeData{Default: map[string]string{"cpu": "1"}, DefaultRequest: map[string]string{"cpu": "100m"}}
	d.RoleBindings = []render.RoleBinding{
		{Name: "waldur-admin", ClusterRole: "admin", Subjects: []render.Subject{
			{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "oidc:ns_alpha_admin"},
			{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "oidc:alice"},
		}},
		{Name: "waldur-readonly", ClusterRole: "view", Subjects: []render.Subject{
			{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "oidc:bob"},
		}},
	}
	got := execute(t, "namespace", "cluster", d)
	want := []string{
		"LimitRange/tenant-alpha/waldur-container-defaults",
		"Namespace/tenant-alpha",
		"ResourceQuota/tenant-alpha/waldur-quota",
		"RoleBinding/tenant-alpha/waldur-admin",
		"RoleBinding/tenant-alpha/waldur-readonly",
	}
	if !reflect.DeepEqual(ids(got["cluster"]), want) || len(got) != 1 {
		t.Fatalf("objects %v", got)
	}
	if s, want := jsonOf(t, got["cluster"][0]["spec"]), `{"limits":[{"default":{"cpu":"1"},"defaultRequest":{"cpu":"100m"},"type":"Container"}]}`; s != want {
		t.Errorf("limit range spec %s, want %s", s, want)
	}
	got["cluster"] = got["cluster"][1:]
	ns := got["cluster"][0]
	if s := jsonOf(t, ns["metadata"]); s != `{"labels":{"tier":"research"},"name":"tenant-alpha"}` {
		t.Errorf("namespace metadata %s", s)
	}
	rb := got["cluster"][2]
	wantRB := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"waldur-admin","namespace":"tenant-alpha"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"},` +
		`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"oidc:ns_alpha_admin"},{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"oidc:alice"}]}`
	if s := jsonOf(t, map[string]any(rb)); s != wantRB {
		t.Errorf("role binding\n%s\nwant\n%s", s, wantRB)
	}

	// No labels, annotations or role bindings.
	d = base()
	d.QuotaName = "q"
	d.Quota = map[string]string{}
	d.RoleBindings = []render.RoleBinding{}
	got = execute(t, "namespace", "cluster", d)
	if want := []string{"Namespace/tenant-alpha", "ResourceQuota/tenant-alpha/q"}; !reflect.DeepEqual(ids(got["cluster"]), want) {
		t.Errorf("objects %v", ids(got["cluster"]))
	}
	if s := jsonOf(t, got["cluster"][0]["metadata"]); s != `{"name":"tenant-alpha"}` {
		t.Errorf("namespace metadata %s", s)
	}
	if s := jsonOf(t, got["cluster"][1]["spec"]); s != `{"hard":{}}` {
		t.Errorf("quota spec %s", s)
	}
}

func TestOKDDefaults(t *testing.T) {
	d := base()
	d.QuotaName = "waldur-quota"
	d.Quota = map[string]string{"requests.cpu": "4", "limits.cpu": "8"}
	d.NamespaceAnnotations = map[string]string{"openshift.io/display-name": "Alpha: GPU work", "openshift.io/description": "Alpha (Customer: Org, Project: Proj)"}
	d.OKD = &render.OKDData{DisplayName: "Alpha: GPU work", Description: "Alpha (Customer: Org, Project: Proj)", Organization: "okd-org", Parent: "okd-proj"}
	d.RoleBindings = []render.RoleBinding{{Name: "waldur-alice", ClusterRole: "admin", Subjects: []render.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "alice"}}}}
	got := execute(t, "okd", "cluster", d)
	want := []string{"Namespace/tenant-alpha", "ResourceQuota/tenant-alpha/waldur-quota", "RoleBinding/tenant-alpha/waldur-alice"}
	if !reflect.DeepEqual(ids(got["cluster"]), want) {
		t.Fatalf("objects %v", ids(got["cluster"]))
	}
	if s := jsonOf(t, got["cluster"][0]["metadata"]); s != `{"annotations":{"openshift.io/description":"Alpha (Customer: Org, Project: Proj)","openshift.io/display-name":"Alpha: GPU work"},"name":"tenant-alpha"}` {
		t.Errorf("namespace metadata %s", s)
	}
}

func TestRancherDefaults(t *testing.T) {
	d := base()
	d.QuotaName = "waldur-quota"
	d.Quota = map[string]string{"limits.cpu": "4000m", "requests.nvidia.com/gpu-h100": "2"}
	d.NamespaceLabels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	d.NamespaceAnnotations = map[string]string{"field.cattle.io/projectId": "c-m-4xk2p9q7:p-0b1c2d3e4f5a"}
	d.Rancher = &render.RancherData{
		ClusterID: "c-m-4xk2p9q7", ProjectName: "p-0b1c2d3e4f5a", ProjectID: "c-m-4xk2p9q7:p-0b1c2d3e4f5a",
		DisplayName: "tenant-alpha", Description: "Alpha: GPU work (Customer: Org, Project: Proj)",
		ProjectQuota: map[string]any{"limit": map[string]any{"limitsCpu": "4000m"}},
		RoleTemplate: "workloads-manage", GroupPrincipal: "keycloakoidc_group://project_proj_workloads-manage",
		BindingName: "waldur-workloads-manage", BindingNamespace: "c-m-4xk2p9q7-p-0b1c2d3e4f5a",
		ParentGroup: "c_cm4xk2p9", ChildGroup: "project_proj_workloads-manage",
		ProjectAnnotations: map[string]string{"waldur/organization": "org", "waldur/managed": "true", "waldur/project_slug": "proj"},
	}
	got := execute(t, "rancher", "downstream", d)
	if s, want := jsonOf(t, got["management"][0]["metadata"]), `{"annotations":{"waldur/managed":"true","waldur/organization":"org","waldur/project_slug":"proj"},"name":"p-0b1c2d3e4f5a","namespace":"c-m-4xk2p9q7"}`; s != want {
		t.Errorf("project metadata %s, want %s", s, want)
	}
	if want := []string{"Namespace/tenant-alpha", "ResourceQuota/tenant-alpha/waldur-quota"}; !reflect.DeepEqual(ids(got["downstream"]), want) {
		t.Errorf("downstream %v", ids(got["downstream"]))
	}
	if want := []string{"Project/c-m-4xk2p9q7/p-0b1c2d3e4f5a", "ProjectRoleTemplateBinding/c-m-4xk2p9q7-p-0b1c2d3e4f5a/waldur-workloads-manage"}; !reflect.DeepEqual(ids(got["management"]), want) {
		t.Errorf("management %v", ids(got["management"]))
	}
	wantProject := `{"clusterName":"c-m-4xk2p9q7","description":"Alpha: GPU work (Customer: Org, Project: Proj)","displayName":"tenant-alpha",` +
		`"namespaceDefaultResourceQuota":{"limit":{"limitsCpu":"4000m"}},"resourceQuota":{"limit":{"limitsCpu":"4000m"}}}`
	if s := jsonOf(t, got["management"][0]["spec"]); s != wantProject {
		t.Errorf("project spec\n%s\nwant\n%s", s, wantProject)
	}
	prtb := got["management"][1]
	if prtb["projectName"] != "c-m-4xk2p9q7:p-0b1c2d3e4f5a" || prtb["groupPrincipalName"] != "keycloakoidc_group://project_proj_workloads-manage" || prtb["roleTemplateName"] != "workloads-manage" {
		t.Errorf("binding %v", prtb)
	}

	// Keycloak off, no quota at all: no binding, no ResourceQuota, and the
	// project has no quota fields.
	d.Quota = map[string]string{}
	d.Rancher.ProjectQuota = nil
	d.Rancher.GroupPrincipal = ""
	got = execute(t, "rancher", "downstream", d)
	if want := []string{"Namespace/tenant-alpha"}; !reflect.DeepEqual(ids(got["downstream"]), want) {
		t.Errorf("downstream %v", ids(got["downstream"]))
	}
	if want := []string{"Project/c-m-4xk2p9q7/p-0b1c2d3e4f5a"}; !reflect.DeepEqual(ids(got["management"]), want) {
		t.Errorf("management %v", ids(got["management"]))
	}
	if s := jsonOf(t, got["management"][0]["spec"]); s != `{"clusterName":"c-m-4xk2p9q7","description":"Alpha: GPU work (Customer: Org, Project: Proj)","displayName":"tenant-alpha"}` {
		t.Errorf("project spec %s", s)
	}
}

// TestTenantDataForEach: forEach items of TenantData come as generic values
// under their json names; the copy carrying the item leaves the original alone.
func TestTenantDataForEach(t *testing.T) {
	d := base()
	tp, err := templates.Parse("site/sa.yaml", []byte(`x-render:
  forEach: "{{ value .Members }}"
apiVersion: v1
kind: ServiceAccount
metadata:
  name: "{{ .Item.username }}"
  namespace: "{{ .Namespace }}"
  annotations:
    example.org/email: "{{ optional .Item.email }}"
    example.org/role: "{{ .Item.waldurRole }}/{{ .Item.role }}"
`))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := tp.Execute(d, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	got := jsonOf(t, []any{objs[0].Body["metadata"], objs[1].Body["metadata"]})
	want := `[{"annotations":{"example.org/email":"alice@example.org","example.org/role":"admin/admin"},"name":"alice","namespace":"tenant-alpha"},` +
		`{"annotations":{"example.org/role":"member/readonly"},"name":"bob","namespace":"tenant-alpha"}]`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if d.Item != nil {
		t.Error("forEach changed the data")
	}
}

// TestTenantDataFieldsReachable: every field the documentation lists can be
// read by a template.
func TestTenantDataFieldsReachable(t *testing.T) {
	d := base()
	d.Groups = &render.RoleLists{Admin: []string{"g"}}
	d.Users = &render.RoleLists{}
	d.K8sUT = &render.K8sUTData{}
	d.Rancher = &render.RancherData{}
	d.OKD = &render.OKDData{}
	paths := []string{
		".Offering.Name", ".Offering.UUID", ".Offering.BackendType",
		".Resource.UUID", ".Resource.UUIDDashed", ".Resource.Name", ".Resource.Slug", ".Resource.State",
		".Resource.BackendID", ".Resource.Status", ".Resource.Limits",
		".Project.UUID", ".Project.UUIDDashed", ".Project.Name", ".Project.Slug", ".Project.Description",
		".Customer.UUID", ".Customer.UUIDDashed", ".Customer.Name", ".Customer.Slug", ".Customer.Description",
		".Name", ".Namespace", ".QuotaName", ".Quota", ".NamespaceLabels", ".NamespaceAnnotations",
		".Groups.Admin", ".Groups.ReadWrite", ".Groups.ReadOnly", ".Users.Admin", ".Users.ReadWrite", ".Users.ReadOnly",
		".Members", ".RoleBindings",
		".K8sUT.CRNamespace", ".K8sUT.Owner",
		".Rancher.ClusterID", ".Rancher.ProjectName", ".Rancher.ProjectID", ".Rancher.DisplayName", ".Rancher.Description",
		".Rancher.ProjectQuota", ".Rancher.RoleTemplate", ".Rancher.GroupPrincipal", ".Rancher.BindingName",
		".Rancher.BindingNamespace", ".Rancher.ParentGroup", ".Rancher.ChildGroup",
		".OKD.DisplayName", ".OKD.Description", ".OKD.Organization", ".OKD.Parent",
		".Item",
	}
	for _, p := range paths {
		tp, err := templates.Parse("t.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: \"{{ value "+p+" }}\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tp.Execute(d, "cluster"); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestDocExamples: every complete template shown in docs/templates.md parses,
// renders with namespace-profile data and gives valid objects.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/templates.md")
	if err != nil {
		t.Skip(err)
	}
	d := base()
	d.QuotaName = "waldur-quota"
	d.Quota = map[string]string{"limits.cpu": "4"}
	d.Groups = &render.RoleLists{Admin: []string{"ns_alpha_admin"}, ReadWrite: []string{"ns_alpha_readwrite"}, ReadOnly: []string{"ns_alpha_readonly"}}
	n := 0
	for i, block := range strings.Split(string(doc), "```yaml\n")[1:] {
		src, _, _ := strings.Cut(block, "```")
		if !strings.Contains(src, "\nkind: ") || strings.Contains(src, "…") {
			continue // a fragment, not a whole template
		}
		n++
		tp, err := templates.Parse(fmt.Sprintf("docs block %d", i+1), []byte(src))
		if err != nil {
			t.Errorf("%v\n%s", err, src)
			continue
		}
		objs, err := tp.Execute(d, "cluster")
		if err != nil || len(objs) == 0 {
			t.Errorf("%s: %d objects, %v", tp.Name, len(objs), err)
			continue
		}
		for _, o := range objs {
			if o.Body["kind"] == "TenantDataDump" {
				continue // its spec is the data, not an object
			}
			if err := manifest.Object(o.Body).Validate(); err != nil {
				t.Errorf("%s: %v", tp.Name, err)
			}
		}
	}
	if n < 5 {
		t.Errorf("found only %d example templates", n)
	}
}
