package config

import "time"

// Settings is an offering's backend_settings, decoded for its backend type. Exactly
// one of the profile pointers is set, or Custom for a backend that registers
// settings of its own (backend.Backend.Settings).
type Settings struct {
	K8sUT     *K8sUTSettings
	Namespace *NamespaceSettings
	OKD       *OKDSettings
	Rancher   *RancherSettings
	Custom    any
}

// commonSettings is what the settings of a registered backend implement;
// a struct that embeds CommonSettings does.
type commonSettings interface{ Common() *CommonSettings }

// settingsValue is what every profile's settings implement, through the
// CommonSettings they embed; a built-in overrides the methods its settings
// change (see builtins.go).
type settingsValue interface {
	commonSettings
	// cluster returns the kubeconfig file and context of a target's cluster.
	cluster(target string) (path, context string)
	// kubeconfigKeys lists the keys that name kubeconfig files and contexts.
	kubeconfigKeys() []kubeconfigKey
	// groupVars returns the group-name pattern variables the settings give.
	groupVars() map[string]string
}

// value returns the offering's settings, whichever profile they are of.
func (s Settings) value() settingsValue {
	switch {
	case s.K8sUT != nil:
		return s.K8sUT
	case s.Namespace != nil:
		return s.Namespace
	case s.OKD != nil:
		return s.OKD
	case s.Rancher != nil:
		return s.Rancher
	}
	if v, ok := s.Custom.(settingsValue); ok {
		return v
	}
	if c, ok := s.Custom.(commonSettings); ok {
		return c.Common()
	}
	return &CommonSettings{}
}

// Common returns the settings every profile shares.
func (s Settings) Common() *CommonSettings { return s.value().Common() }

// Kubeconfig returns the kubeconfig file and context of the cluster a target
// goes to: the common kubeconfig_path and kubeconfig_context, unless the
// profile's settings name another cluster for the target (Rancher's
// management target goes to the management cluster when either of its keys
// is set). Empty values are client-go's defaults.
func (s Settings) Kubeconfig(target string) (path, context string) {
	return s.value().cluster(target)
}

// GroupVars returns the values the profile's settings give to group-name
// pattern variables (see GroupVars): rancher's cluster_id,
// cluster_id_short, cluster_uuid and role; nil for the other profiles.
func (s Settings) GroupVars() map[string]string { return s.value().groupVars() }

// SubjectUserPrefix is what the profile puts before user names in its
// RoleBinding subjects: the namespace profile's user_prefix, "" for the
// others.
func (s Settings) SubjectUserPrefix() string {
	if s.Namespace != nil {
		return s.Namespace.UserPrefix
	}
	return ""
}

// Common returns the settings themselves; a profile's settings, which embed
// them, return their common part.
func (c *CommonSettings) Common() *CommonSettings { return c }

// cluster is the common cluster, whatever the target.
func (c *CommonSettings) cluster(string) (path, context string) {
	return c.KubeconfigPath, c.KubeconfigContext
}

// kubeconfigKey is a key of backend_settings that names a kubeconfig file
// (path) or a context of one.
type kubeconfigKey struct {
	key   string
	value *string
	path  bool
}

func (c *CommonSettings) kubeconfigKeys() []kubeconfigKey {
	return []kubeconfigKey{{"kubeconfig_path", &c.KubeconfigPath, true}, {"kubeconfig_context", &c.KubeconfigContext, false}}
}

func (c *CommonSettings) groupVars() map[string]string { return nil }

// CommonSettings are the backend_settings keys every profile reads.
type CommonSettings struct {
	// NamespaceLabels are added to every tenant namespace.
	NamespaceLabels map[string]string `yaml:"namespace_labels"`
	// NamespaceAnnotations are added to every tenant namespace.
	NamespaceAnnotations map[string]string `yaml:"namespace_annotations"`
	// PausedLimits are the limits, by component type, of a paused resource;
	// a type not listed gets 0 (default: everything 0).
	PausedLimits map[string]int64 `yaml:"paused_limits"`
	// DownscaledLimits are the limits, by component type, of a downscaled resource;
	// a type not listed gets 0 (default: cpu 1, ram 1, memory 1, storage 1).
	DownscaledLimits map[string]int64 `yaml:"downscaled_limits"`
	// KeycloakEnabled turns on Keycloak groups (and the manifest fields naming them).
	KeycloakEnabled bool `yaml:"keycloak_enabled"`
	// Keycloak holds the connection settings of the Keycloak admin API.
	Keycloak KeycloakSettings `yaml:"keycloak"`
	// KeycloakUseUserID looks users up by Keycloak id first (default true).
	KeycloakUseUserID *bool `yaml:"keycloak_use_user_id"`
	// KeycloakGroups names the offering's Keycloak groups (see config/keycloak.go).
	KeycloakGroups KeycloakGroupSettings `yaml:"keycloak_groups"`
	// KubeconfigPath is the cluster the apply and report commands talk to
	// (relative to the config file; default: $KUBECONFIG, ~/.kube/config, in-cluster).
	KubeconfigPath string `yaml:"kubeconfig_path"`
	// KubeconfigContext picks a context of that kubeconfig (default: its current context).
	KubeconfigContext string `yaml:"kubeconfig_context"`

	CustomerPrefix           Ignored `yaml:"customer_prefix"`
	CheckBackendIDUniqueness Ignored `yaml:"check_backend_id_uniqueness"`
	CheckAllOfferings        Ignored `yaml:"check_all_offerings"`
	BackendIDMaxRetries      Ignored `yaml:"backend_id_max_retries"`
	DefaultAccount           Ignored `yaml:"default_account"`
	SoftDelete               Ignored `yaml:"soft_delete"`
	DefaultHomedirUmask      Ignored `yaml:"default_homedir_umask"`
}

// KeycloakSettings are the keycloak-client settings of the site agent.
type KeycloakSettings struct {
	URL       string `yaml:"keycloak_url"`
	Realm     string `yaml:"keycloak_realm"`
	UserRealm string `yaml:"keycloak_user_realm"`
	ClientID  string `yaml:"client_id"`
	Username  string `yaml:"keycloak_username"`
	Password  Secret `yaml:"keycloak_password"`
	// PasswordFile and PasswordEnv name a file (relative to the config file) or
	// an environment variable holding the password instead of keycloak_password.
	PasswordFile string `yaml:"keycloak_password_file"`
	PasswordEnv  string `yaml:"keycloak_password_env"`
	SSLVerify    *bool  `yaml:"keycloak_ssl_verify"`
	// ClientSecret is the secret of a confidential client_id: with a user name it
	// is sent along with the password, without one the client logs in by itself
	// (client credentials).
	ClientSecret Secret `yaml:"client_secret"`
	// ClientSecretFile and ClientSecretEnv hold the client secret instead of client_secret.
	ClientSecretFile string `yaml:"client_secret_file"`
	ClientSecretEnv  string `yaml:"client_secret_env"`
	// RequestsPerSecond caps the calls to Keycloak (default 100; 0: no cap).
	RequestsPerSecond *float64 `yaml:"requests_per_second"`
	// Concurrency is the number of calls in flight at once (default 4).
	Concurrency *int `yaml:"concurrency"`
	// PageSize is the number of groups or members asked for per call (default 100).
	PageSize *int `yaml:"page_size"`
	// TimeoutSeconds bounds every call (default 30).
	TimeoutSeconds *int `yaml:"timeout_seconds"`
	// MaxRetries is how often a call that failed with a 5xx answer, a 429 or a
	// transport error is retried, with exponential backoff (default 5).
	MaxRetries *int `yaml:"max_retries"`
	// VerifyEvery is a duration ("6h", "30m"): the bound within which a pass
	// that starts from what earlier passes found re-reads every group
	// (default 12h; "0" reads every group at every pass).
	VerifyEvery string `yaml:"verify_every"`

	verifyEvery time.Duration
}

// K8sUTSettings configure the k8s-ut-namespace profile (ManagedNamespace CRs).
type K8sUTSettings struct {
	CommonSettings `yaml:",inline"`
	// CRNamespace holds the ManagedNamespace objects (default waldur-system).
	CRNamespace string `yaml:"cr_namespace"`
	// NamespacePrefix precedes the resource slug in the namespace name (default waldur-).
	NamespacePrefix string `yaml:"namespace_prefix"`
	// DefaultRole is the namespace role of a Waldur role not in the mapping (default readwrite).
	DefaultRole string `yaml:"default_role"`
	// RoleMapping maps Waldur roles to admin, readwrite or readonly, merged over
	// manager→admin, admin→admin, member→readwrite.
	RoleMapping map[string]string `yaml:"role_mapping"`
	// ComponentQuotaMapping maps component types to spec.quota keys, merged over
	// cpu→cpu, ram→memory, storage→storage, gpu→gpu.
	ComponentQuotaMapping map[string]string `yaml:"component_quota_mapping"`
	// SyncUsersToCR writes adminUsers, rwUsers and roUsers.
	SyncUsersToCR bool `yaml:"sync_users_to_cr"`
	// CRUserIdentityField is the offering-user attribute used as identity (default email).
	CRUserIdentityField string `yaml:"cr_user_identity_field"`
	// CRUserIdentityLowercase lower-cases the identities.
	CRUserIdentityLowercase bool `yaml:"cr_user_identity_lowercase"`

	AllocationPrefix Ignored `yaml:"allocation_prefix"`
	ProjectPrefix    Ignored `yaml:"project_prefix"`
}

// NamespaceSettings configure the plain Kubernetes profile.
type NamespaceSettings struct {
	CommonSettings `yaml:",inline"`
	// NamespacePrefix precedes the resource slug in the namespace name (default waldur-).
	NamespacePrefix string `yaml:"namespace_prefix"`
	// DefaultRole is the namespace role of a Waldur role not in the mapping (default readwrite).
	DefaultRole string `yaml:"default_role"`
	// RoleMapping maps Waldur roles to admin, readwrite or readonly (defaults as k8s-ut-namespace).
	RoleMapping map[string]string `yaml:"role_mapping"`
	// ClusterRoles maps namespace roles to the ClusterRoles bound
	// (default admin→admin, readwrite→edit, readonly→view).
	ClusterRoles map[string]string `yaml:"cluster_roles"`
	// ComponentQuotaMapping maps component types to ResourceQuota keys, merged over
	// cpu→limits.cpu, ram→limits.memory, storage→requests.storage, gpu→requests.nvidia.com/gpu.
	ComponentQuotaMapping map[string]string `yaml:"component_quota_mapping"`
	// QuotaName names the ResourceQuota (default waldur-quota).
	QuotaName string `yaml:"quota_name"`
	// BindGroups binds the OIDC groups ns_<slug>_<role> (default: keycloak_enabled).
	BindGroups *bool `yaml:"bind_groups"`
	// GroupPrefix precedes group names in RoleBinding subjects (the API server's --oidc-groups-prefix).
	GroupPrefix string `yaml:"group_prefix"`
	// BindUsers binds team members as User subjects (default true).
	BindUsers *bool `yaml:"bind_users"`
	// UserPrefix precedes user names in RoleBinding subjects (the API server's --oidc-username-prefix).
	UserPrefix string `yaml:"user_prefix"`
	// UserIdentityField names the user attribute bound as the User subject:
	// username (the offering username, the default), email, civil_number,
	// full_name, first_name or last_name.
	UserIdentityField string `yaml:"user_identity_field"`
}

// OKDSettings configure the okd profile (OpenShift projects).
type OKDSettings struct {
	CommonSettings `yaml:",inline"`
	// NamespacePrefix and AllocationPrefix precede the slug: <namespace_prefix><allocation_prefix><slug>
	// (defaults waldur- and alloc-).
	NamespacePrefix  string `yaml:"namespace_prefix"`
	AllocationPrefix string `yaml:"allocation_prefix"`
	// CustomerPrefix and ProjectPrefix name the organization and parent annotations:
	// <namespace_prefix><customer_prefix><customer_slug> (default org-) and
	// <namespace_prefix><project_prefix><project_slug> (default proj-).
	CustomerPrefix string `yaml:"customer_prefix"`
	ProjectPrefix  string `yaml:"project_prefix"`
	// DefaultRole is the ClusterRole of a Waldur role not in the mapping (default
	// view: an unknown role never gets more than a member).
	DefaultRole string `yaml:"default_role"`
	// RoleMapping maps Waldur roles to ClusterRoles, merged over DefaultOKDRoleMapping.
	RoleMapping map[string]string `yaml:"role_mapping"`

	APIURL      Ignored `yaml:"api_url"`
	Token       Ignored `yaml:"token"`
	VerifyCert  Ignored `yaml:"verify_cert"`
	TokenConfig Ignored `yaml:"token_config"`
}

// RancherSettings configure the rancher profile.
type RancherSettings struct {
	CommonSettings `yaml:",inline"`
	// ClusterID is the downstream cluster's id (e.g. c-m-1234abcd); required.
	ClusterID string `yaml:"cluster_id"`
	// ProjectPrefix precedes the slug in the project display name and the namespace (default waldur-).
	ProjectPrefix string `yaml:"project_prefix"`
	// DefaultRole is the project role template bound to the Keycloak group (default workloads-manage).
	DefaultRole string `yaml:"default_role"`
	// QuotaName names the downstream ResourceQuota (default custom-resource-quota).
	QuotaName string `yaml:"quota_name"`
	// BindingNamespace places the ProjectRoleTemplateBinding: "backing" puts it in
	// the project's backing namespace <cluster_id>-<project> (Rancher 2.9.9, 2.10.5,
	// 2.11.1, 2.12 and later, the default); "project" in the namespace named after
	// the project (earlier releases).
	BindingNamespace string `yaml:"binding_namespace"`
	// ManagementKubeconfigPath and ManagementKubeconfigContext name the Rancher
	// management (local) cluster that the Project and ProjectRoleTemplateBinding
	// are applied to; unset, they go where kubeconfig_path points.
	ManagementKubeconfigPath    string `yaml:"management_kubeconfig_path"`
	ManagementKubeconfigContext string `yaml:"management_kubeconfig_context"`

	BackendURL Ignored `yaml:"backend_url"`
	Username   Ignored `yaml:"username"`
	Password   Ignored `yaml:"password"`
	VerifyCert Ignored `yaml:"verify_cert"`
}

// Namespace roles of the k8s-ut-namespace and namespace profiles, in order.
const (
	NSRoleAdmin     = "admin"
	NSRoleReadWrite = "readwrite"
	NSRoleReadOnly  = "readonly"
)

// NamespaceRoles lists the namespace roles in order.
var NamespaceRoles = []string{NSRoleAdmin, NSRoleReadWrite, NSRoleReadOnly}

// DefaultNSRoleMapping is the site agent's Waldur-role → namespace-role
// mapping, with the roles waldur-gitops gives a project's service accounts
// (readwrite: they run the project's automation) and course accounts
// (readonly: students see the course's namespace).
func DefaultNSRoleMapping() map[string]string {
	return map[string]string{"manager": NSRoleAdmin, "admin": NSRoleAdmin, "member": NSRoleReadWrite,
		"service_account": NSRoleReadWrite, "course_account": NSRoleReadOnly}
}

// DefaultOKDRoleMapping is the okd profile's Waldur-role → ClusterRole mapping,
// least privilege first: the organisation owner administers the project,
// project managers and admins edit it, members and observers view it. The
// default_role of a role not listed is view too, so that no unknown role gets
// more than a member. A project service account edits, a course account views.
func DefaultOKDRoleMapping() map[string]string {
	return map[string]string{"owner": "admin", "manager": "edit", "admin": "edit", "member": "view", "observer": "view",
		"service_account": "edit", "course_account": "view"}
}

// defaultDownscaled is the default downscaled limit set, by component type.
func defaultDownscaled() map[string]int64 {
	return map[string]int64{"cpu": 1, "ram": 1, "memory": 1, "storage": 1}
}
