// Package events makes serve react to Waldur in seconds: it consumes the
// marketplace events Waldur Mastermind publishes to RabbitMQ, over STOMP 1.2
// on a WebSocket (RabbitMQ's web-STOMP plugin), the way Waldur's site agent
// does, and turns bursts of them into triggers naming the resources a sync
// should look at.
//
// A Consumer registers every offering's queue with Waldur (a Registrar:
// register_queue on 8.1.0 and later, the per-type event subscriptions of
// 8.0.x before), connects, subscribes to /amq/queue/<name> with client-
// individual acks and a prefetch of 1, decodes each message (Decode), acks
// it once it is in the pending trigger, and reconnects with exponential
// back-off and jitter when the connection drops. A queue that no longer
// exists or a refused login makes it register again before reconnecting.
// Events are coalesced (Coalescer) so that a storm gives a handful of
// syncs. Delivery is lossy by design on Waldur's side (queue TTL 1 h, at most
// 10,000 messages), so the interval sync stays the safety net.
//
// FromConfig (config.go) builds the Consumer's offerings from the config,
// each with its own Waldur client and the agent identity it registers as.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

// Object types the consumer subscribes to.
const (
	TypeOrder                 = "order"
	TypeResource              = "resource"
	TypeUserRole              = "user_role"
	TypeOfferingUser          = "offering_user"
	TypeServiceAccount        = "service_account"
	TypeCourseAccount         = "course_account"
	TypeOfferingResourcesSync = "offering_resources_sync"
)

// ObjectTypes are the object types the consumer registers for: what changes
// tenants (orders, resources, roles, offering users and accounts).
var ObjectTypes = []string{TypeOrder, TypeResource, TypeUserRole, TypeOfferingUser, TypeServiceAccount, TypeCourseAccount, TypeOfferingResourcesSync}

// LegacyObjectTypes are those registered on the 8.0.x path (one subscription
// and queue each): offering_resources_sync exists from 8.0.9 only.
var LegacyObjectTypes = []string{TypeOrder, TypeResource, TypeUserRole, TypeOfferingUser, TypeServiceAccount, TypeCourseAccount}

// fullSyncTypes are the object types whose events need a full sync: a
// targeted one refreshes the resources it names, their teams, the open
// orders, the accounts and the offering users an offering_user event names
// only. An account event names its project, whose resources it refreshes.
var fullSyncTypes = []string{TypeOfferingResourcesSync}

// settledOrderStates are order states no sync acts on (the site agent skips
// the same ones).
var settledOrderStates = []string{"done", "erred", "pending-consumer", "canceled", "rejected", "pending-project", "pending-start-date"}

// Event is one decoded message.
type Event struct {
	// ObjectType is the message's object_type.
	ObjectType string
	// OfferingUUID is the offering the message names, if any.
	OfferingUUID waldur.UUID
	// Resource is the resource the message is about, if it names one.
	Resource waldur.UUID
	// Project is the project a user_role or account message is about.
	Project waldur.UUID
	// OfferingUser is the offering user an offering_user message is about.
	OfferingUser waldur.UUID
	// Order and OrderState are an order message's order.
	Order      waldur.UUID
	OrderState string
}

// ErrMalformed is wrapped by Decode's errors.
var ErrMalformed = errors.New("malformed event")

// Decode parses a message body: a JSON object with object_type and the
// payload fields beside it (the form Mastermind sends); a nested "payload"
// object is read as well.
func Decode(body []byte) (Event, error) {
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		return Event{}, fmt.Errorf("%w: not a JSON object: %w", ErrMalformed, err)
	}
	if p, ok := raw["payload"].(map[string]any); ok {
		for k, v := range p {
			if _, set := raw[k]; !set {
				raw[k] = v
			}
		}
	}
	str := func(k string) string { s, _ := raw[k].(string); return strings.TrimSpace(s) }
	var e Event
	e.ObjectType = str("object_type")
	if e.ObjectType == "" {
		return Event{}, fmt.Errorf("%w: no object_type", ErrMalformed)
	}
	var err error
	uuid := func(keys ...string) waldur.UUID {
		for _, k := range keys {
			s := str(k)
			if s == "" {
				continue
			}
			u, perr := waldur.ParseUUID(s)
			if perr != nil {
				err = errors.Join(err, fmt.Errorf("%w: %s: %w", ErrMalformed, k, perr))
				return ""
			}
			return u
		}
		return ""
	}
	e.OfferingUUID = uuid("offering_uuid")
	e.Resource = uuid("resource_uuid", "marketplace_resource_uuid")
	e.Project = uuid("project_uuid")
	e.OfferingUser = uuid("offering_user_uuid")
	e.Order = uuid("order_uuid")
	e.OrderState = str("order_state")
	if e.OrderState == "" {
		e.OrderState = str("state")
	}
	if err != nil {
		return Event{}, err
	}
	if e.ObjectType == TypeOrder && e.Order == "" {
		return Event{}, fmt.Errorf("%w: an order event without order_uuid", ErrMalformed)
	}
	return e, nil
}

// Actionable reports whether the event asks for a sync: orders in a settled
// state and object types the tool does not subscribe to do not.
func (e Event) Actionable() bool {
	switch {
	case !slices.Contains(ObjectTypes, e.ObjectType):
		return false
	case e.ObjectType == TypeOrder:
		return !slices.Contains(settledOrderStates, e.OrderState)
	}
	return true
}

// Trigger is a coalesced burst of events: what the sync it starts should
// look at.
type Trigger struct {
	// Resources are the resources the events named, sorted and unique.
	Resources []waldur.UUID
	// Projects are the projects of events that named a project but no
	// resource (a role or an account changed in the project).
	Projects []waldur.UUID
	// OfferingUsers are the offering users offering_user events named,
	// sorted and unique: the run reads them again, with the resources of
	// the projects whose teams list them.
	OfferingUsers []waldur.UUID
	// Full asks for a full sync: some event named none of these, or is of
	// a type only a full sync reads (FullCause says which).
	Full bool
	// Why is why Full is set.
	Why FullCause
	// Events counts the events, by object type.
	Events map[string]int
	// First is when the oldest of them arrived (for the event → commit
	// latency).
	First time.Time
}

// add merges e into t.
func (t *Trigger) add(e Event, at time.Time) {
	if t.Events == nil {
		t.Events = map[string]int{}
	}
	t.Events[e.ObjectType]++
	if t.First.IsZero() || at.Before(t.First) {
		t.First = at
	}
	switch {
	case slices.Contains(fullSyncTypes, e.ObjectType):
		// What these change (the whole offering) is read only by a full
		// sync.
		t.Full, t.Why = true, FullEventType
	case e.ObjectType == TypeOfferingUser && e.OfferingUser != "":
		t.OfferingUsers = insertSorted(t.OfferingUsers, e.OfferingUser)
	case e.ObjectType == TypeOfferingUser:
		t.Full, t.Why = true, FullUnattributed
	case e.Resource != "":
		t.Resources = insertSorted(t.Resources, e.Resource)
	case e.Project != "":
		t.Projects = insertSorted(t.Projects, e.Project)
	default:
		t.Full, t.Why = true, FullUnattributed
	}
}

// FullCause is why an event-triggered run reads and renders the whole
// site instead of the part its events name; it is logged at debug.
type FullCause string

// The reasons an event run is a full run.
const (
	// FullEventType: an event of a type only a full sync reads
	// (offering_resources_sync).
	FullEventType FullCause = "event_type"
	// FullUnattributed: an event that names nothing the run can look at
	// alone (no resource, project or offering user; an offering user the
	// last run did not see, or without a username).
	FullUnattributed FullCause = "unattributed"
	// FullNoLastRun: there is no last run to refresh (the first run, a
	// new config, or a last run whose read failed).
	FullNoLastRun FullCause = "no_last_run"
)

func insertSorted(list []waldur.UUID, u waldur.UUID) []waldur.UUID {
	i, found := slices.BinarySearch(list, u)
	if found {
		return list
	}
	return slices.Insert(list, i, u)
}

// Count is the number of events in the trigger.
func (t *Trigger) Count() int {
	n := 0
	for _, c := range t.Events {
		n += c
	}
	return n
}
