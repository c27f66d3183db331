// Package keycloak will reconcile the desired Keycloak groups and memberships the
// renderer produces. Not implemented yet.
package keycloak
