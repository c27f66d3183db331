package waldur_test

import (
	"context"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// The queue registrations against the fake (validated against the 8.1
// contract): register_queue is idempotent and names consumer_<identity>;
// the 8.0 path gives one subscription and queue per object type; an unknown
// identity is a 404 the caller can test for.
func TestEventQueueCalls(t *testing.T) {
	srv := waldurtest.New(t)
	c := clientFor(t, srv)
	ctx := context.Background()
	id, err := c.CreateAgentIdentity(ctx, waldur.AgentIdentityRequest{Offering: offering, Name: "waldur-gitops-x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func() (string, string, error)
		want string
	}{
		{name: "register_queue", want: "consumer_" + string(id.UUID), run: func() (string, string, error) {
			q, err := c.RegisterQueue(ctx, id.UUID, []string{"order", "resource"})
			if err != nil {
				return "", "", err
			}
			return q.QueueName, q.VHost + " " + q.RMQUsername + " " + strings.Join(q.ObservableObjectTypes, ","), nil
		}},
		{name: "register_queue again", want: "consumer_" + string(id.UUID), run: func() (string, string, error) {
			q, err := c.RegisterQueue(ctx, id.UUID, []string{"order", "resource"})
			if err != nil {
				return "", "", err
			}
			return q.QueueName, q.VHost + " " + q.RMQUsername + " " + strings.Join(q.ObservableObjectTypes, ","), nil
		}},
		{name: "8.0 subscription and queue", want: "_offering_" + string(offering) + "_order", run: func() (string, string, error) {
			sub, err := c.RegisterEventSubscription(ctx, id.UUID, "order")
			if err != nil {
				return "", "", err
			}
			q, err := c.CreateEventSubscriptionQueue(ctx, sub.UUID, offering, "order")
			if err != nil {
				return "", "", err
			}
			return q.QueueName, q.VHost, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, rest, err := tc.run()
			if err != nil || !strings.Contains(name, tc.want) || strings.TrimSpace(rest) == "" {
				t.Fatalf("queue %q (%s), %v; want a name with %q", name, rest, err, tc.want)
			}
		})
	}
	if _, err := c.RegisterQueue(ctx, "0ff00000000040008000000000000077", nil); !waldur.IsNotFound(err) {
		t.Errorf("unknown identity: %v, want a 404", err)
	}
	if qs := srv.EventQueues(); len(qs) != 2 {
		t.Errorf("queues %+v, want 2", qs)
	}
}
