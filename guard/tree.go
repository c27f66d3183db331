package guard

import (
	"bytes"
	"path"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/render"
)

// CheckTreeAccess refuses a publish that takes too much access away at once:
// the (subject, tenant) pairs that lose every RoleBinding and
// ManagedNamespace grant in a tenant that stays (a removed tenant is the
// deletion guard's business; a subject whose role changes keeps its pair).
// Every team answering empty would otherwise strip every binding in one
// commit.
func CheckTreeAccess(prev, next render.Tree, tenants changeset.Set, g Options) error {
	if g.Allow {
		return nil
	}
	updated := updatedDirs(tenants)
	if len(updated) == 0 {
		return nil
	}
	// Every pair in place counts; only an updated tenant can lose one.
	return CheckAccess(Access, treeGrants(prev, nil), treeGrants(next, updated), g)
}

// treeGrants reads who has access to which tenant directory in a tree; with
// only, in those directories alone.
func treeGrants(t render.Tree, only map[string]bool) Grants {
	g := Grants{}
	for p, data := range t {
		g.addFile(p, data, only)
	}
	return g
}

// addFile records the tenant directory of the file p, and whom the file
// gives access there, unless only (when set) leaves its directory out.
func (g Grants) addFile(p string, data []byte, only map[string]bool) {
	d := path.Dir(p)
	if only != nil && !only[d] {
		return
	}
	g.Tenant(d)
	for _, s := range subjects(p, data) {
		g.Add(d, s)
	}
}

// updatedDirs is the set of tenant directories the change updates.
func updatedDirs(tenants changeset.Set) map[string]bool {
	updated := map[string]bool{}
	for _, e := range tenants.ByAction(changeset.Update) {
		updated[e.Subject] = true
	}
	return updated
}

// subjects lists whom one rendered file gives access, from the YAML the
// encoder writes (block style, keys sorted): each subject of a RoleBinding
// or ClusterRoleBinding (a user by name, others as kind:name), and each user
// of a ManagedNamespace (the items of its *Users lists).
func subjects(p string, data []byte) []string {
	base := path.Base(p)
	switch {
	case strings.HasPrefix(base, "rolebinding-"), strings.HasPrefix(base, "clusterrolebinding-"):
		return bindingSubjects(data)
	case strings.HasPrefix(base, "managednamespace-"):
		return namespaceUsers(data)
	}
	return nil
}

// bindingSubjects reads the items of a binding's top-level subjects list.
func bindingSubjects(data []byte) []string {
	var out []string
	in := false
	var kind, name []byte
	flush := func() {
		if name != nil {
			out = append(out, subjectKey(kind, name))
		}
		kind, name = nil, nil
	}
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case bytes.Equal(line, []byte("subjects:")):
			in = true
		case !in:
		case bytes.HasPrefix(line, []byte("- ")) || bytes.HasPrefix(line, []byte("  ")):
			if line[0] == '-' {
				flush()
			}
			k, v, _ := bytes.Cut(line[2:], []byte(": "))
			switch string(k) {
			case "kind":
				kind = v
			case "name":
				name = bytes.Trim(v, `"'`)
			}
		default:
			flush()
			in = false
		}
	}
	flush()
	return out
}

// subjectKey names a subject the same way wherever it is granted: a user by
// name (as a ManagedNamespace lists users), any other as kind:name.
func subjectKey(kind, name []byte) string {
	if len(kind) == 0 || string(kind) == "User" {
		return string(name)
	}
	return string(kind) + ":" + string(name)
}

// namespaceUsers reads the items of a ManagedNamespace's spec.*Users lists.
func namespaceUsers(data []byte) []string {
	var out []string
	inUsers := false
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case bytes.HasPrefix(line, []byte("  - ")):
			if inUsers {
				out = append(out, strings.Trim(string(line[4:]), `"'`))
			}
		case bytes.HasPrefix(line, []byte("  ")) && !bytes.HasPrefix(line, []byte("   ")):
			inUsers = bytes.HasSuffix(line, []byte("Users:"))
		default:
			inUsers = false
		}
	}
	return out
}

// CheckFilesAccess is CheckTreeAccess for a next that differs from prev
// only in the tenant directories whose files are listed in files (their
// files in prev and in next, every one of them, not only those that
// changed), with site the pairs with access in all of prev (FilesPairs of
// every file): it reads those files alone, and decides as CheckTreeAccess
// would.
func CheckFilesAccess(prev, next render.Tree, files []string, site int, tenants changeset.Set, g Options) error {
	if g.Allow {
		return nil
	}
	updated := updatedDirs(tenants)
	if len(updated) == 0 {
		return nil
	}
	before, after := filesGrants(prev, files, updated), filesGrants(next, files, updated)
	return Check(Access, offboarded(Lost(Access, before, after), g.Offboarded), Site(site), g)
}

// FilesPairs counts the (subject, directory) pairs with access that the
// files of t listed in files give, each directory's files being all listed.
func FilesPairs(t render.Tree, files []string) int {
	return filesGrants(t, files, nil).Pairs()
}

// filesGrants is treeGrants over the files of t listed in files.
func filesGrants(t render.Tree, files []string, only map[string]bool) Grants {
	g := Grants{}
	for _, p := range files {
		if data, ok := t[p]; ok {
			g.addFile(p, data, only)
		}
	}
	return g
}
