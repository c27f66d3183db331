package writeback_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/engine"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
	"github.com/waldur/waldur-gitops/waldur/writeback"
)

const offeringUUID = "0ff00000000040008000000000000042"

// agentFixture is an announcer over a fresh in-repo Waldur, logging to a buffer.
type agentFixture struct {
	srv *waldurtest.Server
	ann *writeback.AgentAnnouncer
	log *bytes.Buffer
	cfg *config.Config
}

func newAgentFixture(t *testing.T, opts ...waldurtest.Option) *agentFixture {
	t.Helper()
	srv := waldurtest.New(t, opts...)
	t.Setenv("WALDUR_API_TOKEN", srv.Token())
	l, err := config.Parse([]byte(`offerings:
- name: Plain
  waldur_api_url: `+srv.URL()+`
  waldur_offering_uuid: `+offeringUUID+`
  backend_type: namespace
  backend_components:
    cpu: {accounting_type: limit}
`), filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	src := &source.API{Offerings: l.Offerings, Log: log}
	return &agentFixture{srv: srv, log: &buf, cfg: l.Config,
		ann: &writeback.AgentAnnouncer{Source: src, Offerings: l.Offerings, Log: log}}
}

func (f *agentFixture) announce(t *testing.T, mode string, dryRun bool) (changeset.Set, map[string]int) {
	t.Helper()
	read := &waldur.State{Offerings: []waldur.OfferingState{{Name: "Plain", OfferingUUID: offeringUUID}}}
	cs, calls, err := changeset.Apart(f.ann.Announce(context.Background(), read, mode, dryRun))
	if err != nil {
		t.Fatalf("announce %s: %v (the agent stage must never fail)", mode, err)
	}
	return cs, calls
}

func entryStrings(cs changeset.Set) []string {
	out := []string{}
	for _, e := range cs.Entries {
		if e.Stage != "agent" || e.Offering != "Plain" {
			out = append(out, "wrong stage or offering: "+e.String())
			continue
		}
		out = append(out, e.String())
	}
	return out
}

func wantEntries(t *testing.T, what string, cs changeset.Set, want ...string) {
	t.Helper()
	got := entryStrings(cs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: entries\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAgentAnnouncerRegistersOnce: the first sync registers the identity
// (name, version, dependencies), the sync service and the processor naming
// the backend type; the second creates and updates nothing; an apply adds
// its own service; render and keycloak announce nothing.
func TestAgentAnnouncerRegistersOnce(t *testing.T) {
	f := newAgentFixture(t)
	cs, calls := f.announce(t, "sync", false)
	wantEntries(t, "first sync", cs,
		"+ AgentIdentity waldur-gitops-Plain",
		"+ AgentService waldur-gitops-Plain/sync",
		"+ AgentProcessor waldur-gitops-Plain/sync/waldur-gitops")
	if calls[waldur.KindAgentCreate] != 1 || calls[waldur.KindAgentService] != 1 || calls[waldur.KindAgentProcessor] != 1 {
		t.Errorf("first sync calls %v", calls)
	}
	if i, s, p := f.srv.AgentObjects(); i != 1 || s != 1 || p != 1 {
		t.Fatalf("after the first sync: %d identities, %d services, %d processors; want 1 each", i, s, p)
	}
	id := f.srv.AgentIdentities()[0]
	if id.Name != "waldur-gitops-Plain" || string(id.Offering) != offeringUUID || id.Version != version.Version {
		t.Errorf("identity %+v", id)
	}
	if len(id.Dependencies) == 0 || id.Dependencies[0].Package != "go" {
		t.Errorf("dependencies %+v: want the go runtime first", id.Dependencies)
	}
	for _, d := range id.Dependencies {
		if d.Version == "" {
			t.Errorf("dependency %s without a version", d.Package)
		}
	}
	if len(id.Services) != 1 || id.Services[0].Name != "sync" || id.Services[0].Mode != "sync" {
		t.Errorf("services %+v", id.Services)
	}
	if p := f.srv.AgentProcessors()[0]; p.Name != "waldur-gitops" || p.BackendType != "namespace" || p.BackendVersion != version.Version {
		t.Errorf("processor %+v", p)
	}

	cs, calls = f.announce(t, "sync", false)
	wantEntries(t, "second sync", cs)
	if calls[waldur.KindAgentCreate]+calls[waldur.KindAgentUpdate]+calls[waldur.KindAgentProcessor] != 0 {
		t.Errorf("second sync wrote %v", calls)
	}
	if i, s, p := f.srv.AgentObjects(); i != 1 || s != 1 || p != 1 {
		t.Errorf("after the second sync: %d identities, %d services, %d processors; want 1 each", i, s, p)
	}

	cs, _ = f.announce(t, "apply", false)
	wantEntries(t, "apply", cs,
		"+ AgentService waldur-gitops-Plain/apply",
		"+ AgentProcessor waldur-gitops-Plain/apply/waldur-gitops")
	if i, s, p := f.srv.AgentObjects(); i != 1 || s != 2 || p != 2 {
		t.Errorf("after apply: %d identities, %d services, %d processors; want 1, 2, 2", i, s, p)
	}

	before := f.srv.Requests("/api/marketplace-site-agent")
	for _, mode := range []string{"render", "keycloak"} {
		cs, _ = f.announce(t, mode, false)
		wantEntries(t, mode, cs)
	}
	if n := f.srv.Requests("/api/marketplace-site-agent") - before; n != 0 {
		t.Errorf("render and keycloak sent %d agent requests", n)
	}
}

// TestAgentAnnouncerUpdatesAChangedIdentity: an identity registered by
// another version is updated in place, not duplicated.
func TestAgentAnnouncerUpdatesAChangedIdentity(t *testing.T) {
	f := newAgentFixture(t)
	f.announce(t, "serve", false)
	old := version.Version
	version.Version = "0.0.1-old"
	t.Cleanup(func() { version.Version = old })
	cs, calls := f.announce(t, "serve", false)
	wantEntries(t, "new version", cs,
		"~ AgentIdentity waldur-gitops-Plain",
		"~ AgentProcessor waldur-gitops-Plain/serve/waldur-gitops")
	if calls[waldur.KindAgentUpdate] != 1 || calls[waldur.KindAgentCreate] != 0 {
		t.Errorf("calls %v", calls)
	}
	if i, s, p := f.srv.AgentObjects(); i != 1 || s != 1 || p != 1 {
		t.Errorf("%d identities, %d services, %d processors; want 1 each", i, s, p)
	}
	if v := f.srv.AgentIdentities()[0].Version; v != "0.0.1-old" {
		t.Errorf("stored version %q", v)
	}
}

// TestAgentAnnouncerDryRun reads only and reports what it would create.
func TestAgentAnnouncerDryRun(t *testing.T) {
	f := newAgentFixture(t)
	cs, calls := f.announce(t, "sync", true)
	wantEntries(t, "dry run", cs,
		"+ AgentIdentity waldur-gitops-Plain",
		"+ AgentService waldur-gitops-Plain/sync",
		"+ AgentProcessor waldur-gitops-Plain/sync/waldur-gitops")
	if i, s, p := f.srv.AgentObjects(); i+s+p != 0 || calls[waldur.KindAgentList] != 1 || len(calls) > 2 {
		t.Errorf("dry run stored %d/%d/%d objects, calls %v", i, s, p, calls)
	}
	f.announce(t, "sync", false)
	cs, _ = f.announce(t, "apply", true)
	wantEntries(t, "dry run of a new mode", cs,
		"+ AgentService waldur-gitops-Plain/apply",
		"+ AgentProcessor waldur-gitops-Plain/apply/waldur-gitops")
	if _, s, _ := f.srv.AgentObjects(); s != 1 {
		t.Errorf("dry run registered a service")
	}
}

// TestAgentAnnouncerIncompatible: Waldur's incompatible verdict is a warning
// and a skip entry; the registration still happens and the stage does not fail.
func TestAgentAnnouncerIncompatible(t *testing.T) {
	f := newAgentFixture(t)
	f.srv.SetAgentCompatibility("incompatible", "Agent version is below the minimum.", "1.2.0")
	cs, _ := f.announce(t, "sync", false)
	wantEntries(t, "incompatible", cs,
		"+ AgentIdentity waldur-gitops-Plain",
		"! AgentIdentity waldur-gitops-Plain: waldur says this version is incompatible: Agent version is below the minimum. (minimum required 1.2.0)",
		"+ AgentService waldur-gitops-Plain/sync",
		"+ AgentProcessor waldur-gitops-Plain/sync/waldur-gitops")
	if !strings.Contains(f.log.String(), "level=WARN msg=\"waldur says the site agent version is incompatible\"") {
		t.Errorf("no warning logged:\n%s", f.log.String())
	}
	f.srv.SetAgentCompatibility("compatible", "", "")
	cs, _ = f.announce(t, "sync", false)
	wantEntries(t, "compatible again", cs)
}

// TestAgentAnnouncerOlderServer: an 8.0.5 server has identities but no
// compatibility answer: the identity is registered, the verdict is not read
// (one log line for the run, however many calls), nothing fails.
func TestAgentAnnouncerOlderServer(t *testing.T) {
	f := newAgentFixture(t, waldurtest.WithVersion("8.0.5"))
	f.srv.SetAgentCompatibility("incompatible", "ignored by an 8.0.5 client", "")
	cs, _ := f.announce(t, "sync", false)
	wantEntries(t, "8.0.5", cs,
		"+ AgentIdentity waldur-gitops-Plain",
		"+ AgentService waldur-gitops-Plain/sync",
		"+ AgentProcessor waldur-gitops-Plain/sync/waldur-gitops")
	f.announce(t, "sync", false)
	if n := strings.Count(f.log.String(), "waldur feature skipped"); n != 1 || !strings.Contains(f.log.String(), "agent compatibility answer") {
		t.Errorf("want one skip line for the compatibility answer, got %d:\n%s", n, f.log.String())
	}
}

// TestAgentAnnouncerFailureIsASkip: Waldur refusing the registration is a
// skip entry and a warning, never a failed stage.
func TestAgentAnnouncerFailureIsASkip(t *testing.T) {
	f := newAgentFixture(t)
	f.srv.InjectFault(waldurtest.Fault{Count: 1, PathPrefix: "/api/marketplace-site-agent-identities/", Status: http.StatusForbidden})
	cs, _ := f.announce(t, "sync", false)
	if len(cs.Entries) != 1 || cs.Entries[0].Action != changeset.Skip || cs.Entries[0].Kind != "AgentIdentity" ||
		!strings.Contains(cs.Entries[0].Reason, "403") {
		t.Errorf("entries %v", cs.Entries)
	}
	if !strings.Contains(f.log.String(), "registering the site agent identity failed") {
		t.Errorf("no warning:\n%s", f.log.String())
	}
	if i, _, _ := f.srv.AgentObjects(); i != 0 {
		t.Errorf("%d identities after a refused listing", i)
	}
}

// TestSyncReportsTheAgentStageFirst: a sync wired by FromConfig with Announce
// runs the agent stage right after the Waldur read (the offerings are found
// before anything is registered); from a snapshot it has none.
func TestSyncReportsTheAgentStageFirst(t *testing.T) {
	f := newAgentFixture(t)
	f.srv.AddOffering(waldur.ProviderOffering{UUID: offeringUUID, Name: "Plain"})
	e, err := engine.FromConfig(f.cfg, engine.Options{Publish: engine.Directory, Dir: t.TempDir(), Announce: true})
	if err != nil {
		t.Fatal(err)
	}
	out := e.Run(context.Background(), engine.Request{Command: "sync"})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	var names []string
	for _, st := range out.Report.Stages {
		names = append(names, st.Name)
	}
	if len(names) < 2 || names[0] != "waldur" || names[1] != "agent" {
		t.Fatalf("stages %v: want waldur first, then agent", names)
	}
	if i, s, p := f.srv.AgentObjects(); i != 1 || s != 1 || p != 1 {
		t.Errorf("%d identities, %d services, %d processors after a sync", i, s, p)
	}
	e, err = engine.FromConfig(f.cfg, engine.Options{Publish: engine.Directory, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out = e.Run(context.Background(), engine.Request{Command: "sync"})
	if out.Err != nil || out.Report.Stages[0].Name != "waldur" {
		t.Errorf("without Announce: %v, first stage %s", out.Err, out.Report.Stages[0].Name)
	}
}

// TestAgentAnnouncerOnlyForOfferingsFound: an identity is registered only for
// an offering the run read, or, without a state (the report command), one
// Waldur finds when asked; any other is a skip entry saying why.
func TestAgentAnnouncerOnlyForOfferingsFound(t *testing.T) {
	read := &waldur.State{Offerings: []waldur.OfferingState{{Name: "Plain", OfferingUUID: offeringUUID}}}
	tests := []struct {
		name       string
		st         *waldur.State
		exists     bool
		identities int
		reason     string
	}{
		{"read", read, true, 1, ""},
		{"not read", &waldur.State{Unread: map[string]string{"Plain": "waldur said no"}}, true, 0, "not registered: the offering was not read"},
		{"no state, found", nil, true, 1, ""},
		{"no state, unknown", nil, false, 0, "not registered: offering " + offeringUUID + " not found at "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newAgentFixture(t)
			if tc.exists {
				f.srv.AddOffering(waldur.ProviderOffering{UUID: offeringUUID, Name: "Plain"})
			}
			cs, _, err := changeset.Apart(f.ann.Announce(context.Background(), tc.st, "sync", false))
			if err != nil {
				t.Fatal(err)
			}
			if i, _, _ := f.srv.AgentObjects(); i != tc.identities {
				t.Errorf("%d identities, want %d", i, tc.identities)
			}
			skips := cs.ByAction(changeset.Skip)
			switch {
			case tc.reason == "" && len(skips) != 0:
				t.Errorf("skips %v", skips)
			case tc.reason != "" && (len(skips) != 1 || !strings.HasPrefix(skips[0].Reason, tc.reason)):
				t.Errorf("skips %v, want one saying %q", skips, tc.reason)
			}
		})
	}
}
