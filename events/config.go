package events

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
	"github.com/waldur/waldur-gitops/waldur/writeback"
)

// FromConfig is what the Consumer needs of the configured offerings that
// consume Waldur's events: every offering when all is set
// (serve --events), else those with stomp_enabled. Each registers as the
// site agent identity the agent stage registers (writeback.AgentIdentityName), with
// its own Waldur client; tune adjusts the clients' options (tests).
func FromConfig(offerings []config.Offering, all bool, log *slog.Logger, tune func(*waldur.ClientOptions)) ([]Offering, error) {
	var out []Offering
	for i := range offerings {
		o := offerings[i]
		if !all && !o.StompEnabled {
			continue
		}
		u, err := URL(o.WaldurAPIURL, o.StompWSHost, o.StompWSPort, o.StompWSPath, o.WebsocketUseTLS)
		if err != nil {
			return nil, fmt.Errorf("offering %s: %w", o.Name, err)
		}
		src := &source.API{Offerings: []config.Offering{o}, Log: log, Tune: tune}
		off, err := waldur.ParseUUID(o.WaldurOfferingUUID)
		if err != nil {
			return nil, fmt.Errorf("offering %s: waldur_offering_uuid: %w", o.Name, err)
		}
		var hc *http.Client
		if !o.VerifiesSSL() {
			hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // verify_ssl: false
		}
		out = append(out, Offering{
			Name: o.Name, UUID: off, URL: u, HTTPClient: hc,
			Passcode: func() (string, error) {
				t, err := o.Token()
				return t.Reveal(), err
			},
			Registrar: &WaldurRegistrar{
				Client:   func() (*waldur.Client, error) { return src.Client(&o) },
				Offering: off,
				Identity: waldur.AgentIdentityRequest{Offering: off, Name: writeback.AgentIdentityName(&o), Version: version.Version, Dependencies: writeback.AgentDependencies()},
			},
		})
	}
	return out, nil
}
