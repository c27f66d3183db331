package review

import (
	"fmt"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/render"
)

const dir = "o/cluster/waldur-a"

func quota(storage string) []byte {
	return []byte("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: waldur-quota\nspec:\n  hard:\n    limits.cpu: \"2\"\n    requests.storage: " + storage + "\n")
}

func binding(names ...string) []byte {
	s := "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nsubjects:\n"
	for _, n := range names {
		s += "- kind: User\n  name: " + n + "\n"
	}
	return []byte(s)
}

func tenant(q []byte, b []byte, extra bool) render.Tree {
	t := render.Tree{dir + "/kustomization.yaml": []byte("k"), dir + "/resourcequota-waldur-quota.yaml": q, dir + "/rolebinding-admin.yaml": b}
	if extra {
		t[dir+"/configmap-x.yaml"] = []byte("kind: ConfigMap\n")
	}
	return t
}

func TestClassify(t *testing.T) {
	prev := tenant(quota("10Gi"), binding("alice", "bob"), true)
	for _, tc := range []struct {
		name   string
		action changeset.Action
		next   render.Tree
		class  Class
		why    string
	}{
		{"new tenant", changeset.Create, prev, Additive, ""},
		{"removed tenant", changeset.Delete, render.Tree{}, Risky, "tenant removed"},
		{"quota raised, member added", changeset.Update, tenant(quota("20Gi"), binding("alice", "bob", "carol"), true), Additive, ""},
		{"same quantity written otherwise", changeset.Update, tenant(quota("10240Mi"), binding("alice", "bob"), true), Additive, ""},
		{"quota lowered", changeset.Update, tenant(quota("4Gi"), binding("alice", "bob"), true), Risky, "quota lowered: requests.storage 10Gi → 4Gi"},
		{"member removed", changeset.Update, tenant(quota("10Gi"), binding("alice"), true), Risky, "member removed: User bob"},
		{"objects removed", changeset.Update, tenant(quota("10Gi"), binding("alice", "bob"), false), Risky, "objects removed: configmap-x.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, why := Classify(changeset.Entry{Kind: "Tenant", Subject: dir, Action: tc.action}, prev, tc.next)
			if c != tc.class || why != tc.why {
				t.Errorf("%s %q, want %s %q", c, why, tc.class, tc.why)
			}
		})
	}
}

func TestCarryAndBranch(t *testing.T) {
	prev := render.Tree{"m": []byte("1"), dir + "/a.yaml": []byte("old"), "o/cluster/b/x.yaml": []byte("b")}
	next := render.Tree{"m": []byte("1"), "o/cluster/b/x.yaml": []byte("b2")}
	main := Carry(next, prev, []string{dir})
	if string(main[dir+"/a.yaml"]) != "old" || string(main["o/cluster/b/x.yaml"]) != "b2" || len(main) != 3 {
		t.Errorf("carry %v", main)
	}
	b1 := Branch("p/", prev, next, []string{dir})
	if !strings.HasPrefix(b1, "p/") || len(b1) != 14 || Branch("p/", prev, next, []string{dir}) != b1 {
		t.Errorf("branch %q not stable", b1)
	}
	other := render.Tree{"m": []byte("1"), dir + "/a.yaml": []byte("changed")}
	if Branch("p/", prev, other, []string{dir}) == b1 {
		t.Error("another change, the same branch")
	}
	// A change outside the reviewed directories keeps the branch.
	if Branch("p/", prev, render.Tree{"o/cluster/b/x.yaml": []byte("b3")}, []string{dir}) != b1 {
		t.Error("the branch depends on other directories")
	}
}

// The Rancher profile's tenant is two directories: the Project on the
// management cluster and the namespace on the downstream one. A lowered
// project quota is risky in either.
func TestClassifyRancherProjectQuota(t *testing.T) {
	const mgmt, down = "o/management/waldur-a", "o/downstream/waldur-a"
	project := func(cpu, defCPU string) render.Tree {
		return render.Tree{mgmt + "/kustomization.yaml": []byte("k"), mgmt + "/project-p-1.yaml": []byte(`apiVersion: management.cattle.io/v3
kind: Project
metadata:
  name: p-1
spec:
  displayName: waldur-a
  resourceQuota:
    limit:
      limitsCpu: ` + cpu + `
      limitsMemory: 1536Mi
  namespaceDefaultResourceQuota:
    limit:
      limitsCpu: ` + defCPU + `
      limitsMemory: 1536Mi
`)}
	}
	namespace := func(cpu string) render.Tree {
		return render.Tree{down + "/kustomization.yaml": []byte("k"), down + "/namespace-waldur-a.yaml": []byte(`apiVersion: v1
kind: Namespace
metadata:
  name: waldur-a
  annotations:
    field.cattle.io/resourceQuota: '{"limit":{"limitsCpu":"` + cpu + `","limitsMemory":"1536Mi"}}'
`)}
	}
	for _, tc := range []struct {
		name       string
		dir        string
		prev, next render.Tree
		class      Class
		why        string
	}{
		{"project quota raised", mgmt, project("2500m", "2500m"), project("4", "4"), Additive, ""},
		{"project quota written otherwise", mgmt, project("2", "2"), project("2000m", "2000m"), Additive, ""},
		{"project quota lowered", mgmt, project("2500m", "2500m"), project("2", "2"), Risky,
			"quota lowered: Project resourceQuota.limit.limitsCpu 2500m → 2; quota lowered: Project namespaceDefaultResourceQuota.limit.limitsCpu 2500m → 2"},
		{"namespace default lowered only", mgmt, project("4", "4"), project("4", "1"), Risky,
			"quota lowered: Project namespaceDefaultResourceQuota.limit.limitsCpu 4 → 1"},
		{"namespace annotation raised", down, namespace("2"), namespace("3"), Additive, ""},
		{"namespace annotation lowered", down, namespace("2"), namespace("500m"), Risky,
			"quota lowered: field.cattle.io/resourceQuota limit.limitsCpu 2 → 500m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, why := Classify(changeset.Entry{Kind: "Tenant", Subject: tc.dir, Action: changeset.Update}, tc.prev, tc.next)
			if c != tc.class || why != tc.why {
				t.Errorf("%s %q, want %s %q", c, why, tc.class, tc.why)
			}
		})
	}
}

// BenchmarkClassify10k classifies 1,000 changed tenants of a site of 10,000
// (four files each), as a template change that touches many tenants does:
// with one Classifier for the publish (the engine's way) and with the
// package's Classify per entry, which indexes the tree each time.
func BenchmarkClassify10k(b *testing.B) {
	prev, next := render.Tree{}, render.Tree{}
	var entries []changeset.Entry
	for i := range 10000 {
		dir := fmt.Sprintf("o/cluster/waldur-%05d", i)
		for _, f := range []string{"kustomization.yaml", "namespace-x.yaml", "resourcequota-q.yaml", "rolebinding-r.yaml"} {
			prev[dir+"/"+f] = []byte("kind: ConfigMap\n")
			next[dir+"/"+f] = prev[dir+"/"+f]
		}
		if i%10 == 0 {
			next[dir+"/namespace-x.yaml"] = []byte("kind: ConfigMap\nmetadata: {labels: {a: b}}\n")
			entries = append(entries, changeset.Entry{Kind: "Tenant", Subject: dir, Action: changeset.Update})
		}
	}
	b.Run("classifier", func(b *testing.B) {
		for b.Loop() {
			c := NewClassifier(prev, next)
			for _, e := range entries {
				if class, _ := c.Classify(e); class != Additive {
					b.Fatal(class)
				}
			}
		}
	})
	b.Run("per-entry", func(b *testing.B) {
		for b.Loop() {
			for _, e := range entries[:100] { // a tenth: the full set takes minutes
				if class, _ := Classify(e, prev, next); class != Additive {
					b.Fatal(class)
				}
			}
		}
	})
}
