package events

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/waldur"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Event
		bad        bool
		actionable bool
	}{
		{name: "order", body: `{"object_type":"order","order_uuid":"0D000000-0000-4000-8000-000000000001","order_state":"pending-provider","resource_uuid":"4e500000000040008000000000000001"}`,
			want: Event{ObjectType: "order", Order: "0d000000000040008000000000000001", OrderState: "pending-provider", Resource: "4e500000000040008000000000000001"}, actionable: true},
		{name: "done order", body: `{"object_type":"order","order_uuid":"0d000000000040008000000000000001","order_state":"done"}`,
			want: Event{ObjectType: "order", Order: "0d000000000040008000000000000001", OrderState: "done"}},
		{name: "nested payload", body: `{"object_type":"resource","payload":{"resource_uuid":"4e500000000040008000000000000002"}}`,
			want: Event{ObjectType: "resource", Resource: "4e500000000040008000000000000002"}, actionable: true},
		{name: "user role", body: `{"object_type":"user_role","project_uuid":"9a000000000040008000000000000001","project_name":"P","granted":true}`,
			want: Event{ObjectType: "user_role", Project: "9a000000000040008000000000000001"}, actionable: true},
		{name: "unknown type", body: `{"object_type":"proposal"}`, want: Event{ObjectType: "proposal"}},
		{name: "not json", body: `{`, bad: true},
		{name: "no type", body: `{"order_uuid":"0d000000000040008000000000000001"}`, bad: true},
		{name: "bad uuid", body: `{"object_type":"resource","resource_uuid":"nope"}`, bad: true},
		{name: "order without uuid", body: `{"object_type":"order","order_state":"executing"}`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Decode([]byte(tc.body))
			if tc.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil || e != tc.want {
				t.Fatalf("Decode = %+v, %v; want %+v", e, err, tc.want)
			}
			if e.Actionable() != tc.actionable {
				t.Errorf("Actionable = %v", e.Actionable())
			}
		})
	}
}

func TestCoalescer(t *testing.T) {
	c := &Coalescer{Window: 100 * time.Millisecond}
	t0 := time.Now()
	for i, u := range []waldur.UUID{"b", "a", "b"} {
		c.Add(Event{ObjectType: TypeOrder, Resource: u}, t0.Add(time.Duration(i)*time.Millisecond))
	}
	c.Add(Event{ObjectType: TypeUserRole, Project: "p"}, t0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tr, ok := c.Next(ctx)
	if !ok || !slices.Equal(tr.Resources, []waldur.UUID{"a", "b"}) || !slices.Equal(tr.Projects, []waldur.UUID{"p"}) || tr.Full ||
		tr.Count() != 4 || !tr.First.Equal(t0) {
		t.Fatalf("trigger %+v", tr)
	}
	if d := time.Since(t0); d < 90*time.Millisecond {
		t.Errorf("the trigger came %s after the first event, before the window closed", d)
	}
	c.Add(Event{ObjectType: TypeOfferingUser}, time.Now())
	if tr, ok := c.Next(ctx); !ok || !tr.Full || tr.Why != FullUnattributed {
		t.Fatalf("an offering_user event naming no user: %+v, want a full sync", tr)
	}
	c.Add(Event{ObjectType: TypeOfferingUser, OfferingUser: "u"}, time.Now())
	if tr, ok := c.Next(ctx); !ok || tr.Full || !slices.Equal(tr.OfferingUsers, []waldur.UUID{"u"}) {
		t.Fatalf("an offering_user event: %+v, want the user to look at", tr)
	}
	c.Add(Event{ObjectType: TypeServiceAccount, Project: "p"}, time.Now())
	c.Add(Event{ObjectType: TypeCourseAccount, Project: "q"}, time.Now())
	if tr, ok := c.Next(ctx); !ok || tr.Full || !slices.Equal(tr.Projects, []waldur.UUID{"p", "q"}) {
		t.Fatalf("account events: %+v, want their projects to look at", tr)
	}
	c.Add(Event{ObjectType: TypeCourseAccount}, time.Now())
	if tr, ok := c.Next(ctx); !ok || !tr.Full || tr.Why != FullUnattributed {
		t.Fatalf("an account event without a project: %+v, want a full sync", tr)
	}
	c.Add(Event{ObjectType: TypeOfferingResourcesSync}, time.Now())
	if tr, ok := c.Next(ctx); !ok || !tr.Full || tr.Why != FullEventType {
		t.Fatalf("an offering_resources_sync event: %+v, want a full sync", tr)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, ok := c.Next(short); ok {
		t.Error("a trigger without events")
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{1, 0, time.Second}, {2, 0, 2 * time.Second}, {4, 0, 8 * time.Second}, {10, 0, time.Minute}, {1, 0.99, time.Second + 247500*time.Microsecond},
	} {
		if got := Backoff(tc.n, time.Second, time.Minute, tc.r); got != tc.want {
			t.Errorf("Backoff(%d, r=%v) = %s, want %s", tc.n, tc.r, got, tc.want)
		}
	}
}
