// Package keycloak reconciles the Keycloak groups and memberships the renderer
// asks for (render.Result.Groups) with what a Keycloak realm has, through the
// admin REST API.
//
// A run has three steps, each usable alone:
//
//   - Observe reads the realm once: the top-level groups page by page, the
//     subgroups of the groups that matter through /groups/{id}/children, the
//     direct members of the groups waldur-gitops manages, and the users the
//     plan needs that are not among those members. Reads grow with the number
//     of managed groups, not with their square, and a realm that is already
//     right costs no write.
//   - MakePlan is pure: from the desired groups and what Observe read it
//     derives the operations (create a group or subgroup, update its marker
//     attributes, add a member, remove a member, delete a group) and the same
//     changeset.Set the Git stage reports with.
//   - Execute carries a plan out, creations first and deletions last.
//
// Reconcile and PlanChanges run the three for every Keycloak realm the config
// names; PlanChanges stops before Execute, for dry runs.
//
// With a Memory (Options.Memory: serve keeps one between runs, and a Store
// keeps it between processes — the config's keycloak_state file, or where the
// run publishes, wired by publish.KeycloakMemory) a pass does not read the
// whole realm:
// it trusts what the last pass found except for a rotating slice that brings
// every group back within keycloak.verify_every, looks the desired groups it
// does not know up by path, and reads again every group the plan would change
// before writing anything, planning again from what it read. A run for some
// resources (Options.Resources) reads and changes only their groups.
//
// Ownership: every group this package creates carries the attribute
// managed_by=waldur-gitops and the UUIDs of the offerings (and, for groups
// without subgroups, the resources) that need it. A group without the marker is
// never changed, deleted or emptied; one with a desired name is reported as a
// conflict, unless keycloak_groups.adopt_existing takes it over. A group stays
// while any resource needs it, while a resource that needed it is skipped by the
// renderer for bad input, and while the manifests of a resource that needed it
// are still in Git (Options.InGit).
//
// The Client is polite: a client-side rate limit, bounded concurrency, retries
// with exponential backoff on 5xx answers, 429 and transport errors, and a
// token that is refreshed before it expires and again when Keycloak answers 401.
// It counts its calls by kind for the run report.
//
// Identities (identities.go) is the engine's identities stage over
// Reconcile: it leaves out of a pass what the run is in doubt about
// (offerings not read, resources kept for an unknown state), leaves out of a
// dry run the realms whose settings name no credential, and finds the
// rendered resources waiting on groups not in place; Preflight checks the
// credentials of every realm before a run.
package keycloak
