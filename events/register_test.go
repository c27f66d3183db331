package events_test

import (
	"context"
	"testing"

	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// TestRegisterNeedsTheOffering: registering for the events of an offering
// Waldur does not know fails naming it, and creates no agent identity.
func TestRegisterNeedsTheOffering(t *testing.T) {
	w := waldurtest.New(t)
	c, err := waldur.NewClient(waldur.ClientOptions{BaseURL: w.URL(), Token: w.Token()})
	if err != nil {
		t.Fatal(err)
	}
	r := &events.WaldurRegistrar{Client: func() (*waldur.Client, error) { return c, nil }, Offering: offeringUUID,
		Identity: waldur.AgentIdentityRequest{Offering: offeringUUID, Name: "waldur-gitops-hpc"}}
	if _, err := r.Register(context.Background()); !waldur.IsOfferingNotFound(err) {
		t.Fatalf("register: %v, want the offering not found", err)
	}
	if i, s, p := w.AgentObjects(); i+s+p != 0 {
		t.Errorf("%d identities, %d services, %d processors registered", i, s, p)
	}
}
