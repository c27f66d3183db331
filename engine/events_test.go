package engine

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/publish"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

func TestEventRequest(t *testing.T) {
	last := &Outcome{State: &waldur.State{Offerings: []waldur.OfferingState{{Name: "a", Resources: []waldur.Resource{
		{UUID: "r1", ProjectUUID: "p1"}, {UUID: "r2", ProjectUUID: "p1"}, {UUID: "r3", ProjectUUID: "p2"}, {UUID: "r4", ProjectUUID: "p3"},
	}, OfferingUsers: []waldur.OfferingUser{{UUID: "u1", Username: "alice"}, {UUID: "u2"}, {UUID: "u3", Username: "carol"}},
		Teams: map[waldur.UUID][]waldur.TeamMember{"p2": {{OfferingUserUsername: "alice"}}, "p3": {{OfferingUserUsername: "alice"}, {OfferingUserUsername: "bob"}}}}}}}
	for _, tc := range []struct {
		name    string
		trigger events.Trigger
		last    *Outcome
		want    []waldur.UUID
		full    bool
		skip    bool
		why     events.FullCause
	}{
		{name: "an offering user's projects", trigger: events.Trigger{OfferingUsers: []waldur.UUID{"u1"}}, last: last, want: []waldur.UUID{"r3", "r4"}},
		{name: "an offering user not seen", trigger: events.Trigger{OfferingUsers: []waldur.UUID{"u9"}}, last: last, full: true, why: events.FullUnattributed},
		{name: "an offering user without a username", trigger: events.Trigger{OfferingUsers: []waldur.UUID{"u2"}}, last: last, full: true, why: events.FullUnattributed},
		{name: "an offering user in no team", trigger: events.Trigger{OfferingUsers: []waldur.UUID{"u3"}}, last: last, full: true, why: events.FullUnattributed},
		{name: "an event type read in full", trigger: events.Trigger{Full: true, Why: events.FullEventType}, last: last, full: true, why: events.FullEventType},
		{name: "resources", trigger: events.Trigger{Resources: []waldur.UUID{"r9"}}, last: last, want: []waldur.UUID{"r9"}},
		{name: "a project's resources", trigger: events.Trigger{Resources: []waldur.UUID{"r3"}, Projects: []waldur.UUID{"p1"}}, last: last,
			want: []waldur.UUID{"r1", "r2", "r3"}},
		{name: "full", trigger: events.Trigger{Resources: []waldur.UUID{"r1"}, Full: true}, last: last, full: true},
		{name: "no last run", trigger: events.Trigger{Resources: []waldur.UUID{"r1"}}, full: true, why: events.FullNoLastRun},
		{name: "a project without our resources", trigger: events.Trigger{Projects: []waldur.UUID{"p9"}}, last: last, skip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, ok := EventRequest(tc.trigger, tc.last)
			switch {
			case ok == tc.skip:
				t.Fatalf("ok = %v", ok)
			case tc.skip:
			case tc.full && req.Resources != nil:
				t.Errorf("want a full run, got %v", req.Resources)
			case !tc.full && !slices.Equal(req.Resources, tc.want):
				t.Errorf("resources %v, want %v", req.Resources, tc.want)
			case req.Full != tc.why:
				t.Errorf("full because %q, want %q", req.Full, tc.why)
			case !slices.Equal(req.OfferingUsers, tc.trigger.OfferingUsers) && !tc.full:
				t.Errorf("offering users %v, want %v", req.OfferingUsers, tc.trigger.OfferingUsers)
			}
			if ok && req.Command != "serve" {
				t.Errorf("command %q", req.Command)
			}
		})
	}
}

// refreshSource reads a full state and refreshes without reading anything.
type refreshSource struct{ st *waldur.State }

func (s refreshSource) Read(context.Context) (*waldur.State, error) { return s.st, nil }
func (s refreshSource) Refresh(_ context.Context, last *waldur.State, _ []waldur.UUID) (*waldur.State, error) {
	return last, nil
}

// seenFeedback records the resources each run's feedback was given.
type seenFeedback struct{ runs [][]waldur.UUID }

func (f *seenFeedback) Report(_ context.Context, st *waldur.State, _ *render.Result, _ *publish.Published, _ map[waldur.UUID]string, _ FeedbackOptions) (changeset.Result, error) {
	var ids []waldur.UUID
	for _, o := range st.Offerings {
		for _, r := range o.Resources {
			ids = append(ids, r.UUID)
		}
	}
	f.runs = append(f.runs, ids)
	return changeset.Result{}, nil
}

// A targeted run's feedback speaks of the resources it read, a full run's of
// every resource.
func TestTargetedRunFeedback(t *testing.T) {
	st := &waldur.State{Offerings: []waldur.OfferingState{{Name: "a", Resources: []waldur.Resource{{UUID: "r1"}, {UUID: "r2"}, {UUID: "r3"}}}}}
	fb := &seenFeedback{}
	e := New(Seams{Source: refreshSource{st}, Feedback: fb}, func(*waldur.State) (*render.Result, error) { return &render.Result{}, nil }, guard.DefaultOptions(), nil)
	ctx := context.Background()
	for _, req := range []Request{{Command: "serve"}, {Command: "serve", Resources: []waldur.UUID{"r2"}}, {Command: "serve"}} {
		if out := e.Run(ctx, req); out.Err != nil {
			t.Fatal(out.Err)
		}
	}
	want := [][]waldur.UUID{{"r1", "r2", "r3"}, {"r2"}, {"r1", "r2", "r3"}}
	if !slices.EqualFunc(fb.runs, want, slices.Equal) {
		t.Errorf("feedback saw %v, want %v", fb.runs, want)
	}
}

// guardFeedback records the guard each run's feedback was given.
type guardFeedback struct{ runs []guard.Options }

func (f *guardFeedback) Report(_ context.Context, _ *waldur.State, _ *render.Result, _ *publish.Published, _ map[waldur.UUID]string, o FeedbackOptions) (changeset.Result, error) {
	f.runs = append(f.runs, o.Guard)
	return changeset.Result{}, nil
}

// The feedback stage is bounded by the run's guard: the configured limits,
// lifted by --allow-mass-prune (AllowMassPrune) for that run only.
func TestFeedbackGetsTheRunsGuard(t *testing.T) {
	fb := &guardFeedback{}
	g := guard.Options{MaxFraction: 0.3, MinCount: 2}
	e := New(Seams{Source: refreshSource{&waldur.State{}}, Feedback: fb}, func(*waldur.State) (*render.Result, error) { return &render.Result{}, nil }, g, nil)
	for _, allow := range []bool{false, true, false} {
		if out := e.Run(context.Background(), Request{Command: "sync", AllowMassPrune: allow}); out.Err != nil {
			t.Fatal(out.Err)
		}
	}
	allowed := g
	allowed.Allow = true
	if want := []guard.Options{g, allowed, g}; !reflect.DeepEqual(fb.runs, want) {
		t.Errorf("feedback got %+v, want %+v", fb.runs, want)
	}
}

// readLog records which reads a source was asked for.
type readLog struct {
	st    *waldur.State
	calls []string
}

func (s *readLog) Read(context.Context) (*waldur.State, error) {
	s.calls = append(s.calls, "read")
	return s.st, nil
}

func (s *readLog) Refresh(_ context.Context, last *waldur.State, _ []waldur.UUID) (*waldur.State, error) {
	s.calls = append(s.calls, "refresh")
	return last, nil
}

func (s *readLog) RefreshUsers(context.Context, *waldur.State, []waldur.UUID) error {
	s.calls = append(s.calls, "users")
	return nil
}

// plainSource is a Source that can only read everything (a snapshot).
type plainSource struct{ log *readLog }

func (s plainSource) Read(ctx context.Context) (*waldur.State, error) { return s.log.Read(ctx) }

// TestOfferingUserRunReads: a run asked to look at offering users refreshes
// them with its resources when the source can refresh, and reads
// everything when it cannot (stale users would render stale members); a
// run a cause makes full reads everything.
func TestOfferingUserRunReads(t *testing.T) {
	st := &waldur.State{Offerings: []waldur.OfferingState{{Name: "a", Resources: []waldur.Resource{{UUID: "r1"}}}}}
	for _, tc := range []struct {
		name    string
		refresh bool
		req     Request
		want    []string
	}{
		{"users", true, Request{Resources: []waldur.UUID{"r1"}, OfferingUsers: []waldur.UUID{"u1"}}, []string{"read", "refresh", "users"}},
		{"a source that cannot refresh", false, Request{Resources: []waldur.UUID{"r1"}, OfferingUsers: []waldur.UUID{"u1"}}, []string{"read", "read"}},
		{"resources", true, Request{Resources: []waldur.UUID{"r1"}}, []string{"read", "refresh"}},
		{"a full event run", true, Request{Full: events.FullEventType}, []string{"read", "read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rl := &readLog{st: st}
			var src Source = rl
			if !tc.refresh {
				src = plainSource{rl}
			}
			e := New(Seams{Source: src}, func(*waldur.State) (*render.Result, error) { return &render.Result{}, nil }, guard.DefaultOptions(), nil)
			for _, req := range []Request{{Command: "serve"}, tc.req} {
				if out := e.Run(context.Background(), req); out.Err != nil {
					t.Fatal(out.Err)
				}
			}
			if !slices.Equal(rl.calls, tc.want) {
				t.Errorf("calls %v, want %v", rl.calls, tc.want)
			}
		})
	}
}
