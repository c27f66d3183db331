package kubetest

import (
	"slices"
	"testing"
)

// The staging modules are read from k8s.io/kubernetes's go.mod: only replace
// directives that point into ./staging count, in a block or on their own line.
func TestStagingModules(t *testing.T) {
	gomod := []byte(`module k8s.io/kubernetes

go 1.24.0

require (
	k8s.io/api v0.0.0
	k8s.io/utils v0.0.0-20241104100929-3ea5e8cea738
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery
	github.com/example/fork => github.com/example/fork v1.2.3
)

replace k8s.io/kubectl => ./staging/src/k8s.io/kubectl
`)
	got := stagingModules(gomod)
	want := []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/kubectl"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
