// Package apply will server-side apply the rendered objects straight into a
// cluster, for sites without Argo CD or Flux. Not implemented yet.
package apply
