package keycloak_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/keycloak"
)

// The store scenarios: the memory kept between processes is untrusted.
func init() { scenarios = append(scenarios, storeScenarios...) }

// memStore is a keycloak.Store in the test's memory; saves counts the writes.
type memStore struct {
	data  []byte
	saves int
}

func (s *memStore) Load(context.Context) ([]byte, error) { return s.data, nil }
func (s *memStore) Save(ctx context.Context, d []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.data, s.saves = slices.Clone(d), s.saves+1
	return nil
}
func (s *memStore) String() string { return "test store" }

// decodeStored returns the JSON a stored state holds.
func decodeStored(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("stored state is not gzip: %v", err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

// state is a stored state (version 2) as the forgeries change it.
type state struct {
	Comment string           `json:"comment"`
	Version int              `json:"version"`
	Users   []map[string]any `json:"users"`
	Targets []struct {
		Key        string           `json:"key"`
		URL        string           `json:"url"`
		Realm      string           `json:"realm"`
		LastPass   int64            `json:"last_pass"`
		EventsFrom int64            `json:"events_from,omitempty"`
		EventsRead int64            `json:"events_read,omitempty"`
		Groups     []map[string]any `json:"groups"`
	} `json:"targets"`
}

// forge rewrites the stored state with change.
func (s *memStore) forge(t *testing.T, change func(*state)) {
	t.Helper()
	var st state
	if err := json.Unmarshal(decodeStored(t, s.data), &st); err != nil {
		t.Fatal(err)
	}
	change(&st)
	plain, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	s.data = buf.Bytes()
}

// stamp sets every time in a state to at: "just verified" when at is now.
func stamp(at time.Time) func(*state) {
	return func(st *state) {
		for i := range st.Targets {
			r := &st.Targets[i]
			r.LastPass = at.UnixMilli()
			if r.EventsFrom > 0 {
				r.EventsRead = at.UnixMilli()
			}
			for _, g := range r.Groups {
				g["verified"] = at.UnixMilli()
			}
		}
	}
}

func groupsIn(t *testing.T, s *memStore) int {
	t.Helper()
	n := 0
	s.forge(t, func(st *state) {
		for _, r := range st.Targets {
			n += len(r.Groups)
		}
	})
	return n
}

var storeScenarios = []scenario{
	{name: "store: a time in the future counts as never read", run: func(t *testing.T, e *env) {
		c, st := newClock(), &memStore{}
		e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		c.pass(time.Minute)
		honest := e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		n := groupsIn(t, st)
		if got := reads(honest)[keycloak.CallGetGroup]; got >= n {
			t.Fatalf("an honest memory a minute old re-read %d of %d groups", got, n)
		}
		st.forge(t, stamp(c.now.Add(365*24*time.Hour)))
		c.pass(time.Minute)
		r := e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		if got := reads(r)[keycloak.CallGetGroup]; got < n && !fullPass(r) {
			t.Errorf("a memory read a year from now re-read %d of %d groups: %v", got, n, r.Calls)
		}
	}},
	{name: "store: a memory forged to say just verified writes nothing on its strength", run: func(t *testing.T, e *env) {
		c, st := newClock(), &memStore{}
		e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		// The memory says every group was read now and that the admin
		// groups are empty; Keycloak has their members.
		st.forge(t, stamp(c.now))
		st.forge(t, func(s *state) {
			for _, r := range s.Targets {
				for _, g := range r.Groups {
					if strings.HasSuffix(g["path"].(string), "_admin") {
						delete(g, "members")
					}
				}
			}
		})
		r := e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		if n := keycloak.WriteAttempts(r.Calls); n != 0 {
			t.Errorf("the forged memory led to %d write attempts: %v\n%s", n, r.Calls, changes(r))
		}
		if reads(r)[keycloak.CallGetGroup] == 0 {
			t.Errorf("the groups the plan would change were not read again: %v", r.Calls)
		}
	}},
	{name: "store: a memory forged to say just verified still re-reads the share of one run interval", run: func(t *testing.T, e *env) {
		c, st := newClock(), &memStore{}
		e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		st.forge(t, stamp(c.now))
		r := e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		// orders.run_interval (15m) of verify_every (12h) of the groups, at least one.
		if got := reads(r)[keycloak.CallGetGroup]; got < 1 {
			t.Errorf("a memory saying every group was read just now postponed the rotation: %v", r.Calls)
		}
		// The same memory kept in the process is trusted: nothing to re-read.
		m := keycloak.NewStoredMemory(nil)
		e.mustRun(c.with(m))
		if r := e.mustRun(c.with(m)); reads(r)[keycloak.CallGetGroup] != 0 {
			t.Errorf("an in-process memory of this instant re-read groups: %v", r.Calls)
		}
	}},
	{name: "store: a pass cut by the deadline still saves what it did", fakeOnly: true, run: func(t *testing.T, e *env) {
		c, st := newClock(), &memStore{}
		e.fake.SetWriteLatency(100 * time.Millisecond)
		e.keycloak = ", concurrency: 1"
		cfg := e.config()
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		o := keycloak.Options{ClientOptions: fast}
		c.with(keycloak.NewStoredMemory(st))(&o)
		if _, err := keycloak.Reconcile(ctx, cfg, e.render(cfg), o); err == nil {
			t.Fatal("the pass was not cut by its deadline")
		}
		if st.saves != 1 {
			t.Errorf("the cut pass saved its memory %d times, want once", st.saves)
		}
	}},
	{name: "store: a dry run never writes the store", run: func(t *testing.T, e *env) {
		c, st := newClock(), &memStore{}
		dry := func(o *keycloak.Options) { o.DryRun = true }
		e.mustRun(c.with(keycloak.NewStoredMemory(st)), dry)
		if st.saves != 0 || st.data != nil {
			t.Fatalf("a dry run saved the memory (%d saves)", st.saves)
		}
		e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		before, saves := slices.Clone(st.data), st.saves
		e.leave(projectA, "carol")
		c.pass(time.Minute)
		e.mustRun(c.with(keycloak.NewStoredMemory(st)), dry)
		if st.saves != saves || !bytes.Equal(st.data, before) {
			t.Errorf("a dry run changed the stored memory")
		}
	}},
	{name: "store: a corrupt state means a full pass and one warning", run: func(t *testing.T, e *env) {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write([]byte("{not json"))
		_ = zw.Close()
		for _, bad := range [][]byte{gz.Bytes(), {0x1f, 0x8b, 1, 2, 3}, []byte("\x00garbage")} {
			c, st := newClock(), &memStore{data: bad}
			var log bytes.Buffer
			m := keycloak.NewStoredMemory(st)
			withLog := func(o *keycloak.Options) { o.Log = slog.New(slog.NewTextHandler(&log, nil)) }
			if r := e.mustRun(c.with(m), withLog); !fullPass(r) {
				t.Errorf("state %q: no full pass: %v", bad, r.Calls)
			}
			c.pass(time.Minute)
			e.mustRun(c.with(m), withLog)
			if n := strings.Count(log.String(), "test store is not valid"); n != 1 {
				t.Errorf("state %q: %d warnings, want 1:\n%s", bad, n, log.String())
			}
		}
	}},
	{name: "store: the state holds no credential or token", run: func(t *testing.T, e *env) {
		e.creds = e.kc.ServiceAccount(t, "manage-users")
		secret := regexp.MustCompile(`client_secret: "([^"]+)"`).FindStringSubmatch(e.creds)
		if secret == nil {
			t.Fatalf("no client secret in %s", e.creds)
		}
		c, st := newClock(), &memStore{}
		e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		plain := string(decodeStored(t, st.data))
		for _, s := range []string{secret[1], "eyJ", "Bearer"} {
			if strings.Contains(plain, s) {
				t.Errorf("the stored state holds %q", s)
			}
		}
	}},
	{name: "store: an admin-event position after the realm's newest event means a full pass", run: func(t *testing.T, e *env) {
		e.kc.EnableAdminEvents(t)
		e.creds = e.kc.ServiceAccount(t, "manage-users", "view-events", "view-realm")
		c, st := newClock(), &memStore{}
		e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		want := e.members("/ns_web_admin")
		st.forge(t, func(s *state) {
			for i := range s.Targets {
				s.Targets[i].EventsFrom = time.Now().Add(24 * time.Hour).UnixMilli()
			}
		})
		e.kc.RemoveMember(t, "/ns_web_admin", want[0])
		c.pass(time.Minute)
		r := e.mustRun(c.with(keycloak.NewStoredMemory(st)))
		if !fullPass(r) {
			t.Errorf("a forged event position was trusted: %v", r.Calls)
		}
		e.wantMembers("/ns_web_admin", want...)
	}},
}
