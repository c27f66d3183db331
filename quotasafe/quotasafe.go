// Package quotasafe finds the quota cuts that would leave a tenant's
// namespace using more than its new quota allows. Kubernetes does not evict
// anything when a ResourceQuota drops below status.used, but every Pod,
// PersistentVolumeClaim or restart the namespace then asks for is refused:
// a cut below usage strands the running workload. The engine reads the
// namespace's quotas from the cluster (package kube) and asks Find which keys
// of a new quota are such cuts; the config's quota_shrink says whether the
// render holds them (render.QuotaHolds) or makes them and warns.
package quotasafe

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/waldur"
)

// Cut is one quota key that a new quota lowers below what the namespace uses.
type Cut struct {
	// Key is the key of the tenant's quota, as the render writes it;
	// LiveKey the ResourceQuota key it was read as (they differ for a
	// ManagedNamespace's spec.quota, see LiveKey).
	Key, LiveKey string
	// Quota names the ResourceQuota in the namespace the key was read from.
	Quota string
	// New is the value asked for, Current the value in place (spec.hard)
	// and Used what the namespace uses (status.used).
	New, Current, Used resource.Quantity
	// Unreported is set when the quota's status has no usage for the key
	// yet (the cluster's quota controller has not counted it): the usage is
	// not known, so the cut is treated as one below usage.
	Unreported bool
}

// String says what the cut is, e.g. "requests.storage used 3Gi, new 2Gi, in
// place 5Gi".
func (c Cut) String() string {
	used := c.Used.String()
	if c.Unreported {
		used = "not reported yet"
	}
	return fmt.Sprintf("%s used %s, new %s, in place %s", c.LiveKey, used, c.New.String(), c.Current.String())
}

// Find compares a tenant's new quota (ResourceQuota key to value, as the
// render gives it) with the ResourceQuotas of its namespace as the cluster
// holds them, and returns the keys the new quota lowers below their usage,
// sorted by key. A key is read from the quota named quotaName when the
// namespace has one setting it (the profile's own quota), else from the
// namespace's quota with the highest value for it (one another controller
// made from the tenant's object: a ManagedNamespace, a Rancher project). A
// key no quota of the namespace sets is not a cut: nothing limits it yet.
//
// liveKey maps a key of newQuota to the ResourceQuota key it becomes in the
// namespace (nil: the same key).
func Find(newQuota map[string]string, quotaName string, live []kube.Quota, liveKey func(string) string) ([]Cut, error) {
	keys := make([]string, 0, len(newQuota))
	for k := range newQuota {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var cuts []Cut
	for _, k := range keys {
		want, err := resource.ParseQuantity(newQuota[k])
		if err != nil {
			return nil, fmt.Errorf("quota key %s=%q: %w", k, newQuota[k], err)
		}
		lk := k
		if liveKey != nil {
			lk = liveKey(k)
		}
		q, ok := pick(lk, quotaName, live)
		if !ok {
			continue
		}
		cur := q.Hard[lk]
		if want.Cmp(cur) >= 0 {
			continue // not lowered
		}
		used, reported := q.Used[lk]
		if reported && used.Cmp(want) <= 0 {
			continue // the usage fits under the new value
		}
		cuts = append(cuts, Cut{Key: k, LiveKey: lk, Quota: q.Name, New: want, Current: cur, Used: used, Unreported: !reported})
	}
	return cuts, nil
}

// pick returns the quota a key is read from.
func pick(key, quotaName string, live []kube.Quota) (kube.Quota, bool) {
	var best kube.Quota
	found := false
	for _, q := range live {
		h, ok := q.Hard[key]
		if !ok {
			continue
		}
		if quotaName != "" && q.Name == quotaName {
			return q, true
		}
		if !found || h.Cmp(best.Hard[key]) > 0 {
			best, found = q, true
		}
	}
	return best, found
}

// LiveKey returns the ResourceQuota key a key of a tenant's quota becomes in
// its namespace: the key the backend registers in LiveQuotaKeys (for
// k8s-ut-namespace, the key the ManagedNamespace operator uses), else the key
// itself.
func LiveKey(backendType string) func(string) string {
	b := backend.Lookup(backendType)
	if b == nil || b.LiveQuotaKeys == nil {
		return nil
	}
	keys := b.LiveQuotaKeys
	return func(k string) string {
		if lk, ok := keys[k]; ok {
			return lk
		}
		return k
	}
}

// Keep maps the keys of cuts to the values in place, for render.QuotaHold.
func Keep(cuts []Cut) map[string]string {
	out := make(map[string]string, len(cuts))
	for _, c := range cuts {
		out[c.Key] = c.Current.String()
	}
	return out
}

// Describe names every cut, separated by "; ".
func Describe(cuts []Cut) string {
	parts := make([]string, len(cuts))
	for i, c := range cuts {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// Reason says why an Update order waits for its held cuts, naming each.
func Reason(cuts []Cut) string {
	return "waiting for usage to drop below the new quota (quota_shrink: hold): " + Describe(cuts)
}

// Lowers reports whether new limits lower any component of old ones (the
// resource's limits before its Update order): the cut the cluster could not
// be asked about when it is unreachable. A component old does not parse is
// not counted.
func Lowers(old waldur.Limits, new map[string]float64) bool {
	for k, v := range new {
		o, ok := old[k]
		if !ok {
			continue
		}
		if f, err := o.Float(); err == nil && v < f {
			return true
		}
	}
	return false
}
