package waldurtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// Event delivery, as Waldur Mastermind does it: an agent registers a queue
// (register_queue on 8.1; register_event_subscription and create_queue on
// 8.0), Waldur creates the RabbitMQ vhost, user (password: the agent's API
// token) and durable queue, and publishes a JSON message with object_type
// and the payload fields to every queue registered for the object's
// offering and type. The fake does this against a real broker given with
// WithEventBroker (internal/testenv/rabbittest); without one the registration
// endpoints answer as usual and nothing is published.
//
// Messages are published for orders (AddOrder and every state change the
// provider makes: order_uuid, order_state, resource_uuid, offering_uuid),
// resources (AddResource: resource_uuid, offering_uuid) and teams (SetTeam:
// user_role with project_uuid); Publish sends any body.

// EventBroker is the RabbitMQ the fake provisions queues on and publishes to.
type EventBroker interface {
	// Provision creates vhost, user (with password) and the durable queue.
	Provision(ctx context.Context, vhost, user, password, queue string) error
	// Publish sends body to queue on vhost (a STOMP SEND to /amq/queue/<queue>).
	Publish(ctx context.Context, vhost, queue string, body []byte) error
}

// WithEventBroker makes the fake provision registered queues on b and
// publish events to them.
func WithEventBroker(b EventBroker) Option { return func(s *Server) { s.ev.broker = b } }

// EventQueue is a queue an agent registered.
type EventQueue struct {
	// Offering is the offering's uuid (hex); ObjectTypes the types routed
	// to the queue.
	Offering    string
	ObjectTypes []string
	VHost, Name string
	// Login is the RabbitMQ user of the queue.
	Login string
}

// eventState is the fake's event side.
type eventState struct {
	broker   EventBroker
	vhost    string // one per fake, so that fakes can share a broker
	user     string
	password string // "" → the API token
	queues   []EventQueue
	subs     *collection
	outbox   []outMsg
	// PublishErrors counts failed publishes.
	publishErrors int
}

type outMsg struct {
	vhost, queue string
	body         []byte
}

func (e *eventState) init() {
	if e.vhost == "" {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		e.vhost = "waldurtest-" + hex.EncodeToString(b)
		e.user = "agent-" + hex.EncodeToString(b)
		e.subs = newCollection()
	}
}

// SetEventPassword makes later registrations give the RabbitMQ user this
// password instead of the API token (a broker out of step with Waldur: the
// agent's STOMP login is refused).
func (s *Server) SetEventPassword(pw string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ev.init()
	s.ev.password = pw
}

// EventQueues returns the registered queues.
func (s *Server) EventQueues() []EventQueue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ev.queues)
}

// EventPublishErrors counts the publishes that failed.
func (s *Server) EventPublishErrors() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ev.publishErrors
}

// Publish sends body to every queue registered for the offering (hex or
// dashed uuid) and objectType.
func (s *Server) Publish(offering, objectType string, body []byte) {
	s.mu.Lock()
	s.enqueue(offering, objectType, body)
	s.mu.Unlock()
	s.flushEvents()
}

// publishEvent queues a message of objectType for the offering's queues;
// it runs with s.mu held and is sent by flushEvents once it is released.
func (s *Server) publishEvent(offering, objectType string, payload object) {
	if s.ev.broker == nil || len(s.ev.queues) == 0 {
		return
	}
	msg := object{"object_type": objectType}
	for k, v := range payload {
		msg[k] = v
	}
	b, err := json.Marshal(msg)
	if err != nil {
		s.t.Errorf("waldurtest: encode event: %v", err)
		return
	}
	s.enqueue(offering, objectType, b)
}

func (s *Server) enqueue(offering, objectType string, body []byte) {
	off := uuidKey(offering)
	for _, q := range s.ev.queues {
		if q.Offering == off && (len(q.ObjectTypes) == 0 || slices.Contains(q.ObjectTypes, objectType)) {
			s.ev.outbox = append(s.ev.outbox, outMsg{q.VHost, q.Name, body})
		}
	}
}

// flushEvents publishes what is queued, in order, outside s.mu.
func (s *Server) flushEvents() {
	s.mu.Lock()
	out, b := s.ev.outbox, s.ev.broker
	s.ev.outbox = nil
	s.mu.unlockRead() // the outbox is not listed
	if b == nil {
		return
	}
	for _, m := range out {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := b.Publish(ctx, m.vhost, m.queue, m.body)
		cancel()
		if err != nil {
			// Mastermind's delivery is lossy too: log it and go on.
			s.t.Logf("waldurtest: publish to %s: %v", m.queue, err)
			s.mu.Lock()
			s.ev.publishErrors++
			s.mu.Unlock()
		}
	}
}

// orderEvent publishes an order's state.
func (s *Server) orderEvent(o object) {
	s.publishEvent(uuidKey(o["offering_uuid"]), "order", object{
		"order_uuid": o["uuid"], "order_state": o["state"], "offering_uuid": o["offering_uuid"],
		"resource_uuid": o["marketplace_resource_uuid"], "order_type": o["type"],
	})
}

// provision creates the broker side of a queue (with s.mu held).
func (s *Server) provision(login, queue string) *response {
	if s.ev.broker == nil {
		return nil
	}
	pw := s.ev.password
	if pw == "" {
		pw = s.token
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.ev.broker.Provision(ctx, s.ev.vhost, login, pw, queue); err != nil {
		s.t.Logf("waldurtest: provision queue %s: %v", queue, err)
		return detail(http.StatusInternalServerError, "RabbitMQ is not available.")
	}
	return nil
}

func (s *Server) addQueue(q EventQueue) {
	for i, have := range s.ev.queues {
		if have.Name == q.Name && have.VHost == q.VHost {
			s.ev.queues[i] = q
			return
		}
	}
	s.ev.queues = append(s.ev.queues, q)
}

func (s *Server) registerQueue(_ *http.Request, body []byte, op *operation) *response {
	s.ev.init()
	ident, ok := s.data.agent.identities.get(op.Params["uuid"])
	if !ok {
		return notFound()
	}
	var req struct {
		ObjectTypes []string `json:"object_types"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return detail(http.StatusBadRequest, "JSON parse error.")
		}
	}
	name := "consumer_" + uuidKey(ident["uuid"])
	status := http.StatusCreated
	if slices.ContainsFunc(s.ev.queues, func(q EventQueue) bool { return q.Name == name }) {
		status = http.StatusOK
	}
	if bad := s.provision(s.ev.user, name); bad != nil {
		return bad
	}
	types := req.ObjectTypes
	if types == nil {
		types = []string{}
	}
	s.addQueue(EventQueue{Offering: uuidKey(ident["offering"]), ObjectTypes: slices.Clone(types), VHost: s.ev.vhost, Name: name, Login: s.ev.user})
	return jsonResponse(status, object{"rmq_username": s.ev.user, "queue_name": name, "vhost": s.ev.vhost, "observable_object_types": types})
}

func (s *Server) registerEventSubscription(_ *http.Request, body []byte, op *operation) *response {
	s.ev.init()
	ident, req, bad := target(s.data.agent.identities, op, body)
	if bad != nil {
		return bad
	}
	typ, _ := req["observable_object_type"].(string)
	if o := s.ev.subs.registered("identity", ident["uuid"], "object_type", typ); o != nil {
		return jsonResponse(http.StatusOK, subscriptionWire(o))
	}
	id := s.data.id("", tagEventSubscription, s.data.next())
	t := now()
	o := object{"uuid": id, "url": s.data.base + "/api/event-subscriptions/" + id + "/",
		"user": s.data.base + "/api/users/" + s.ev.vhost + "/", "user_uuid": "5eed0000000040008000" + s.ev.vhost[len(s.ev.vhost)-12:],
		"user_username": "waldurtest.agent", "user_full_name": "waldurtest agent", "created": t, "modified": t,
		"source_ip": nil, "description": "", "observable_objects": []object{{"object_type": typ, "offering_uuid": ident["offering"]}},
		"identity": ident["uuid"], "object_type": typ}
	s.ev.subs.put(o)
	return jsonResponse(http.StatusCreated, subscriptionWire(o))
}

func subscriptionWire(o object) object {
	out := object{}
	for k, v := range o {
		if k != "identity" && k != "object_type" {
			out[k] = v
		}
	}
	return out
}

func (s *Server) createEventQueue(_ *http.Request, body []byte, op *operation) *response {
	s.ev.init()
	sub, req, bad := target(s.ev.subs, op, body)
	if bad != nil {
		return bad
	}
	off := uuidKey(req["offering_uuid"])
	typ, _ := req["object_type"].(string)
	subID := uuidKey(sub["uuid"])
	name := "subscription_" + subID + "_offering_" + off + "_" + typ
	if bad := s.provision(subID, name); bad != nil {
		return bad
	}
	s.addQueue(EventQueue{Offering: off, ObjectTypes: []string{typ}, VHost: s.ev.vhost, Name: name, Login: subID})
	return jsonResponse(http.StatusCreated, object{"uuid": s.data.id("", tagEventQueue, s.data.next()),
		"url": s.data.base + "/api/event-subscription-queues/" + name + "/", "event_subscription": sub["url"],
		"event_subscription_uuid": subID, "offering_uuid": off, "object_type": typ, "queue_name": name,
		"vhost": s.ev.vhost, "created": now()})
}

func (s *Server) deleteEventSubscription(_ *http.Request, _ []byte, op *operation) *response {
	if s.ev.subs == nil {
		return notFound()
	}
	if _, ok := s.ev.subs.get(op.Params["uuid"]); !ok {
		return notFound()
	}
	kept := newCollection()
	for _, o := range s.ev.subs.items {
		if uuidKey(o["uuid"]) != uuidKey(op.Params["uuid"]) {
			kept.put(o)
		}
	}
	s.ev.subs = kept
	return emptyResponse(http.StatusNoContent)
}
