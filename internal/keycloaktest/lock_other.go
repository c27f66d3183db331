//go:build !unix

package keycloaktest

// lockFile does nothing where flock is missing: concurrent builds then only
// waste time, since each writes through its own temporary file.
func lockFile(string) (func(), error) { return func() {}, nil }
