package config

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// LeaderElection is serve's election on a coordination.k8s.io/v1 Lease.
// The durations are Go durations; their parsed values are Durations.
type LeaderElection struct {
	// Enabled elects a leader (serve --leader-elect does too).
	Enabled bool `yaml:"enabled"`
	// LeaseName names the Lease (default waldur-gitops).
	LeaseName string `yaml:"lease_name"`
	// Namespace holds the Lease ("": POD_NAMESPACE, else the namespace of
	// the kubeconfig's context or of the in-cluster service account).
	Namespace string `yaml:"namespace"`
	// LeaseDuration is how long standbys wait before taking a lease that
	// was not renewed (default 15s).
	LeaseDuration string `yaml:"lease_duration"`
	// RenewDeadline is how long the leader tries to renew before it gives
	// up leading; a replica also starts a write only while its lease has at
	// least this long left (default 10s).
	RenewDeadline string `yaml:"renew_deadline"`
	// RetryPeriod is the time between two tries to acquire or renew
	// (default 2s).
	RetryPeriod string `yaml:"retry_period"`

	durations ElectionDurations
}

// ElectionDurations are the parsed durations of serve.leader_election.
type ElectionDurations struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Durations returns the parsed lease_duration, renew_deadline and retry_period.
func (l *LeaderElection) Durations() ElectionDurations { return l.durations }

// DefaultLeaseName is the Lease serve elects its leader on unless
// serve.leader_election.lease_name says otherwise.
const DefaultLeaseName = "waldur-gitops"

// electionJitter is client-go's leaderelection.JitterFactor: the renew
// deadline must exceed this many retry periods.
const electionJitter = 1.2

func (l *LeaderElection) applyDefaults() {
	for _, d := range []struct {
		v   *string
		def string
	}{{&l.LeaseName, DefaultLeaseName}, {&l.LeaseDuration, "15s"}, {&l.RenewDeadline, "10s"}, {&l.RetryPeriod, "2s"}} {
		if *d.v == "" {
			*d.v = d.def
		}
	}
	l.durations.LeaseDuration, _ = time.ParseDuration(l.LeaseDuration)
	l.durations.RenewDeadline, _ = time.ParseDuration(l.RenewDeadline)
	l.durations.RetryPeriod, _ = time.ParseDuration(l.RetryPeriod)
}

// validate checks serve.leader_election whether or not it is enabled, so
// that --leader-elect never meets a bad key only at start.
func (l *LeaderElection) validate(r *report) {
	const at = "serve.leader_election."
	for _, m := range validation.IsDNS1123Subdomain(l.LeaseName) {
		r.addf(at+"lease_name", nil, "%q is not a valid object name: %s", l.LeaseName, m)
	}
	if l.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(l.Namespace) {
			r.addf(at+"namespace", nil, "%q is not a valid namespace name: %s", l.Namespace, m)
		}
	}
	ok := true
	for _, d := range []struct{ key, text string }{{"lease_duration", l.LeaseDuration}, {"renew_deadline", l.RenewDeadline}, {"retry_period", l.RetryPeriod}} {
		if v, err := time.ParseDuration(d.text); err != nil || v <= 0 {
			r.addf(at+d.key, nil, "must be a positive duration such as 15s, got %q", d.text)
			ok = false
		}
	}
	if !ok {
		return
	}
	d := l.durations
	if d.LeaseDuration%time.Second != 0 {
		// The Lease holds whole seconds: a fraction would be cut off there,
		// and standbys would take the lease before the leader's permit ends.
		r.addf(at+"lease_duration", nil, "must be whole seconds (the Lease stores seconds), got %s", d.LeaseDuration)
	}
	if d.LeaseDuration <= d.RenewDeadline {
		r.addf(at+"lease_duration", nil, "%s must be longer than renew_deadline (%s): standbys would take the lease while the leader still renews it", d.LeaseDuration, d.RenewDeadline)
	}
	if float64(d.RenewDeadline) <= electionJitter*float64(d.RetryPeriod) {
		r.addf(at+"renew_deadline", nil, "%s must be longer than %v × retry_period (%s): the leader needs more than one try to renew", d.RenewDeadline, electionJitter, d.RetryPeriod)
	}
}
