package waldur_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestAgentIdentityCalls: the identity calls against the in-repo Waldur
// (which validates them against the 8.1 subset): find by name and offering,
// create, a duplicate refused, update in place, register_service and
// register_processor returning the existing object on a repeat.
func TestAgentIdentityCalls(t *testing.T) {
	srv := waldurtest.New(t)
	c := clientFor(t, srv)
	ctx := context.Background()
	const other = waldur.UUID("0ff00000000040008000000000000099")

	got, err := c.FindAgentIdentity(ctx, offering, "waldur-gitops-x")
	if err != nil || got != nil {
		t.Fatalf("find before create: %v %v", got, err)
	}
	req := waldur.AgentIdentityRequest{Offering: offering, Name: "waldur-gitops-x", Version: "1.0.0",
		Dependencies: []waldur.AgentDependency{{Package: "go", Version: "go1.25"}}}
	id, err := c.CreateAgentIdentity(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != req.Name || id.Version != "1.0.0" || id.Compatibility == nil || id.Compatibility.Status != waldur.AgentCompatible {
		t.Errorf("created %+v", id)
	}
	if _, err := c.CreateAgentIdentity(ctx, req); !isStatus(err, http.StatusBadRequest) {
		t.Errorf("duplicate create: %v, want 400", err)
	}
	if other, err := c.FindAgentIdentity(ctx, other, req.Name); err != nil || other != nil {
		t.Errorf("find in another offering: %v %v", other, err)
	}
	req.Version = "1.1.0"
	up, err := c.UpdateAgentIdentity(ctx, id.UUID, req)
	if err != nil || up.UUID != id.UUID || up.Version != "1.1.0" {
		t.Fatalf("update: %+v %v", up, err)
	}

	svc, err := c.RegisterAgentService(ctx, id.UUID, "sync", "sync")
	if err != nil || !svc.Created || svc.Name != "sync" || svc.Mode != "sync" || len(svc.Processors) != 0 {
		t.Fatalf("first register_service: %+v %v", svc, err)
	}
	p, err := c.RegisterAgentProcessor(ctx, svc.UUID, waldur.AgentProcessor{Name: "waldur-gitops", BackendType: "namespace", BackendVersion: "1.1.0"})
	if err != nil || p.BackendType != "namespace" {
		t.Fatalf("register_processor: %+v %v", p, err)
	}
	again, err := c.RegisterAgentService(ctx, id.UUID, "sync", "sync")
	if err != nil || again.Created || again.UUID != svc.UUID || len(again.Processors) != 1 || again.Processors[0].UUID != p.UUID {
		t.Fatalf("second register_service: %+v %v", again, err)
	}
	found, err := c.FindAgentIdentity(ctx, offering, req.Name)
	if err != nil || found == nil || found.UUID != id.UUID || len(found.Services) != 1 || found.Services[0].UUID != svc.UUID {
		t.Fatalf("find after register: %+v %v", found, err)
	}
	if i, s, n := srv.AgentObjects(); i != 1 || s != 1 || n != 1 {
		t.Errorf("stored %d identities, %d services, %d processors", i, s, n)
	}
}

func isStatus(err error, code int) bool {
	var ae *waldur.APIError
	return errors.As(err, &ae) && ae.StatusCode == code
}
