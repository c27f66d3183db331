package engine

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"slices"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
	"github.com/waldur/waldur-gitops/waldur/writeback"
)

// EventOfferings is what the event consumer (package events) needs of the
// offerings that consume Waldur's events: every offering when all is set
// (serve --events), else those with stomp_enabled. Each registers as the
// site agent identity the agent stage registers (writeback.AgentIdentityName), with
// its own Waldur client; tune adjusts the clients' options (tests).
func EventOfferings(offerings []config.Offering, all bool, log *slog.Logger, tune func(*waldur.ClientOptions)) ([]events.Offering, error) {
	var out []events.Offering
	for i := range offerings {
		o := offerings[i]
		if !all && !o.StompEnabled {
			continue
		}
		u, err := events.URL(o.WaldurAPIURL, o.StompWSHost, o.StompWSPort, o.StompWSPath, o.WebsocketUseTLS)
		if err != nil {
			return nil, failure.Errorf(failure.ClassConfig, "offering %s: %w", o.Name, err)
		}
		src := &source.API{Offerings: []config.Offering{o}, Log: log, Tune: tune}
		off, err := waldur.ParseUUID(o.WaldurOfferingUUID)
		if err != nil {
			return nil, failure.Errorf(failure.ClassConfig, "offering %s: waldur_offering_uuid: %w", o.Name, err)
		}
		var hc *http.Client
		if !o.VerifiesSSL() {
			hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // verify_ssl: false
		}
		out = append(out, events.Offering{
			Name: o.Name, UUID: off, URL: u, HTTPClient: hc,
			Passcode: func() (string, error) {
				t, err := o.Token()
				return t.Reveal(), err
			},
			Registrar: &events.WaldurRegistrar{
				Client:   func() (*waldur.Client, error) { return src.Client(&o) },
				Offering: off,
				Identity: waldur.AgentIdentityRequest{Offering: off, Name: writeback.AgentIdentityName(&o), Version: version.Version, Dependencies: writeback.AgentDependencies()},
			},
		})
	}
	return out, nil
}

// EventRequest is the run a trigger asks for, given the engine's last run:
// the named resources and those of the named projects, refreshed into the
// last state; a full run when the trigger asks for one or there is no last
// state. ok is false when there is nothing to do (only projects of which
// the last state has no resource).
func EventRequest(t events.Trigger, last *Outcome) (req Request, ok bool) {
	req = Request{Command: "serve"}
	if t.Full || last == nil || last.State == nil {
		return req, true
	}
	ids := slices.Clone(t.Resources)
	for _, o := range last.State.Offerings {
		for _, r := range o.Resources {
			if _, found := slices.BinarySearch(t.Projects, r.ProjectUUID); found && !slices.Contains(ids, r.UUID) {
				ids = append(ids, r.UUID)
			}
		}
	}
	if len(ids) == 0 {
		return req, false
	}
	slices.Sort(ids)
	req.Resources = ids
	return req, true
}

// restrictTo returns a copy of st in which every offering holds only the
// named resources.
func restrictTo(st *waldur.State, ids []waldur.UUID) *waldur.State {
	if st == nil {
		return nil
	}
	out := *st
	out.Offerings = make([]waldur.OfferingState, len(st.Offerings))
	for i, o := range st.Offerings {
		o.Resources = slices.DeleteFunc(slices.Clone(o.Resources), func(r waldur.Resource) bool { return !slices.Contains(ids, r.UUID) })
		out.Offerings[i] = o
	}
	return &out
}
