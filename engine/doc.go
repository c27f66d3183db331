// Package engine owns the one cycle every command that changes something
// runs: sync, render (--dry-run and --out), apply, keycloak and serve.
//
//	waldur ─▶ (agent) ─▶ approve ─▶ render ─▶ quota ─▶ validate ─▶ git | apply | out ─▶ keycloak ─▶ orders ─▶ feedback
//
//	stage            seam        what does the work (adapter here, if any)
//	waldur           Source      source.API, SnapshotSource (waldur)
//	agent            Announcer   writeback.AgentAnnouncer
//	approve          Orders      OrderStage.Approve (orders)
//	render           Renderer    ConfigRendering (render): claims settled, quota holds
//	quota            Quotas      quotasafe.Stage
//	validate         Validator   ServerValidator (apply), with --validate-server
//	git, apply, out  Publisher   GitPublisher (gitsync, review, ociship, guard/confirm), ClusterPublisher (apply), DirPublisher (localtree)
//	keycloak         Identities  KeycloakStage (keycloak)
//	orders           Orders      OrderStage.Finish (orders)
//	feedback         Feedback    writeback.ResourceFeedback (feedbackStage)
//
// Each seam is a small interface in seams.go; the packages that do the work
// sit behind it, through a thin adapter in this package where the types
// differ. Policy lives with its concern, not here. FromConfig wires the
// seams a verb asks for; a nil seam's stage does not run (no orders from a
// snapshot, no publisher for the keycloak command).
//
// cycle.go runs the stages in order and records each in the run report. The
// first failure ends the run, except that the identities stage lets the
// orders go on and a failure contained to some tenants (objects an API server
// refused) lets the others go on. errors.go holds the one table from failure
// class to exit code and the run's verdict: a failure first, then in a dry
// run differences (exit 1), then skipped resources or identities (exit 3).
//
// To add a stage: give it an interface in seams.go and a field in Seams, an
// entry in Engine.stages at its place in the pipeline (with its failure
// class), its adapter in a file of its own, and its wiring in FromConfig.
package engine
