package backend

import "k8s.io/apimachinery/pkg/runtime/schema"

// Kinds of the core API the namespace-shaped backends render.
var (
	KindNamespace     = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	KindResourceQuota = schema.GroupVersionKind{Version: "v1", Kind: "ResourceQuota"}
	KindLimitRange    = schema.GroupVersionKind{Version: "v1", Kind: "LimitRange"}
	KindRoleBinding   = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}
)

// CoreKinds are the kinds of a tenant namespace with its quota and limit
// range, and its RoleBindings when roleBindings is set.
func CoreKinds(roleBindings bool) []schema.GroupVersionKind {
	k := []schema.GroupVersionKind{KindNamespace, KindResourceQuota, KindLimitRange}
	if roleBindings {
		k = append(k, KindRoleBinding)
	}
	return k
}

// CoreReview is what review watches in a tenant's ResourceQuota (its hard
// limits) and RoleBindings (their subjects), when roleBindings is set.
func CoreReview(roleBindings bool) map[schema.GroupKind]Review {
	r := map[schema.GroupKind]Review{KindResourceQuota.GroupKind(): {Quotas: []QuotaMap{{Path: []string{"spec", "hard"}}}}}
	if roleBindings {
		r[KindRoleBinding.GroupKind()] = Review{Subjects: [][]string{{"subjects"}}}
	}
	return r
}

// CoreAccess is whom RoleBindings and ClusterRoleBindings (which a site
// template may render) give access: their subjects.
func CoreAccess() map[schema.GroupKind]Access {
	subjects := Access{Subjects: [][]string{{"subjects"}}}
	return map[schema.GroupKind]Access{
		KindRoleBinding.GroupKind():                                      subjects,
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: subjects,
	}
}
