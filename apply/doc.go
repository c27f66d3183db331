// Package apply will server-side apply the rendered objects straight into a
// cluster, for sites without Argo CD or Flux. Not implemented yet.
package apply

import _ "k8s.io/client-go/dynamic" // pinned ahead of the implementation
