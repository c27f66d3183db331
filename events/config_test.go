package events_test

import (
	"slices"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/events"
)

// TestFromConfig: every offering consumes events with all, else those
// with stomp_enabled, each at the URL its settings give.
func TestFromConfig(t *testing.T) {
	no := false
	offs := []config.Offering{
		{Name: "a", WaldurAPIURL: "https://waldur.example.org/api/", WaldurOfferingUUID: "66c0217f-031f-ec83-3da0-e057be1c007e", WaldurAPIToken: "t"},
		{Name: "b", WaldurAPIURL: "https://waldur.example.org/", WaldurOfferingUUID: "775b5d31b8ba24c37607a83e4302085a", StompEnabled: true,
			StompWSHost: "mq.example.org", StompWSPort: 15674, WebsocketUseTLS: &no, WaldurAPIToken: "t"},
	}
	for _, tc := range []struct {
		all  bool
		want []string
	}{{all: true, want: []string{"a=wss://waldur.example.org:443/rmqws-stomp", "b=ws://mq.example.org:15674/rmqws-stomp"}},
		{all: false, want: []string{"b=ws://mq.example.org:15674/rmqws-stomp"}}} {
		got, err := events.FromConfig(offs, tc.all, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range got {
			names = append(names, o.Name+"="+o.URL)
			if pw, err := o.Passcode(); err != nil || pw != "t" {
				t.Errorf("%s passcode %q %v", o.Name, pw, err)
			}
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("all=%v: %v, want %v", tc.all, names, tc.want)
		}
	}
}
