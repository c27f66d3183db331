// Package review classifies the tenant changes of a publish as additive or
// risky, so that the risky ones can wait on a review branch for a person to
// merge (config review:), and computes the trees of git.branch and of the
// review branch.
package review

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/render"
)

// Class is the class of a change.
type Class string

// The classes.
const (
	// Additive: a new tenant, a quota raised, a member added, a label or
	// annotation changed — nothing running loses anything.
	Additive Class = "additive"
	// Risky: a tenant removed, a quota lowered, a member removed, objects
	// removed from a tenant (by a site template, say).
	Risky Class = "risky"
)

// Classify returns the class of a tenant entry (kind Tenant, action create,
// update or delete) of a publish from prev to next, and for a risky one why.
func Classify(e changeset.Entry, prev, next render.Tree) (Class, string) {
	return NewClassifier(prev, next).Classify(e)
}

// Classifier classifies many entries of one publish from prev to next: it
// finds a tenant's files through an index of prev by directory made once,
// rather than by sorting the whole tree per entry.
type Classifier struct {
	prev, next render.Tree
	byDir      map[string][]string // directory → the names of its files, sorted
}

// NewClassifier returns the Classifier of a publish from prev to next.
func NewClassifier(prev, next render.Tree) *Classifier {
	return &Classifier{prev: prev, next: next}
}

// Classify is the package's Classify, for an entry of the publish.
func (c *Classifier) Classify(e changeset.Entry) (Class, string) {
	switch e.Action {
	case changeset.Delete:
		return Risky, "tenant removed"
	case changeset.Update:
	default:
		return Additive, ""
	}
	if c.byDir == nil {
		c.byDir = map[string][]string{}
		for p := range c.prev {
			if i := strings.LastIndexByte(p, '/'); i > 0 {
				c.byDir[p[:i]] = append(c.byDir[p[:i]], p[i+1:])
			}
		}
		for _, names := range c.byDir {
			slices.Sort(names)
		}
	}
	var why []string
	for _, name := range c.byDir[e.Subject] {
		p := e.Subject + "/" + name
		nb, ok := c.next[p]
		if !ok {
			why = append(why, "objects removed: "+name)
			continue
		}
		why = append(why, compare(c.prev[p], nb)...)
	}
	if len(why) == 0 {
		return Additive, ""
	}
	return Risky, strings.Join(why, "; ")
}

// compare finds what a changed file of a tenant takes away, where the
// registration of the backend that renders its kind says to look
// (backend.Review): quota keys lowered (a ResourceQuota's spec.hard, a
// ManagedNamespace's spec.quota, a Rancher Project's limits and the Rancher
// namespace's field.cattle.io/resourceQuota annotation), members removed (a
// RoleBinding's subjects, a ManagedNamespace's user and group lists).
func compare(prev, next []byte) []string {
	var p, n map[string]any
	if yaml.Unmarshal(prev, &p) != nil || yaml.Unmarshal(next, &n) != nil {
		return nil
	}
	r := backend.ReviewOf(groupKind(p))
	if r == nil {
		return nil
	}
	var why []string
	for _, q := range r.Quotas {
		why = append(why, loweredAt(q.Label, quotaMap(p, q), quotaMap(n, q))...)
	}
	for _, path := range r.Members {
		why = append(why, removed(names(at(p, path)), names(at(n, path)))...)
	}
	for _, path := range r.Subjects {
		why = append(why, removed(subjects(at(p, path)), subjects(at(n, path)))...)
	}
	return why
}

// groupKind is the API group and kind of an object.
func groupKind(m map[string]any) schema.GroupKind {
	api, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	gv, _ := schema.ParseGroupVersion(api)
	return schema.GroupKind{Group: gv.Group, Kind: kind}
}

func dig(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, _ := m[k].(map[string]any)
		m = next
	}
	return m
}

// at is the value at a path of fields.
func at(m map[string]any, path []string) any {
	return dig(m, path[:len(path)-1]...)[path[len(path)-1]]
}

// quotaMap is the map of quantities q names in an object, nil when there
// is none (or its annotation is not JSON).
func quotaMap(m map[string]any, q backend.QuotaMap) map[string]any {
	if q.Annotation == "" {
		return dig(m, q.Path...)
	}
	v, _ := dig(m, "metadata", "annotations")[q.Annotation].(string)
	var in map[string]any
	if v == "" || yaml.Unmarshal([]byte(v), &in) != nil {
		return nil
	}
	return dig(in, q.Path...)
}

// loweredAt names the keys whose quantity next lowers, after prefix.
func loweredAt(prefix string, prev, next map[string]any) []string {
	var why []string
	for _, k := range slices.Sorted(maps.Keys(prev)) {
		pq, err1 := resource.ParseQuantity(fmt.Sprint(prev[k]))
		nv, ok := next[k]
		if !ok || err1 != nil {
			continue
		}
		nq, err2 := resource.ParseQuantity(fmt.Sprint(nv))
		if err2 == nil && nq.Cmp(pq) < 0 {
			why = append(why, fmt.Sprintf("quota lowered: %s%s %s → %s", prefix, k, pq.String(), nq.String()))
		}
	}
	return why
}

func names(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func subjects(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, fmt.Sprint(m["kind"], " ", m["name"]))
		}
	}
	return out
}

// removed names what prev has and next has not.
func removed(prev, next []string) []string {
	var why []string
	for _, x := range prev {
		if !slices.Contains(next, x) {
			why = append(why, "member removed: "+x)
		}
	}
	return why
}

// Carry returns a copy of t in which the files of every directory of dirs
// are those of prev: what git.branch gets while those changes wait for review.
func Carry(t, prev render.Tree, dirs []string) render.Tree {
	out := make(render.Tree, len(t))
	under := func(p string) bool {
		for _, d := range dirs {
			if strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	for p, b := range t {
		if !under(p) {
			out[p] = b
		}
	}
	for p, b := range prev {
		if under(p) {
			out[p] = b
		}
	}
	return out
}

// Branch names the review branch of the changes of dirs from prev to next:
// gitsync.ReviewPrefix and a digest of the directories' files on both
// sides, so that the same change keeps its branch and another change gets
// another one.
func Branch(prefix string, prev, next render.Tree, dirs []string) string {
	h := sha256.New()
	sorted := slices.Clone(dirs)
	slices.Sort(sorted)
	for _, d := range sorted {
		fmt.Fprintf(h, "dir %s\n", d)
		for side, t := range []render.Tree{prev, next} {
			for _, p := range slices.Sorted(maps.Keys(t)) {
				if strings.HasPrefix(p, d+"/") {
					fmt.Fprintf(h, "%d %s %d\n", side, p, len(t[p]))
					h.Write(t[p])
				}
			}
		}
	}
	return prefix + hex.EncodeToString(h.Sum(nil))[:12]
}
