package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/waldur"
)

// Defaults of the Keycloak connection settings.
const (
	DefaultKeycloakRequestsPerSecond = 0
	DefaultKeycloakConcurrency       = 16
	DefaultKeycloakPageSize          = 100
	DefaultKeycloakTimeoutSeconds    = 30
	DefaultKeycloakMaxRetries        = 5
	// DefaultKeycloakVerifyEvery is keycloak.verify_every's default.
	DefaultKeycloakVerifyEvery = 12 * time.Hour
)

// KeycloakStateOff, as keycloak_state, turns the Keycloak memory off: every
// pass reads every group.
const KeycloakStateOff = "off"

// Group-name presets.
const (
	// GroupPresetSiteAgent names groups as the Python site agent does.
	GroupPresetSiteAgent = "site-agent"
	// GroupPresetMastermind names Rancher groups as Waldur Mastermind's own
	// Rancher integration does.
	GroupPresetMastermind = "mastermind"
)

// GroupPresets lists the group-name presets.
var GroupPresets = []string{GroupPresetSiteAgent, GroupPresetMastermind}

// The patterns of each preset.
var groupPresetPatterns = map[string]KeycloakGroupSettings{
	GroupPresetSiteAgent:  {Namespace: "ns_{slug}_{role}", Parent: "c_{cluster_id_short}", Child: "project_{project_slug}_{role}"},
	GroupPresetMastermind: {Namespace: "ns_{slug}_{role}", Parent: "c_{cluster_uuid}", Child: "p_{project_uuid}_{role}"},
}

// KeycloakGroupSettings name the Keycloak groups of an offering and say what may
// be done to groups that exist already.
type KeycloakGroupSettings struct {
	// Preset fills the patterns that are not set: site-agent (default) or mastermind.
	Preset string `yaml:"preset"`
	// Namespace names the three role groups of a k8s-ut-namespace or namespace
	// tenant (default ns_{slug}_{role}).
	Namespace string `yaml:"namespace"`
	// Parent names the cluster-level parent group of a rancher offering
	// (default c_{cluster_id_short}).
	Parent string `yaml:"parent"`
	// Child names the group under Parent that a rancher project's role binding
	// refers to (default project_{project_slug}_{role}).
	Child string `yaml:"child"`
	// ClusterUUID is the Waldur Mastermind cluster UUID, {cluster_uuid} in the
	// patterns, in its 32-hex form once loaded.
	ClusterUUID string `yaml:"cluster_uuid"`
	// AdoptExisting takes over a group that exists with a desired name but without
	// the waldur-gitops marker: it gets the marker, and its members are then
	// reconciled like those of a group waldur-gitops created.
	AdoptExisting bool `yaml:"adopt_existing"`
}

// GroupVars are the variables a group-name pattern can use, with what they hold.
var GroupVars = map[string]string{
	"slug":             "the resource slug",
	"resource_uuid":    "the resource UUID (32 hex digits)",
	"namespace":        "the tenant's namespace name",
	"role":             "the namespace role (admin, readwrite, readonly), or the rancher default_role",
	"project_slug":     "the Waldur project slug",
	"project_uuid":     "the Waldur project UUID (32 hex digits)",
	"customer_slug":    "the Waldur organisation slug",
	"customer_uuid":    "the Waldur organisation UUID (32 hex digits)",
	"offering_uuid":    "the offering UUID (32 hex digits)",
	"cluster_id":       "the rancher cluster_id",
	"cluster_id_short": "the rancher cluster_id without ':' and '-', cut to 8 characters",
	"cluster_uuid":     "keycloak_groups.cluster_uuid",
}

// rancherOnlyVars are the variables only backends with cluster groups (rancher) have.
var rancherOnlyVars = []string{"cluster_id", "cluster_id_short", "cluster_uuid"}

// MaxGroupName is the longest group name Keycloak stores.
const MaxGroupName = 255

// GroupPattern is a group-name pattern: literal text with {variable} references.
type GroupPattern string

// Vars returns the variables the pattern refers to, in order, or why the pattern
// is not valid.
func (p GroupPattern) Vars() ([]string, error) {
	var vars []string
	s := string(p)
	if s == "" {
		return nil, fmt.Errorf("must not be empty")
	}
	for s != "" {
		open := strings.IndexAny(s, "{}")
		if open < 0 {
			return vars, checkLiteral(s)
		}
		if err := checkLiteral(s[:open]); err != nil {
			return nil, err
		}
		if s[open] == '}' {
			return nil, fmt.Errorf("%q has a '}' without a '{'", string(p))
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%q has a '{' without a '}'", string(p))
		}
		name := s[open+1 : open+end]
		if _, ok := GroupVars[name]; !ok {
			return nil, fmt.Errorf("%q refers to {%s}, which is not one of %s", string(p), name, groupVarList())
		}
		vars = append(vars, name)
		s = s[open+end+1:]
	}
	return vars, nil
}

// checkLiteral rejects characters a group name must not have: '/' separates
// the parts of a Keycloak group path, and space or control characters make
// names that cannot be told apart in logs and claims.
func checkLiteral(s string) error {
	for _, r := range s {
		switch {
		case r == '/':
			return fmt.Errorf("must not contain '/': Keycloak separates group paths with it")
		case r == '{' || r == '}':
			return fmt.Errorf("unbalanced braces")
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("must not contain white space or control characters")
		}
	}
	return nil
}

// Expand fills the pattern's variables from vars. A variable that is unset or
// empty, or a value with '/', is an error: the group cannot be named.
func (p GroupPattern) Expand(vars map[string]string) (string, error) {
	names, err := p.Vars()
	if err != nil {
		return "", fmt.Errorf("group name pattern %s", err)
	}
	out := string(p)
	for _, name := range names {
		v := vars[name]
		switch {
		case v == "":
			return "", fmt.Errorf("group name pattern %q: {%s} is empty for this resource", string(p), name)
		case strings.ContainsAny(v, "/"):
			return "", fmt.Errorf("group name pattern %q: {%s} is %q, which contains '/'", string(p), name, v)
		}
		out = strings.Replace(out, "{"+name+"}", v, 1)
	}
	if len(out) > MaxGroupName {
		return "", fmt.Errorf("group name %q is longer than %d characters", out, MaxGroupName)
	}
	return out, nil
}

func groupVarList() string {
	var names []string
	for k := range GroupVars {
		names = append(names, "{"+k+"}")
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// KeycloakTarget is the Keycloak realm an offering's groups live in; offerings
// with the same target are reconciled together.
func (c *CommonSettings) KeycloakTarget() string {
	return strings.TrimRight(c.Keycloak.URL, "/") + " realm " + c.Keycloak.Realm
}

// UseUserID reports whether Keycloak users are looked up by id first.
func (c *CommonSettings) UseUserID() bool { return c.KeycloakUseUserID == nil || *c.KeycloakUseUserID }

// VerifiesSSL reports whether Keycloak's certificate is checked.
func (k *KeycloakSettings) VerifiesSSL() bool { return k.SSLVerify == nil || *k.SSLVerify }

// secretSource is one of the keys a secret can be given with.
type secretSource struct {
	key string
	set bool
}

func (k *KeycloakSettings) hasPassword() bool {
	return k.Password != "" || k.PasswordFile != "" || k.PasswordEnv != ""
}

// passwordKey names the key the password is given with.
func (k *KeycloakSettings) passwordKey() string {
	switch {
	case k.PasswordFile != "":
		return "keycloak_password_file"
	case k.PasswordEnv != "":
		return "keycloak_password_env"
	}
	return "keycloak_password"
}

// HasClientSecret reports whether a client secret is configured, inline, in a
// file or in an environment variable.
func (k *KeycloakSettings) HasClientSecret() bool {
	return k.ClientSecret != "" || k.ClientSecretFile != "" || k.ClientSecretEnv != ""
}

// WithCredentials returns a copy of k whose Password and ClientSecret hold the
// secrets read from keycloak_password_file / keycloak_password_env and
// client_secret_file / client_secret_env. The files and variables are read at
// every call, so a rotated secret needs no restart.
func (k KeycloakSettings) WithCredentials() (KeycloakSettings, error) {
	var err error
	switch {
	case k.PasswordFile != "":
		k.Password, err = readSecretFile("keycloak.keycloak_password_file", k.PasswordFile)
	case k.PasswordEnv != "":
		k.Password, err = readSecretEnv("keycloak.keycloak_password_env", k.PasswordEnv)
	}
	if err != nil {
		return k, err
	}
	switch {
	case k.ClientSecretFile != "":
		k.ClientSecret, err = readSecretFile("keycloak.client_secret_file", k.ClientSecretFile)
	case k.ClientSecretEnv != "":
		k.ClientSecret, err = readSecretEnv("keycloak.client_secret_env", k.ClientSecretEnv)
	}
	return k, err
}

func (k *KeycloakSettings) applyDefaults() {
	if k.URL != "" && !strings.HasSuffix(k.URL, "/") {
		k.URL += "/"
	}
	if k.Realm == "" {
		k.Realm = "waldur"
	}
	if k.UserRealm == "" {
		k.UserRealm = "master"
	}
	if k.ClientID == "" {
		k.ClientID = "admin-cli"
	}
	setDefault(&k.RequestsPerSecond, DefaultKeycloakRequestsPerSecond)
	setDefault(&k.Concurrency, DefaultKeycloakConcurrency)
	setDefault(&k.PageSize, DefaultKeycloakPageSize)
	setDefault(&k.TimeoutSeconds, DefaultKeycloakTimeoutSeconds)
	setDefault(&k.MaxRetries, DefaultKeycloakMaxRetries)
	if strings.TrimSpace(k.VerifyEvery) == "" {
		k.VerifyEvery = "12h" // DefaultKeycloakVerifyEvery, as the docs write it
	}
	k.verifyEvery, _ = time.ParseDuration(strings.TrimSpace(k.VerifyEvery))
}

// VerifyInterval is keycloak.verify_every: the bound within which a pass
// that starts from a memory re-reads every group; 0 reads every group at
// every pass.
func (k *KeycloakSettings) VerifyInterval() time.Duration {
	if k.VerifyEvery == "" {
		return DefaultKeycloakVerifyEvery
	}
	return k.verifyEvery
}

func setDefault[T int | float64](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}

// validateKeycloak defaults and checks the keycloak and keycloak_groups keys of
// backend_settings at sp; profile is the registration of the profile the
// settings are of.
func (c *CommonSettings) validateKeycloak(sp string, profile *backend.Backend, dir string, r *report) {
	c.validateKeycloakConnection(sp, dir, r)
	c.validateKeycloakGroups(sp, profile, r)
}

// validateKeycloakConnection defaults and checks the keycloak key of
// backend_settings at sp: where Keycloak is, how to log in, how hard to use
// it.
func (c *CommonSettings) validateKeycloakConnection(sp, dir string, r *report) {
	k := &c.Keycloak
	k.applyDefaults()
	kp := sp + ".keycloak"
	for _, p := range []*string{&k.PasswordFile, &k.ClientSecretFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for _, set := range [][3]secretSource{
		{{"keycloak_password", k.Password != ""}, {"keycloak_password_file", k.PasswordFile != ""}, {"keycloak_password_env", k.PasswordEnv != ""}},
		{{"client_secret", k.ClientSecret != ""}, {"client_secret_file", k.ClientSecretFile != ""}, {"client_secret_env", k.ClientSecretEnv != ""}},
	} {
		var given []string
		for _, s := range set {
			if s.set {
				given = append(given, s.key)
			}
		}
		if len(given) > 1 {
			r.addf(kp+"."+given[1], nil, "set only one of %s, %s and %s (also set: %s)", set[0].key, set[1].key, set[2].key, given[0])
		}
	}
	if c.KeycloakEnabled && k.URL == "" {
		r.addf(kp+".keycloak_url", nil, "required when keycloak_enabled is true")
	} else if k.URL != "" {
		checkURL(kp+".keycloak_url", k.URL, "use keycloak_username with keycloak_password_file or keycloak_password_env, or client_secret_file", r)
	}
	if v := *k.RequestsPerSecond; v < 0 {
		r.addf(kp+".requests_per_second", nil, "must not be negative (0 turns the limit off), got %v", v)
	}
	if v := *k.Concurrency; v < 1 || v > 64 {
		r.addf(kp+".concurrency", nil, "must be between 1 and 64, got %d", v)
	}
	if v := *k.PageSize; v < 1 || v > 1000 {
		r.addf(kp+".page_size", nil, "must be between 1 and 1000, got %d", v)
	}
	if v := *k.TimeoutSeconds; v < 1 || v > 600 {
		r.addf(kp+".timeout_seconds", nil, "must be between 1 and 600, got %d", v)
	}
	if d, err := time.ParseDuration(strings.TrimSpace(k.VerifyEvery)); err != nil || d < 0 {
		r.addf(kp+".verify_every", nil, "must be a duration such as 6h or 30m (0 reads every group at every run), got %q", k.VerifyEvery)
	}
	if v := *k.MaxRetries; v < 0 || v > 20 {
		r.addf(kp+".max_retries", nil, "must be between 0 and 20, got %d", v)
	}
	for _, e := range []struct{ key, v string }{{"keycloak_password_env", k.PasswordEnv}, {"client_secret_env", k.ClientSecretEnv}} {
		if e.v != "" && !envName.MatchString(e.v) {
			r.addf(kp+"."+e.key, nil, "%q is not an environment variable name", e.v)
		}
	}
	if k.hasPassword() && k.Username == "" {
		r.addf(kp+"."+k.passwordKey(), nil, "set keycloak_username too: a password alone cannot log in")
	}
}

// validateKeycloakGroups defaults and checks the keycloak_groups key of
// backend_settings at sp: the preset, the keys that apply to the profile's
// groups (its registration's KeycloakGroups), and the group patterns.
func (c *CommonSettings) validateKeycloakGroups(sp string, profile *backend.Backend, r *report) {
	g := &c.KeycloakGroups
	gp := sp + ".keycloak_groups"
	if g.Preset == "" {
		g.Preset = GroupPresetSiteAgent
	}
	preset, ok := groupPresetPatterns[g.Preset]
	if !ok {
		r.addf(gp+".preset", nil, "must be one of %s, got %q", strings.Join(GroupPresets, ", "), g.Preset)
		preset = groupPresetPatterns[GroupPresetSiteAgent]
	}
	clusterGroups := profile.KeycloakGroups == backend.ClusterGroups
	// Keys set for a backend type that has no such groups are mistakes.
	for _, f := range []struct {
		key, value string
		applies    bool
	}{
		{"namespace", g.Namespace, profile.KeycloakGroups == backend.NamespaceGroups},
		{"parent", g.Parent, clusterGroups},
		{"child", g.Child, clusterGroups},
		{"cluster_uuid", g.ClusterUUID, clusterGroups},
	} {
		if f.value != "" && !f.applies {
			r.addf(gp+"."+f.key, nil, "has no effect for backend type %s", profile.Type)
		}
	}
	if g.ClusterUUID != "" {
		if u, err := waldur.ParseUUID(g.ClusterUUID); err != nil {
			r.addf(gp+".cluster_uuid", nil, "%v", err)
		} else {
			g.ClusterUUID = string(u)
		}
	}
	if g.Namespace == "" {
		g.Namespace = preset.Namespace
	}
	if g.Parent == "" {
		g.Parent = preset.Parent
	}
	if g.Child == "" {
		g.Child = preset.Child
	}
	g.checkPatterns(gp, clusterGroups, r)
}

// checkPatterns checks the group patterns that apply to the backend type (the
// namespace pattern, or the cluster groups' parent and child) at gp: they parse, use
// only the variables the backend knows, and name enough to keep tenants'
// groups apart.
func (g *KeycloakGroupSettings) checkPatterns(gp string, clusterGroups bool, r *report) {
	identifying := map[string][]string{
		"namespace": {"slug", "resource_uuid", "namespace"},
		"child":     {"project_slug", "project_uuid", "slug", "resource_uuid", "namespace"},
	}
	for _, f := range []struct {
		key     string
		pattern string
		check   bool
	}{
		{"namespace", g.Namespace, !clusterGroups},
		{"parent", g.Parent, clusterGroups},
		{"child", g.Child, clusterGroups},
	} {
		if !f.check {
			continue
		}
		vars, err := GroupPattern(f.pattern).Vars()
		if err != nil {
			r.addf(gp+"."+f.key, nil, "%v", err)
			continue
		}
		if !clusterGroups {
			for _, v := range vars {
				if slices.Contains(rancherOnlyVars, v) {
					r.addf(gp+"."+f.key, nil, "{%s} is only known for backend type rancher", v)
				}
			}
		}
		if f.key == "namespace" && !slices.Contains(vars, "role") {
			r.addf(gp+"."+f.key, nil, "%q must contain {role}: each namespace role needs its own group", f.pattern)
		}
		if ids := identifying[f.key]; ids != nil && !slices.ContainsFunc(vars, func(v string) bool { return slices.Contains(ids, v) }) {
			r.addf(gp+"."+f.key, nil, "%q must contain one of {%s}: otherwise unrelated tenants share the group", f.pattern, strings.Join(ids, "}, {"))
		}
		if slices.Contains(vars, "cluster_uuid") && g.ClusterUUID == "" {
			r.addf(gp+".cluster_uuid", nil, "required: the %s pattern %q uses {cluster_uuid}", f.key, f.pattern)
		}
	}
}
