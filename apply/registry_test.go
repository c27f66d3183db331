package apply

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/backend"
)

// defaultKinds are the kinds each registered backend declares, by type and
// target, for the tests that check the examples render no other kind.
var defaultKinds = func() map[string]map[string][]schema.GroupVersionKind {
	out := map[string]map[string][]schema.GroupVersionKind{}
	for _, b := range backend.All() {
		out[b.Type] = b.Kinds
	}
	return out
}()
