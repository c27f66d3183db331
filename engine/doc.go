// Package engine owns the one cycle every command that changes something
// runs: sync, render (--dry-run and --out), apply, keycloak, report and serve.
//
//	waldur ─▶ (agent) ─▶ approve ─▶ render ─▶ quota ─▶ validate ─▶ git | apply | out ─▶ keycloak ─▶ orders ─▶ feedback
//
//	stage            seam        what does the work (adapter here, if any)
//	waldur           Source      source.API, source.Snapshot (waldur/source)
//	agent            Announcer   writeback.AgentAnnouncer
//	approve          Orders      orders.Site (OrderStage)
//	render           Renderer    render (ConfigRendering): claims settled, quota holds
//	quota            Quotas      quotasafe.Stage
//	validate         Validator   publish.ServerValidator, with --validate-server
//	git, apply, out  Publisher   publish.Git, publish.Cluster, publish.Dir
//	keycloak         Identities  keycloak.Identities (KeycloakStage)
//	orders           Orders      orders.Site (OrderStage)
//	feedback         Feedback    writeback.ResourceFeedback (feedbackStage)
//	usage            Usage       usage.Reporter (UsageStage), report only
//
// Each seam is a small interface in seams.go; the packages that do the work
// sit behind it, through a thin adapter in this package where the types
// differ. Policy lives with its concern, not here. FromConfig (wire.go)
// wires the seams a verb asks for, after preflight has asked each of them
// whether the config holds what it needs; a nil seam's stage does not run
// (no orders from a snapshot, no publisher for the keycloak command).
//
// cycle.go runs the stages in order and records each in the run report. The
// first failure ends the run, except that the identities stage lets the
// orders go on and a failure contained to some tenants (objects an API server
// refused) lets the others go on. A failure's class and exit code are
// package failure's; errors.go gives a stage's unclassed failure the stage's
// class and decides the run's verdict: a failure first, then in a dry run
// differences (exit 1), then skipped resources or identities (exit 3). A
// run stopped by its deadline or a signal is package stop's Cut.
//
// To add a stage: give it an interface in seams.go and a field in Seams, an
// entry in Engine.stages at its place in the pipeline (with its failure
// class), its adapter in a file of its own, and its wiring in FromConfig.
package engine
