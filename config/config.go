// Package config loads and validates the waldur-gitops config file. Key names follow
// the Python Waldur site agent wherever the concept is the same, so a site-agent
// config for the k8s-ut-namespace, rancher and okd plugins is a valid starting point.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// Backend types of the built-in backends (see package backend, where each
// registers itself).
const (
	BackendK8sUTNamespace = backend.K8sUTNamespace
	BackendRancher        = backend.Rancher
	BackendOKD            = backend.OKD
	BackendNamespace      = backend.Namespace
)

// BackendTypes lists the built-in backend types; backend.Types lists every
// registered one.
var BackendTypes = []string{BackendK8sUTNamespace, BackendNamespace, BackendOKD, BackendRancher}

// TokenEnv is the environment variable read for the Waldur token of an offering
// that sets neither waldur_api_token nor waldur_api_token_file.
const TokenEnv = "WALDUR_API_TOKEN"

// Secret is a credential. It never prints: fmt, slog and JSON see "[redacted]".
type Secret string

// String hides the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString hides the value from %#v.
func (s Secret) GoString() string { return `config.Secret("` + s.String() + `")` }

// MarshalJSON hides the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// Reveal returns the credential itself, for the one place that sends it.
func (s Secret) Reveal() string { return string(s) }

// formatSafely prints v, a method-less copy of a config type, with %v, %+v or %#v
// whatever the verb. For another verb, such as %s, fmt would print the type's
// pointer fields (the raw backend_settings, the profile settings) without calling
// Secret.String and so show the credentials.
func formatSafely(f fmt.State, verb rune, v any) {
	switch {
	case verb == 'v' && f.Flag('#'):
		fmt.Fprintf(f, "%#v", v)
	case verb == 'v' && f.Flag('+'):
		fmt.Fprintf(f, "%+v", v)
	default:
		fmt.Fprintf(f, "%v", v)
	}
}

type (
	plainLoaded   Loaded
	plainOffering Offering
	plainSettings Settings
)

// Format prints the config without its credentials, for every verb.
func (l Loaded) Format(f fmt.State, verb rune) { formatSafely(f, verb, plainLoaded(l)) }

// Format prints the offering without its credentials, for every verb.
func (o Offering) Format(f fmt.State, verb rune) { formatSafely(f, verb, plainOffering(o)) }

// Format prints the settings without their credentials, for every verb.
func (s Settings) Format(f fmt.State, verb rune) { formatSafely(f, verb, plainSettings(s)) }

// Config is the whole config file.
type Config struct {
	// Offerings are the Waldur offerings this tool renders, in file order.
	Offerings []Offering `yaml:"offerings"`
	// Git names the GitOps repository the rendered tree is committed to.
	Git Git `yaml:"git"`
	// Timezone dates usage reports (default UTC).
	Timezone string `yaml:"timezone"`
	// LogLevel is debug, info, warning or error (default info).
	LogLevel string `yaml:"log_level"`
	// DeletionGuard limits how many tenants one run may remove without a Waldur
	// Terminate order behind them.
	DeletionGuard DeletionGuard `yaml:"deletion_guard"`
	// Report names a file the run report (JSON) is written to after every run.
	Report string `yaml:"report"`
	// KeycloakState names a file the Keycloak stage keeps what its passes
	// found in between runs (relative to the config file), so that a run
	// started afresh (a CronJob) need not read every group again; "": kept
	// where the run writes anyway (a state ref of the GitOps repository,
	// ConfigMaps in direct mode); KeycloakStateOff: no memory at all.
	KeycloakState string `yaml:"keycloak_state"`
	// KeycloakStateNamespace holds the ConfigMaps of the Keycloak memory in
	// direct mode ("": POD_NAMESPACE, else the kubeconfig's or the service
	// account's namespace).
	KeycloakStateNamespace string `yaml:"keycloak_state_namespace"`
	// Metrics names the Prometheus Pushgateway the run's metrics are pushed to.
	Metrics Metrics `yaml:"metrics"`
	// Orders sets when executing orders are done, for every offering.
	Orders Orders `yaml:"orders"`
	// Usage is how the usage report (the report command) bills.
	Usage Usage `yaml:"usage"`
	// Review routes each class of change to git.branch or a review branch.
	Review Review `yaml:"review"`
	// Serve holds what only serve reads: its status page and its leader
	// election.
	Serve Serve `yaml:"serve"`
	// RunTimeout is a duration ("9m"): how long one run may take before the
	// stage in progress is cancelled and the run ends with exit 12 (default
	// DefaultRunTimeout for one-shot commands, serve's interval for serve).
	RunTimeout string `yaml:"run_timeout"`
	runTimeout time.Duration

	SentryDSN                 Ignored `yaml:"sentry_dsn"`
	ElasticAPMServerURL       Ignored `yaml:"elastic_apm_server_url"`
	GlobalProxy               Ignored `yaml:"global_proxy"`
	ReportingPeriods          Ignored `yaml:"reporting_periods"`
	ExposeBackendErrorDetails Ignored `yaml:"expose_backend_error_details"`
	LogShipping               Ignored `yaml:"log_shipping"`
}

// Allocation modes of limit-based components in the usage report.
const (
	// AllocationPeak bills the month's highest allocation (the default).
	AllocationPeak = "peak"
	// AllocationTimeWeighted bills unit-hours: each allocation × the hours it held.
	AllocationTimeWeighted = "time_weighted"
)

// Usage is how the usage report bills limit-based components.
type Usage struct {
	// Allocation is AllocationPeak (default) or AllocationTimeWeighted.
	Allocation string `yaml:"allocation"`
}

// DeletionGuard is the mass-deletion circuit breaker's policy.
type DeletionGuard struct {
	// MaxFraction is the share of existing tenants that may go without a
	// Terminate order (default 0.1).
	MaxFraction *float64 `yaml:"max_fraction"`
	// MinCount is the number of such removals below which the share is not
	// checked (default 5).
	MinCount *int `yaml:"min_count"`
}

// Git is the target GitOps repository.
type Git struct {
	// URL of the repository: https://…, ssh://…, git@host:path or a local path.
	URL string `yaml:"url"`
	// Branch to commit to (default main).
	Branch string `yaml:"branch"`
	// Path is the subdirectory this tool owns in the repository (default waldur).
	Path string `yaml:"path"`
	// AuthorName and AuthorEmail sign commits (default waldur-gitops, waldur-gitops@localhost).
	AuthorName  string `yaml:"author_name"`
	AuthorEmail string `yaml:"author_email"`

	// Username is the HTTPS user name sent with a password or a token.
	Username string `yaml:"username"`
	// PasswordFile and PasswordEnv name a file or an environment variable holding
	// the HTTPS password of Username.
	PasswordFile string `yaml:"password_file"`
	PasswordEnv  string `yaml:"password_env"`
	// TokenFile and TokenEnv name a file or an environment variable holding an
	// HTTPS access token (sent as the password of Username, else of x-access-token).
	TokenFile string `yaml:"token_file"`
	TokenEnv  string `yaml:"token_env"`
	// SSHKeyFile is the private key for ssh URLs; KnownHostsFile the host keys
	// the server is checked against.
	SSHKeyFile     string `yaml:"ssh_key_file"`
	KnownHostsFile string `yaml:"known_hosts_file"`
	// SigningKeyFile is the key commits are signed with, of SigningKeyType ssh
	// or openpgp; no signature without it.
	SigningKeyFile string `yaml:"signing_key_file"`
	SigningKeyType string `yaml:"signing_key_type"`
	// Timeout is a duration ("2m") bounding one fetch and one push
	// (default DefaultGitTimeout).
	Timeout string `yaml:"timeout"`
	timeout time.Duration
	// PushRetries bounds how often a push that lost a race with another writer
	// is retried on the new tip (default 3).
	PushRetries *int `yaml:"push_retries"`
	// FluxShards is the number of Flux shard entry points generated per offering
	// target (default 0: none).
	FluxShards int `yaml:"flux_shards"`
	// FluxShardGeneration numbers the set of shards (default 0). Raising it
	// places every tenant afresh in new shards of FluxShards, leaving the old
	// ones orphaned: how an existing site is resharded (docs/gitops.md).
	FluxShardGeneration int `yaml:"flux_shard_generation"`
	// FluxShardParts is how many Flux Kustomizations apply each shard of a
	// new generation (default 1), all from the shard's one source: a shard of
	// many tenants in parts costs kustomize a fraction of one build per commit.
	// A generation keeps the count it was cut with (docs/gitops.md).
	FluxShardParts int `yaml:"flux_shard_parts"`
	// FluxNamespace is the namespace of the generated shard Kustomizations
	// (default flux-system).
	FluxNamespace string `yaml:"flux_namespace"`
	// FluxSourceName and FluxSourceNamespace name the GitRepository the shard
	// Kustomizations build from (defaults waldur-tenants and FluxNamespace).
	FluxSourceName      string `yaml:"flux_source_name"`
	FluxSourceNamespace string `yaml:"flux_source_namespace"`
	// FluxNamePrefix starts the name of every shard Kustomization (default
	// "waldur-"): two installations feeding one Flux need different ones.
	FluxNamePrefix string `yaml:"flux_name_prefix"`
	// FluxReconcile makes every run that pushed a commit ask Flux to fetch it
	// at once, by annotating the GitRepository in the cluster of
	// FluxKubeconfigPath and FluxKubeconfigContext (client-go's rules when
	// unset, e.g. the CronJob's service account).
	FluxReconcile         bool   `yaml:"flux_reconcile"`
	FluxKubeconfigPath    string `yaml:"flux_kubeconfig_path"`
	FluxKubeconfigContext string `yaml:"flux_kubeconfig_context"`
	// FluxOCIRepository, set, chooses the OCI layout (docs/gitops.md): after
	// every push each shard's files go to the registry as an OCI artifact,
	// "<FluxOCIRepository>/<shard name>:latest", and the shard Kustomizations
	// build from one OCIRepository each, so a commit costs Flux only the
	// shards it changed. A repository prefix without scheme, e.g.
	// "registry.example.org/site/waldur-tenants".
	FluxOCIRepository string `yaml:"flux_oci_repository"`
	// FluxShardBranches chooses the shard-branch layout (docs/gitops.md):
	// every run also commits each shard's files to a branch of its own,
	// waldur-gitops/shards/<shard name>, only when they change, pushed
	// together with the branch, and the shard Kustomizations build from one
	// GitRepository each, so a commit costs Flux only the shards it changed
	// with nothing but Git. FluxShardBranchesURL is the URL those
	// GitRepositories fetch (default: URL) and FluxShardBranchesSecretName
	// the Secret (in FluxNamespace) they fetch with; none: anonymous.
	FluxShardBranches           bool   `yaml:"flux_shard_branches"`
	FluxShardBranchesURL        string `yaml:"flux_shard_branches_url"`
	FluxShardBranchesSecretName string `yaml:"flux_shard_branches_secret_name"`
	// FluxOCIInsecure talks plain HTTP to the registry, and makes the
	// OCIRepositories do so (a test registry only).
	FluxOCIInsecure bool `yaml:"flux_oci_insecure"`
	// FluxOCIUsername and FluxOCIPasswordFile or FluxOCIPasswordEnv (a
	// password or token) authenticate the pushes; none: anonymous.
	FluxOCIUsername     string `yaml:"flux_oci_username"`
	FluxOCIPasswordFile string `yaml:"flux_oci_password_file"`
	FluxOCIPasswordEnv  string `yaml:"flux_oci_password_env"`
	// FluxOCISecretName names the Secret (in FluxNamespace) the generated
	// OCIRepositories pull with; none: anonymous pulls.
	FluxOCISecretName string `yaml:"flux_oci_secret_name"`
	// ArgoCDNamespace, set when Argo CD consumes the repository (one
	// Application per tenant directory, examples/argocd), is where its
	// Applications live: order_done_on: applied then also waits for the
	// tenant's Application to be Synced at the pushed commit and Healthy,
	// read from the offering's cluster.
	ArgoCDNamespace string `yaml:"argocd_namespace"`
}

// Offering is one Waldur offering and the backend it renders for.
type Offering struct {
	// Name identifies the offering in logs, output paths and snapshots.
	Name string `yaml:"name"`
	// WaldurAPIURL is the Waldur server, with or without the /api suffix.
	WaldurAPIURL string `yaml:"waldur_api_url"`
	// WaldurAPIToken is the API token; see also WaldurAPITokenFile and WALDUR_API_TOKEN.
	WaldurAPIToken Secret `yaml:"waldur_api_token"`
	// WaldurAPITokenFile names a file holding the token (read when Waldur is contacted).
	WaldurAPITokenFile string `yaml:"waldur_api_token_file"`
	// WaldurOfferingUUID is the marketplace offering's UUID (dashed or not).
	WaldurOfferingUUID string `yaml:"waldur_offering_uuid"`
	// BackendType selects the render profile.
	BackendType string `yaml:"backend_type"`
	// BackendSettings holds the profile's settings, decoded by backend type into Settings.
	// It holds every value as written, credentials included, so it is kept out of JSON.
	BackendSettings yaml.Node `yaml:"backend_settings" json:"-"`
	// BackendComponents maps a Waldur component type to its description.
	BackendComponents map[string]Component `yaml:"backend_components"`
	// VerifySSL checks the Waldur server's certificate (default true).
	VerifySSL *bool `yaml:"verify_ssl"`
	// TemplatesDir names a directory of extra per-tenant templates (relative to the config file).
	TemplatesDir string `yaml:"templates_dir"`
	// AutoApprove approves the offering's pending-provider orders whose
	// resources render, and rejects those that cannot (default true, as the site agent).
	AutoApprove *bool `yaml:"auto_approve"`
	// OrderDoneOn says when an order is set done: "commit" (its manifests are
	// pushed, the default) or "applied" (also seen in the cluster).
	OrderDoneOn string `yaml:"order_done_on"`
	// OrderDoneTimeoutSeconds bounds the wait for "applied" per run (default 300).
	OrderDoneTimeoutSeconds *int `yaml:"order_done_timeout_seconds"`
	// QuotaShrink is what happens to a quota an Update order lowers below
	// what the tenant's namespace uses: QuotaShrinkHold (the default),
	// QuotaShrinkAllow or QuotaShrinkReview (see docs/quota-safety.md).
	QuotaShrink string `yaml:"quota_shrink"`
	// PreserveUnmanagedBackendUsers keeps, in the offering's managed
	// Keycloak groups, the members that are not offering users of the
	// offering in any state (as the site agent's key): only users Waldur has
	// known for the offering are removed. Default false: whoever the render
	// does not ask for is removed.
	PreserveUnmanagedBackendUsers bool `yaml:"preserve_unmanaged_backend_users"`
	// Capacity, when set, accounts the offering's tenants against a pool
	// and keeps orders that would oversell it from approval (capacity.go).
	Capacity *Capacity `yaml:"capacity"`

	// Settings is BackendSettings decoded and defaulted.
	Settings Settings `yaml:"-"`
	// configDir is the config file's directory, which relative paths in
	// backend_settings are resolved against.
	configDir string

	// StompEnabled makes serve consume the offering's Waldur events (STOMP
	// over WebSocket), as serve --events does for every offering.
	StompEnabled bool `yaml:"stomp_enabled"`
	// StompWSHost, StompWSPort and StompWSPath locate RabbitMQ's web-STOMP
	// (default: the Waldur API host, port 443 or 80, path /rmqws-stomp).
	StompWSHost string `yaml:"stomp_ws_host"`
	StompWSPort int    `yaml:"stomp_ws_port"`
	StompWSPath string `yaml:"stomp_ws_path"`
	// WebsocketUseTLS chooses wss (default: as waldur_api_url's scheme).
	WebsocketUseTLS *bool `yaml:"websocket_use_tls"`

	StompMembershipSyncEnabled    Ignored `yaml:"stomp_membership_sync_enabled"`
	OrderProcessingBackend        Ignored `yaml:"order_processing_backend"`
	MembershipSyncBackend         Ignored `yaml:"membership_sync_backend"`
	ReportingBackend              Ignored `yaml:"reporting_backend"`
	UsernameManagementBackend     Ignored `yaml:"username_management_backend"`
	ResourceImportEnabled         Ignored `yaml:"resource_import_enabled"`
	UsernameReconciliationEnabled Ignored `yaml:"username_reconciliation_enabled"`
	OIDCTokenURL                  Ignored `yaml:"oidc_token_url"`
	OIDCClientID                  Ignored `yaml:"oidc_client_id"`
	OIDCClientSecret              Ignored `yaml:"oidc_client_secret"`
}

// Component describes a Waldur offering component (the map key is its type in Waldur).
type Component struct {
	// Type is the kind of resource the component meters (cpu, ram, storage, gpu, …);
	// default: the component's key.
	Type string `yaml:"type"`
	// K8sResource names an extended resource (e.g. nvidia.com/gpu-h100); the
	// namespace, okd and rancher profiles then quota requests.<k8s_resource>.
	K8sResource    string  `yaml:"k8s_resource"`
	MeasuredUnit   string  `yaml:"measured_unit"`
	AccountingType string  `yaml:"accounting_type"`
	Label          string  `yaml:"label"`
	UnitFactor     float64 `yaml:"unit_factor"`
	Limit          float64 `yaml:"limit"`
	// MeasuredFrom names the ResourceQuota status.used key (e.g. requests.cpu)
	// that a usage component is measured from, in unit-hours.
	MeasuredFrom string `yaml:"measured_from"`

	UnitFactorReporting Ignored `yaml:"unit_factor_reporting"`
	Description         Ignored `yaml:"description"`
	MinValue            Ignored `yaml:"min_value"`
	MaxValue            Ignored `yaml:"max_value"`
	MaxAvailableLimit   Ignored `yaml:"max_available_limit"`
	DefaultLimit        Ignored `yaml:"default_limit"`
	LimitPeriod         Ignored `yaml:"limit_period"`
	ArticleCode         Ignored `yaml:"article_code"`
	IsBoolean           Ignored `yaml:"is_boolean"`
	IsPrepaid           Ignored `yaml:"is_prepaid"`
}

// ComponentType returns the type of the component with the given key.
func (o *Offering) ComponentType(key string) string {
	if c, ok := o.BackendComponents[key]; ok && c.Type != "" {
		return c.Type
	}
	return key
}

// VerifiesSSL reports whether the Waldur certificate is checked.
func (o *Offering) VerifiesSSL() bool { return o.VerifySSL == nil || *o.VerifySSL }

// Token returns the Waldur API token: waldur_api_token, else the contents of
// waldur_api_token_file, else $WALDUR_API_TOKEN.
func (o *Offering) Token() (Secret, error) {
	switch {
	case o.WaldurAPIToken != "":
		return o.WaldurAPIToken, nil
	case o.WaldurAPITokenFile != "":
		b, err := os.ReadFile(o.WaldurAPITokenFile)
		if err != nil {
			return "", fmt.Errorf("offering %s: read waldur_api_token_file: %w", o.Name, err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("offering %s: waldur_api_token_file %s is empty", o.Name, o.WaldurAPITokenFile)
		}
		redact.Register(t)
		return Secret(t), nil
	case strings.TrimSpace(os.Getenv(TokenEnv)) != "":
		t := strings.TrimSpace(os.Getenv(TokenEnv))
		redact.Register(t)
		return Secret(t), nil
	}
	return "", fmt.Errorf("offering %s: no Waldur token: set waldur_api_token, waldur_api_token_file or $%s", o.Name, TokenEnv)
}

// Loaded is the result of Load: the config and the warnings met on the way.
type Loaded struct {
	*Config
	// Path is the file the config was read from.
	Path string
	// Warnings lists keys that were accepted but have no effect.
	Warnings []string
}

// Load reads, decodes, defaults and validates a config file. Every problem in the
// file is reported at once in a *ValidationError.
func Load(path string) (*Loaded, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	l, err := Parse(b, path)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Parse decodes and validates config text; path is used in messages and to resolve
// relative paths in the file.
func Parse(data []byte, path string) (*Loaded, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &ValidationError{File: path, Problems: []Problem{{Path: "(file)", Message: "not valid YAML: " + err.Error()}}}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return nil, &ValidationError{File: path, Problems: []Problem{{Path: "(file)", Message: "the file is empty: it needs at least an offerings list"}}}
	}
	if top := doc.Content[0]; top.Kind != yaml.MappingNode {
		// kindOf, not describe: the file might hold nothing but a token.
		return nil, &ValidationError{File: path, Problems: []Problem{{Path: "(file)", Line: top.Line,
			Message: "the top level must be a mapping of keys (offerings, git, …), got " + kindOf(top)}}}
	}
	cfg := &Config{}
	r := &report{}
	decodeNode(&doc, reflect.ValueOf(cfg).Elem(), "", r)
	cfg.applyDefaults(path)
	cfg.Metrics.applyDefaults(filepath.Dir(path))
	cfg.Serve.applyDefaults(filepath.Dir(path))
	cfg.validate(r)
	cfg.Metrics.validate(r)
	cfg.Serve.validate(r)
	registerSecrets(cfg)
	if len(r.problems) > 0 {
		r.sortProblems()
		return nil, &ValidationError{File: path, Problems: r.problems}
	}
	return &Loaded{Config: cfg, Path: path, Warnings: r.warnings}, nil
}

// IsValidation reports whether err is (or wraps) a config validation error.
func IsValidation(err error) bool {
	var v *ValidationError
	return errors.As(err, &v)
}

// Metrics is where sync, apply and report push the metrics of their run: a
// Prometheus Pushgateway, for runs from a CronJob that nobody can scrape.
// Nothing is pushed when PushgatewayURL is empty.
type Metrics struct {
	// PushgatewayURL is the Pushgateway's base URL (http or https, without
	// /metrics/job/…).
	PushgatewayURL string `yaml:"pushgateway_url"`
	// Job is the job label of the pushed group (default waldur-gitops).
	Job string `yaml:"job"`
	// Grouping holds further grouping labels of the pushed group, such as instance.
	Grouping map[string]string `yaml:"grouping"`
	// Username is the HTTP basic-auth user; PasswordFile and PasswordEnv name
	// a file or an environment variable holding its password.
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
	PasswordEnv  string `yaml:"password_env"`
	// TimeoutSeconds bounds one push (default 10).
	TimeoutSeconds int `yaml:"timeout_seconds"`
}

// DefaultMetricsJob is the job label of pushed metrics when metrics.job is not set.
const DefaultMetricsJob = "waldur-gitops"

// labelName matches a Prometheus label name.
var labelName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// BasicAuth returns the basic-auth user name and password sent to the
// Pushgateway, read from metrics.password_file or metrics.password_env; both
// are empty when no password is configured.
func (m *Metrics) BasicAuth() (string, Secret, error) {
	var (
		secret Secret
		err    error
	)
	switch {
	case m.PasswordFile != "":
		secret, err = readSecretFile("metrics.password_file", m.PasswordFile)
	case m.PasswordEnv != "":
		secret, err = readSecretEnv("metrics.password_env", m.PasswordEnv)
	default:
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return m.Username, secret, nil
}

// DisplayURL is the Pushgateway URL as logs and errors show it: without any
// user information.
func (m *Metrics) DisplayURL() string {
	u, err := url.Parse(m.PushgatewayURL)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

func (m *Metrics) applyDefaults(dir string) {
	if m.Job == "" {
		m.Job = DefaultMetricsJob
	}
	if m.TimeoutSeconds == 0 {
		m.TimeoutSeconds = 10
	}
	if m.PasswordFile != "" && !filepath.IsAbs(m.PasswordFile) {
		m.PasswordFile = filepath.Join(dir, m.PasswordFile)
	}
}

// validate checks the Pushgateway address, the grouping labels and that the
// credentials come from a file or the environment.
func (m *Metrics) validate(r *report) {
	if m.PushgatewayURL != "" {
		u, ok := checkURL("metrics.pushgateway_url", m.PushgatewayURL, "use metrics.username with password_file or password_env", r)
		switch {
		case !ok:
		case u.RawQuery != "" || u.Fragment != "":
			r.addf("metrics.pushgateway_url", nil, "must not have a query or fragment")
		case strings.Contains(u.Path, "/metrics/job"):
			r.addf("metrics.pushgateway_url", nil, "give the Pushgateway's base URL, without /metrics/job/…")
		}
	} else if m.Username != "" || m.PasswordFile != "" || m.PasswordEnv != "" || len(m.Grouping) > 0 {
		r.addf("metrics.pushgateway_url", nil, "required with metrics.username, password_file, password_env or grouping")
	}
	if strings.TrimSpace(m.Job) != m.Job {
		r.addf("metrics.job", nil, "%q has leading or trailing white space", m.Job)
	}
	for k, v := range m.Grouping {
		switch {
		case !labelName.MatchString(k) || strings.HasPrefix(k, "__"):
			r.addf("metrics.grouping."+k, nil, "%q is not a usable label name", k)
		case k == "job":
			r.addf("metrics.grouping.job", nil, "set the job label with metrics.job")
		case k == "command":
			r.addf("metrics.grouping.command", nil, "is set by waldur-gitops to the command that pushes (sync, apply, report, keycloak)")
		case v == "":
			r.addf("metrics.grouping."+k, nil, "must not be empty")
		}
	}
	if m.PasswordFile != "" && m.PasswordEnv != "" {
		r.addf("metrics.password_env", nil, "set only one of password_file and password_env")
	}
	if (m.PasswordFile != "" || m.PasswordEnv != "") && m.Username == "" {
		r.addf("metrics.username", nil, "required with a password")
	}
	if m.Username != "" && m.PasswordFile == "" && m.PasswordEnv == "" {
		r.addf("metrics.username", nil, "needs a password: set metrics.password_file or metrics.password_env")
	}
	if m.PasswordEnv != "" && !envName.MatchString(m.PasswordEnv) {
		r.addf("metrics.password_env", nil, "%q is not an environment variable name", m.PasswordEnv)
	}
	if m.TimeoutSeconds < 1 || m.TimeoutSeconds > 300 {
		r.addf("metrics.timeout_seconds", nil, "must be between 1 and 300, got %d", m.TimeoutSeconds)
	}
}
