// Package apply puts the rendered desired state straight into Kubernetes
// clusters, for sites that run neither Argo CD nor Flux, and validates rendered
// objects against a real API server before they are committed.
//
// Apply server-side applies every rendered object with the field manager
// "waldur-gitops", in dependency order (Namespaces, then other cluster-scoped
// objects, then namespaced ones), and prunes by inventory: every object labelled
// app.kubernetes.io/managed-by=waldur-gitops whose waldur.io/offering-uuid
// annotation names a configured offering, and which is no longer rendered, is
// deleted (namespaced objects first, Namespaces last) under the same
// mass-deletion guard as the Git path. Objects without the label, objects of
// other offerings and the objects of resources the renderer skipped are never
// touched. A tenant whose objects need a kind the cluster does not serve (a
// missing CRD) is left alone entirely and reported; the others proceed.
//
// ValidateServer dry-runs every rendered object on the API server and reports
// the objects it rejects, with the server's message.
//
// Every object is reported through the changeset type: create, update (the
// server changed something: kubectl's "configured"), unchanged, delete, or skip
// with the reason.
package apply
