// Package testenv holds the test environments, one package each: real
// servers and stand-ins the tests start (kubetest's etcd and kube-apiserver,
// keycloaktest's Keycloak, fluxtest's and argotest's controllers,
// rabbittest's broker, gittest's Git server, registrytest's OCI registry,
// chromiumtest's headless Chromium, promtest's promtool),
// the synthetic state of synth, and the helpers they share (gobuild,
// testproc, filelock, openapicheck). Their prepare and kubeup commands fill
// the caches make test uses.
//
// The production helpers stay one level up, in internal/. Imports run one
// way only: a test environment may use any package of the module, and no
// package outside internal/testenv imports one, except from _test.go files
// and from the stand-in packages named …test (waldur/waldurtest,
// forge/forgetest); TestTestenvImports in layout_test.go at the module root
// enforces it.
package testenv
