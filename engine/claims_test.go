package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestEveryVerbChecksNames: the engine every verb runs settles names two
// offerings claim: a ManagedNamespace and a Namespace of the same name on one
// cluster make a plain render exit 3, naming both resources, and the older
// resource keeps the name.
func TestEveryVerbChecksNames(t *testing.T) {
	dir := t.TempDir()
	cfgText := `offerings:
- name: Plain
  waldur_api_url: https://waldur.example.com/api/
  waldur_offering_uuid: 0f0f0f0f0f0f4f0f8f0f0f0f0f0f0001
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
  backend_settings:
    namespace_prefix: waldur-
- name: UT
  waldur_api_url: https://waldur.example.com/api/
  waldur_offering_uuid: 0f0f0f0f0f0f4f0f8f0f0f0f0f0f0002
  backend_type: k8s-ut-namespace
  backend_components:
    cpu: {accounting_type: limit}
  backend_settings:
    cr_namespace: waldur-system
    namespace_prefix: waldur-
`
	l, err := config.Parse([]byte(cfgText), filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	res := func(id, off, project string, created time.Time) waldur.Resource {
		return waldur.Resource{UUID: waldur.UUID(id), OfferingUUID: waldur.UUID(off), Slug: "genomics-pipeline", Name: "Genomics", State: waldur.ResourceOK,
			ProjectUUID: waldur.UUID(project), CustomerUUID: "c0570000000040008000000000000001", Created: created, Limits: waldur.Limits{"cpu": "1"}}
	}
	older := res("a0000000000040008000000000000001", "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0002", "b0b00000000040008000000000000001", day)
	younger := res("a0000000000040008000000000000002", "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0001", "b0b00000000040008000000000000002", day.Add(time.Hour))
	snap := &waldur.Snapshot{State: waldur.State{Offerings: []waldur.OfferingState{
		{Name: "Plain", OfferingUUID: "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0001", Resources: []waldur.Resource{younger}},
		{Name: "UT", OfferingUUID: "0f0f0f0f0f0f4f0f8f0f0f0f0f0f0002", Resources: []waldur.Resource{older}},
	}}}
	f, err := os.Create(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := waldur.WriteSnapshot(f, snap); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e, err := engine.FromConfig(l.Config, engine.Options{Snapshot: f.Name()})
	if err != nil {
		t.Fatal(err)
	}
	out := e.Run(context.Background(), engine.Request{Command: "render"})
	if failure.ExitCode(out.Err) != failure.ExitPartial {
		t.Fatalf("exit %d (%v), want %d", failure.ExitCode(out.Err), out.Err, failure.ExitPartial)
	}
	why := out.Result.Skipped[younger.UUID]
	if !strings.Contains(why, string(older.UUID)) || !strings.Contains(why, "UT") {
		t.Errorf("the younger resource: %q", why)
	}
	if _, ok := out.Result.Skipped[older.UUID]; ok || len(out.Result.Tenants) != 1 {
		t.Errorf("the older one lost too: tenants %d, skipped %v", len(out.Result.Tenants), out.Result.Skipped)
	}
}
