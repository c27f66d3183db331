package engine

import (
	"bytes"
	"path"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/render"
)

// checkAccess refuses a publish that takes too much access away at once:
// the RoleBinding subjects and ManagedNamespace users of the tenants that
// stay (a removed tenant is the deletion guard's business). Every team/
// answering empty would otherwise strip every binding in one commit.
func checkAccess(prev, next render.Tree, tenants changeset.Set, g guard.Options) error {
	if g.Allow {
		return nil
	}
	updated := map[string]bool{}
	for _, e := range tenants.ByAction(changeset.Update) {
		updated[e.Subject] = true
	}
	if len(updated) == 0 {
		return nil
	}
	// One pass over each tree: the grants of every updated tenant, and all.
	before, after := map[string]int{}, map[string]int{}
	existing := 0
	for p, data := range prev {
		n := grants(p, data)
		existing += n
		if d := path.Dir(p); updated[d] {
			before[d] += n
		}
	}
	for p, data := range next {
		if d := path.Dir(p); updated[d] {
			after[d] += grants(p, data)
		}
	}
	removed := 0
	var where []string
	for d := range updated {
		if before[d] > after[d] {
			removed += before[d] - after[d]
			where = append(where, d)
		}
	}
	return guard.CheckAccess("RoleBinding subjects and ManagedNamespace users", removed, existing, where, g)
}

// grants counts the access grants one rendered file gives, from the YAML the
// encoder writes (block style, keys sorted): each subject of a RoleBinding
// or ClusterRoleBinding (the list items at the top level), and each user of
// a ManagedNamespace (the items of its *Users lists).
func grants(p string, data []byte) int {
	base := path.Base(p)
	switch {
	case strings.HasPrefix(base, "rolebinding-"), strings.HasPrefix(base, "clusterrolebinding-"):
		return bytes.Count(data, []byte("\n- "))
	case strings.HasPrefix(base, "managednamespace-"):
		n, inUsers := 0, false
		for _, line := range bytes.Split(data, []byte("\n")) {
			switch {
			case bytes.HasPrefix(line, []byte("  - ")):
				if inUsers {
					n++
				}
			case bytes.HasPrefix(line, []byte("  ")) && !bytes.HasPrefix(line, []byte("   ")):
				inUsers = bytes.HasSuffix(line, []byte("Users:"))
			default:
				inUsers = false
			}
		}
		return n
	}
	return 0
}
