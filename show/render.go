package show

import (
	"fmt"
	"slices"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// RenderJSON is the JSON output of render.
type RenderJSON struct {
	Out     string                   `json:"out,omitempty"`
	Summary map[changeset.Action]int `json:"summary"`
	Changes []changeset.Entry        `json:"changes"`
	Tenants []TenantJSON             `json:"tenants,omitempty"`
	Groups  []render.Group           `json:"groups"`
}

// TenantJSON is one tenant of RenderJSON.
type TenantJSON struct {
	Dir      string            `json:"dir"`
	Offering string            `json:"offering"`
	Resource waldur.UUID       `json:"resource"`
	Orders   []waldur.UUID     `json:"orders,omitempty"`
	Objects  []manifest.Object `json:"objects"`
}

// Render prints a render: the YAML stream (no directory), the per-tenant
// changes made to the directory, or either as JSON.
func (o Output) Render(dir string, out *engine.Outcome) error {
	res := out.Result
	if res == nil {
		return nil
	}
	changes := changeset.Set{Entries: slices.Clone(out.Report.Changes)}
	changes.Sort()
	if o.Data != nil {
		rep := RenderJSON{Out: dir, Summary: changes.Counts(), Changes: changes.Entries, Groups: res.Groups}
		if rep.Changes == nil {
			rep.Changes = []changeset.Entry{}
		}
		if dir == "" {
			for _, t := range res.Tenants {
				rep.Tenants = append(rep.Tenants, TenantJSON{Dir: t.Dir, Offering: t.Offering, Resource: t.Resource, Orders: t.Orders, Objects: t.Objects})
			}
		}
		return o.Data(rep)
	}
	if dir == "" {
		_, err := o.W.Write(res.Stream())
		return err
	}
	if pub := out.Published; pub != nil && !pub.Wrote {
		o.log().Info("output unchanged, nothing written", "dir", dir)
	}
	for _, e := range changes.Entries {
		if e.Action != changeset.Unchanged && e.Action != changeset.Skip {
			fmt.Fprintln(o.W, e.String())
		}
	}
	fmt.Fprintf(o.W, "%s: %s\n", dir, changes.Summary())
	return nil
}
