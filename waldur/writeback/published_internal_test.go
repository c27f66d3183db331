package writeback

import (
	"fmt"
	"testing"

	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// hasTenant answers as Has, and a tenant whose kustomization is in place as
// rendered is found without reading the tree's other tenants.
func TestHasTenant(t *testing.T) {
	const dir = "plain/cluster/waldur-a"
	id := waldur.UUID("a0000000000040008000000000000001")
	kust := func(id waldur.UUID, name string) []byte {
		return fmt.Appendf(nil, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  annotations:\n    waldur.io/resource-uuid: %s\n  name: %s\n", id, name)
	}
	tenant := &render.Tenant{Dir: dir, Resource: id, Files: []render.File{{Name: render.KustomizationFile, Data: kust(id, "waldur-a")}}}
	others := func() render.Tree {
		tr := render.Tree{}
		for i := range 2000 {
			tr[fmt.Sprintf("plain/cluster/t%d/%s", i, render.KustomizationFile)] = kust(waldur.UUID(fmt.Sprintf("b%031d", i)), fmt.Sprint("t", i))
		}
		return tr
	}
	for _, c := range []struct {
		name   string
		in     []byte // the kustomization at dir; nil: none
		want   bool
		cheap  bool
		failed bool
	}{
		{name: "as rendered", in: kust(id, "waldur-a"), want: true, cheap: true},
		{name: "edited, same resource", in: kust(id, "renamed"), want: true},
		{name: "another resource's", in: kust("c0000000000040008000000000000001", "waldur-a"), want: false},
		{name: "absent", want: false},
		{name: "refused", want: true, failed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			after := others()
			if c.in != nil {
				after[dir+"/"+render.KustomizationFile] = c.in
			}
			p := &Published{After: after}
			if c.failed {
				p.Failed = map[waldur.UUID]string{id: "refused"}
			}
			if got := p.hasTenant(tenant); got != c.want {
				t.Errorf("hasTenant = %t, want %t", got, c.want)
			}
			if got := (&Published{After: after, Failed: p.Failed}).Has(id); got != c.want {
				t.Errorf("Has = %t, want %t", got, c.want)
			}
			if c.cheap {
				allocs := testing.AllocsPerRun(3, func() { (&Published{After: after}).hasTenant(tenant) })
				if allocs > 1 {
					t.Errorf("%.0f allocations for a tenant in place as rendered; want the tree left unread", allocs)
				}
			}
		})
	}
}
