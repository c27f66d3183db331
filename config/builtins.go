package config

import (
	"cmp"
	"strings"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/manifest"
)

// The config half of the four built-in backends, whose registrations are in
// package backend (backend/<name>.go): the settings each profile's
// backend_settings decode into, with their defaults, and their checks. The
// settings types are declared in settings.go because they are part of
// config's API (Settings.K8sUT, .Namespace, .OKD, .Rancher); the registration
// names the profile and builtinSettings is the one place that binds a profile
// name to its settings. A backend that brings its own settings puts them in
// its registration (backend.Backend.Settings and CheckSettings) instead.

// profileSettings are the settings of a built-in profile.
type profileSettings interface {
	settingsValue
	// check completes the decoded settings and reports what is wrong with
	// them under sp, the key path of backend_settings.
	check(sp string, r *report)
}

// builtinSettings returns, by profile, a built-in profile's settings with
// their defaults, set in their field of s.
var builtinSettings = map[string]func(s *Settings) profileSettings{
	backend.K8sUTNamespace: func(s *Settings) profileSettings {
		s.K8sUT = &K8sUTSettings{CRNamespace: "waldur-system", NamespacePrefix: "waldur-", DefaultRole: NSRoleReadWrite, CRUserIdentityField: "email"}
		return s.K8sUT
	},
	backend.Namespace: func(s *Settings) profileSettings {
		s.Namespace = &NamespaceSettings{NamespacePrefix: "waldur-", DefaultRole: NSRoleReadWrite, QuotaName: "waldur-quota", UserIdentityField: "username"}
		return s.Namespace
	},
	backend.OKD: func(s *Settings) profileSettings {
		s.OKD = &OKDSettings{NamespacePrefix: "waldur-", AllocationPrefix: "alloc-", CustomerPrefix: "org-", ProjectPrefix: "proj-", DefaultRole: "view"}
		return s.OKD
	},
	backend.Rancher: func(s *Settings) profileSettings {
		s.Rancher = &RancherSettings{ProjectPrefix: "waldur-", DefaultRole: "workloads-manage", QuotaName: "custom-resource-quota", BindingNamespace: "backing"}
		return s.Rancher
	},
}

func (s *K8sUTSettings) check(sp string, r *report) {
	checkPrefix(sp+".namespace_prefix", s.NamespacePrefix, r)
	if !manifest.IsDNS1123Label(s.CRNamespace) {
		r.addf(sp+".cr_namespace", nil, "%q is not a valid namespace name (RFC 1123 label)", s.CRNamespace)
	}
	s.RoleMapping = mergeRoles(sp+".role_mapping", DefaultNSRoleMapping(), s.RoleMapping, NamespaceRoles, r)
	checkOneOf(sp+".default_role", s.DefaultRole, NamespaceRoles, r)
	s.ComponentQuotaMapping = mergeMap(map[string]string{"cpu": "cpu", "ram": "memory", "storage": "storage", "gpu": "gpu"}, s.ComponentQuotaMapping)
	checkOneOf(sp+".cr_user_identity_field", s.CRUserIdentityField, IdentityFields, r)
}

func (s *NamespaceSettings) check(sp string, r *report) {
	checkPrefix(sp+".namespace_prefix", s.NamespacePrefix, r)
	s.RoleMapping = mergeRoles(sp+".role_mapping", DefaultNSRoleMapping(), s.RoleMapping, NamespaceRoles, r)
	checkOneOf(sp+".default_role", s.DefaultRole, NamespaceRoles, r)
	s.ClusterRoles = mergeMap(map[string]string{NSRoleAdmin: "admin", NSRoleReadWrite: "edit", NSRoleReadOnly: "view"}, s.ClusterRoles)
	for role := range s.ClusterRoles {
		checkOneOf(sp+".cluster_roles."+role, role, NamespaceRoles, r)
	}
	s.ComponentQuotaMapping = mergeMap(map[string]string{"cpu": "limits.cpu", "ram": "limits.memory", "storage": "requests.storage", "gpu": "requests.nvidia.com/gpu"}, s.ComponentQuotaMapping)
	checkOneOf(sp+".user_identity_field", s.UserIdentityField, IdentityFields, r)
	if !manifest.IsDNS1123Label(s.QuotaName) {
		r.addf(sp+".quota_name", nil, "%q is not a valid object name (RFC 1123 label)", s.QuotaName)
	}
	for key, prefix := range map[string]string{"group_prefix": s.GroupPrefix, "user_prefix": s.UserPrefix} {
		if p := strings.ToLower(prefix); strings.HasPrefix(p, "system:") || strings.HasPrefix(p, "kube:") {
			r.addf(sp+"."+key, nil, "%q would make every subject a name Kubernetes reserves (system:…, kube:…)", prefix)
		}
	}
	if s.BindGroups == nil {
		s.BindGroups = &s.KeycloakEnabled
	}
	if s.BindUsers == nil {
		t := true
		s.BindUsers = &t
	}
}

func (s *OKDSettings) check(sp string, r *report) {
	checkPrefix(sp+".namespace_prefix", s.NamespacePrefix, r)
	if s.NamespacePrefix == "" {
		checkPrefix(sp+".allocation_prefix", s.AllocationPrefix, r)
	} else if a := s.AllocationPrefix; a != "" && !nsPrefixTail.MatchString(a) {
		r.addf(sp+".allocation_prefix", nil, "%q can only yield names that are not RFC 1123 labels: use lower-case letters, digits and '-'", a)
	}
	s.RoleMapping = mergeMap(DefaultOKDRoleMapping(), normalizeKeys(sp+".role_mapping", s.RoleMapping, r))
	if s.DefaultRole == "" {
		r.addf(sp+".default_role", nil, "must not be empty")
	}
}

func (s *RancherSettings) check(sp string, r *report) {
	checkPrefix(sp+".project_prefix", s.ProjectPrefix, r)
	if s.ClusterID == "" {
		r.addf(sp+".cluster_id", nil, "required: the downstream cluster id, e.g. c-m-1234abcd")
	} else if !manifest.IsDNS1123Label(s.ClusterID) {
		r.addf(sp+".cluster_id", nil, "%q is not a Rancher cluster id (an RFC 1123 label such as c-m-1234abcd)", s.ClusterID)
	}
	if s.DefaultRole == "" {
		r.addf(sp+".default_role", nil, "must not be empty")
	}
	if !manifest.IsDNS1123Label(s.QuotaName) {
		r.addf(sp+".quota_name", nil, "%q is not a valid object name (RFC 1123 label)", s.QuotaName)
	}
	checkOneOf(sp+".binding_namespace", s.BindingNamespace, []string{"backing", "project"}, r)
}

// cluster sends the management target to the management cluster when either
// of its keys is set.
func (s *RancherSettings) cluster(target string) (path, context string) {
	path, context = s.CommonSettings.cluster(target)
	if target == backend.TargetManagement && (s.ManagementKubeconfigPath != "" || s.ManagementKubeconfigContext != "") {
		path, context = cmp.Or(s.ManagementKubeconfigPath, path), s.ManagementKubeconfigContext
	}
	return path, context
}

func (s *RancherSettings) kubeconfigKeys() []kubeconfigKey {
	return append(s.CommonSettings.kubeconfigKeys(),
		kubeconfigKey{"management_kubeconfig_path", &s.ManagementKubeconfigPath, true},
		kubeconfigKey{"management_kubeconfig_context", &s.ManagementKubeconfigContext, false})
}

// groupVars gives the cluster variables and the role of the project group.
func (s *RancherSettings) groupVars() map[string]string {
	return map[string]string{
		"cluster_id":       s.ClusterID,
		"cluster_id_short": clusterIDShort(s.ClusterID),
		"cluster_uuid":     s.KeycloakGroups.ClusterUUID,
		"role":             s.DefaultRole,
	}
}

// clusterIDShort is the site agent's cluster part of the parent group name: the
// cluster id without ':' and '-', cut to 8 characters.
func clusterIDShort(id string) string {
	s := strings.NewReplacer(":", "", "-", "").Replace(id)
	if len(s) > 8 {
		return s[:8]
	}
	return s
}
