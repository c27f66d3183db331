package waldur

import (
	"context"
	"fmt"
	"net/http"
)

// Event queues: how an agent gets a RabbitMQ queue of an offering's events.
// Waldur 8.1.0 and later hand out one queue per identity with register_queue
// (FeatureRegisterQueue); 8.0.x needs one event subscription per object type
// (register_event_subscription) and a queue per subscription, offering and
// type (event-subscriptions/<uuid>/create_queue/).

// QueueRegistration is register_queue's answer: the RabbitMQ user, queue and
// virtual host of the identity, and the object types it receives.
type QueueRegistration struct {
	RMQUsername           string   `json:"rmq_username"`
	QueueName             string   `json:"queue_name"`
	VHost                 string   `json:"vhost"`
	ObservableObjectTypes []string `json:"observable_object_types"`
}

// RegisterQueue registers (idempotently) the event queue of an identity for
// objectTypes, every type when nil (8.1.0 and later).
func (c *Client) RegisterQueue(ctx context.Context, identity UUID, objectTypes []string) (*QueueRegistration, error) {
	id, err := canonical("agent identity", identity)
	var out QueueRegistration
	if err == nil {
		// No types means every type; null is not a list Waldur accepts.
		body := map[string]any{}
		if objectTypes != nil {
			body["object_types"] = objectTypes
		}
		var r *reply
		r, err = c.do(ctx, call{kind: KindAgentQueue, method: http.MethodPost,
			path: "marketplace-site-agent-identities/" + id.Hex() + "/register_queue/", body: body})
		if err == nil {
			err = decodeJSON(r, &out)
		}
	}
	if err == nil && (out.QueueName == "" || out.VHost == "" || out.RMQUsername == "") {
		err = fmt.Errorf("the answer lacks rmq_username, queue_name or vhost")
	}
	if err != nil {
		return nil, fmt.Errorf("register the event queue of identity %s: %w", identity, err)
	}
	return &out, nil
}

// EventSubscription is an event subscription (the legacy path); its uuid is
// the STOMP login of its queues.
type EventSubscription struct {
	UUID     UUID   `json:"uuid"`
	UserUUID UUID   `json:"user_uuid"`
	Username string `json:"user_username"`
}

// EventSubscriptionQueue is a queue of an event subscription.
type EventSubscriptionQueue struct {
	UUID         UUID   `json:"uuid"`
	OfferingUUID string `json:"offering_uuid"`
	ObjectType   string `json:"object_type"`
	QueueName    string `json:"queue_name"`
	VHost        string `json:"vhost"`
}

// RegisterEventSubscription registers the identity's event subscription of
// one object type (the legacy path, before register_queue).
func (c *Client) RegisterEventSubscription(ctx context.Context, identity UUID, objectType string) (*EventSubscription, error) {
	id, err := canonical("agent identity", identity)
	var out EventSubscription
	if err == nil {
		var r *reply
		r, err = c.do(ctx, call{kind: KindAgentSubscription, method: http.MethodPost,
			path: "marketplace-site-agent-identities/" + id.Hex() + "/register_event_subscription/",
			body: map[string]string{"observable_object_type": objectType}})
		if err == nil {
			err = decodeJSON(r, &out)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("register the %s event subscription of identity %s: %w", objectType, identity, err)
	}
	return &out, nil
}

// CreateEventSubscriptionQueue creates (idempotently) the queue of a
// subscription for an offering and object type (the legacy path, 8.0.5+).
func (c *Client) CreateEventSubscriptionQueue(ctx context.Context, subscription, offering UUID, objectType string) (*EventSubscriptionQueue, error) {
	sub, err := canonical("event subscription", subscription)
	var off UUID
	if err == nil {
		off, err = canonical("offering", offering)
	}
	var out EventSubscriptionQueue
	if err == nil {
		var r *reply
		r, err = c.do(ctx, call{kind: KindEventQueue, method: http.MethodPost,
			path: "event-subscriptions/" + sub.Hex() + "/create_queue/",
			body: map[string]string{"offering_uuid": off.Dashed(), "object_type": objectType}})
		if err == nil {
			err = decodeJSON(r, &out)
		}
	}
	if err == nil && (out.QueueName == "" || out.VHost == "") {
		err = fmt.Errorf("the answer lacks queue_name or vhost")
	}
	if err != nil {
		return nil, fmt.Errorf("create the %s event queue of subscription %s: %w", objectType, subscription, err)
	}
	return &out, nil
}
