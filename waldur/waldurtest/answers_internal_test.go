package waldurtest

import (
	"context"
	"testing"

	"github.com/waldur/waldur-gitops/waldur"
)

// TestAnswerCache: with WithAnswerCache a read is answered again from what
// it was answered before while nothing changed (a change made behind the
// server's back stays unseen, which is how the test tells), a repeated
// registration counts as nothing changed, and every change a request or
// an exported method makes is seen by the next read. Without the option
// every read sees the state as it is.
func TestAnswerCache(t *testing.T) {
	const offering = waldur.UUID("7d1f3b2c9a4e4c0f8b6a5e2d1c0b9a87")
	ctx := context.Background()
	for _, cached := range []bool{true, false} {
		var opts []Option
		if cached {
			opts = append(opts, WithAnswerCache())
		}
		srv := New(t, opts...)
		id := srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "a", Name: "before", State: waldur.ResourceOK})
		o := waldur.DefaultClientOptions()
		o.BaseURL, o.Token, o.RetryMax = srv.URL(), srv.Token(), 0
		c, err := waldur.NewClient(o)
		if err != nil {
			t.Fatal(err)
		}
		name := func() string {
			t.Helper()
			r, err := c.GetResource(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return r.Name
		}
		stored := func() object { o, _ := srv.data.resources.get(string(id)); return o }
		behindTheBack := func(v string) {
			srv.mu.Lock()
			stored()["name"] = v
			srv.mu.unlockRead()
		}
		agent, err := c.CreateAgentIdentity(ctx, waldur.AgentIdentityRequest{Offering: offering, Name: "x", Version: "1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.RegisterAgentService(ctx, agent.UUID, "sync", "sync"); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name   string
			change func()
			seen   string // what the next read answers, with the cache
		}{
			{"first read", func() {}, "before"},
			{"changed behind its back", func() { behindTheBack("hidden") }, "before"},
			{"registered again", func() { _, _ = c.RegisterAgentService(ctx, agent.UUID, "sync", "sync") }, "before"},
			{"registered in another mode", func() { _, _ = c.RegisterAgentService(ctx, agent.UUID, "sync", "event") }, "hidden"},
			{"changed behind its back again", func() { behindTheBack("hidden again") }, "hidden"},
			{"a write request", func() {
				if err := c.SetResourceBackendMetadata(ctx, id, map[string]any{"k": "v"}); err != nil {
					t.Fatal(err)
				}
			}, "hidden again"},
			{"behind its back, then an exported method", func() {
				behindTheBack("last")
				srv.AddResource(waldur.Resource{OfferingUUID: offering, Slug: "b", State: waldur.ResourceOK})
			}, "last"},
		}
		for _, st := range steps {
			st.change()
			want := st.seen
			if !cached {
				want = stored()["name"].(string)
			}
			if got := name(); got != want {
				t.Errorf("cache %v, %s: read %q, want %q", cached, st.name, got, want)
			}
		}
	}
}
