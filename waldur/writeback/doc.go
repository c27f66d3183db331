// Package writeback holds what the run writes back to Waldur beyond orders:
// the site agent registration (the agent stage) and the feedback on every
// resource (the feedback stage). The engine runs them through its Announcer
// and Feedback seams; this package does not import the engine.
package writeback
