package events

import (
	"context"
	"fmt"

	"github.com/waldur/waldur-gitops/waldur"
)

// Queue is one queue to consume: the virtual host, the STOMP login Waldur
// handed out with it, and its name. The passcode is the offering's API
// token, kept by the Consumer.
type Queue struct {
	// Login is the RabbitMQ user, VHost its virtual host, Name the queue.
	Login, VHost, Name string
	// ObjectTypes are the object types Waldur routes to it.
	ObjectTypes []string
}

// Registrar registers an offering's event queues with Waldur and answers
// where to consume them. It is called at start and again when a queue is
// gone or the login is refused.
type Registrar interface {
	Register(ctx context.Context) ([]Queue, error)
}

// WaldurRegistrar registers with a Waldur server as the site agent identity
// Identity of the offering, once the offering is found: register_queue (8.1.0 and later, one queue) or,
// on an older server or when register_queue answers 404, one event
// subscription and queue per object type (8.0.x).
type WaldurRegistrar struct {
	// Client returns the offering's Waldur client.
	Client func() (*waldur.Client, error)
	// Offering is the offering's UUID.
	Offering waldur.UUID
	// Identity is the request that finds or creates the agent identity (the
	// one the agent stage registers).
	Identity waldur.AgentIdentityRequest
}

// Register implements Registrar.
func (r *WaldurRegistrar) Register(ctx context.Context) ([]Queue, error) {
	c, err := r.Client()
	if err != nil {
		return nil, err
	}
	// An offering Waldur does not know gets no identity.
	if err := c.CheckOffering(ctx, r.Offering); err != nil {
		return nil, fmt.Errorf("register for events: %w", err)
	}
	id, err := c.FindAgentIdentity(ctx, r.Offering, r.Identity.Name)
	if err == nil && id == nil {
		id, err = c.CreateAgentIdentity(ctx, r.Identity)
	}
	if err != nil {
		return nil, fmt.Errorf("register for events: %w", err)
	}
	if c.Supports(ctx, waldur.FeatureRegisterQueue) {
		q, err := c.RegisterQueue(ctx, id.UUID, ObjectTypes)
		switch {
		case err == nil:
			return []Queue{{Login: q.RMQUsername, VHost: q.VHost, Name: q.QueueName, ObjectTypes: q.ObservableObjectTypes}}, nil
		case !waldur.IsNotFound(err):
			return nil, fmt.Errorf("register for events: %w", err)
		}
		// A server that says 8.1 but lacks register_queue: the 8.0 path.
	}
	var out []Queue
	for _, t := range LegacyObjectTypes {
		sub, err := c.RegisterEventSubscription(ctx, id.UUID, t)
		if err != nil {
			return nil, fmt.Errorf("register for events (8.0 event subscriptions): %w", err)
		}
		q, err := c.CreateEventSubscriptionQueue(ctx, sub.UUID, r.Offering, t)
		if err != nil {
			return nil, fmt.Errorf("register for events (8.0 event subscriptions): %w", err)
		}
		out = append(out, Queue{Login: sub.UUID.Hex(), VHost: q.VHost, Name: q.QueueName, ObjectTypes: []string{t}})
	}
	return out, nil
}
