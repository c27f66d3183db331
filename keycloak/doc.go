// Package keycloak will reconcile the desired Keycloak groups and memberships the
// renderer produces. Not implemented yet.
package keycloak

import _ "github.com/Nerzal/gocloak/v13" // pinned ahead of the implementation
