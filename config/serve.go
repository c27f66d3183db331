package config

// Serve holds what only serve reads.
type Serve struct {
	// LeaderElection lets several serve replicas share one installation:
	// the one holding a Lease runs, the others stand by.
	LeaderElection LeaderElection `yaml:"leader_election"`
}
