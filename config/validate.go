package config

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/waldur/waldur-gitops/backend"
	"github.com/waldur/waldur-gitops/manifest"
	"github.com/waldur/waldur-gitops/waldur"
)

var (
	// prefixRE matches a prefix that a slug can still complete into a DNS-1123 label.
	prefixRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	// nsPrefixTail matches a prefix part that follows another prefix.
	nsPrefixTail = regexp.MustCompile(`^[a-z0-9-]+$`)
)

// DirName is the offering's directory name in the output tree: its name
// lower-cased with every run of other characters turned into a dash.
// The render asks for it once per tenant, so it scans bytes rather than run
// a regular expression: a multi-byte character is a run of bytes that are
// not [a-z0-9], which becomes one dash as the character would.
func (o *Offering) DirName() string {
	lower := strings.ToLower(o.Name)
	b := make([]byte, 0, len(lower))
	dash := false
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b = append(b, c)
			dash = false
		} else if !dash {
			b = append(b, '-')
			dash = true
		}
	}
	return strings.Trim(string(b), "-")
}

// applyDefaults fills unset top-level values and resolves relative paths against
// the config file's directory.
func (c *Config) applyDefaults(file string) {
	if c.Timezone == "" {
		c.Timezone = "UTC"
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Usage.Allocation == "" {
		c.Usage.Allocation = AllocationPeak
	}
	if c.Git.Branch == "" {
		c.Git.Branch = "main"
	}
	if c.Git.Path == "" {
		c.Git.Path = "waldur"
	}
	if c.Git.AuthorName == "" {
		c.Git.AuthorName = "waldur-gitops"
	}
	if c.DeletionGuard.MaxFraction == nil {
		f := 0.1
		c.DeletionGuard.MaxFraction = &f
	}
	if c.DeletionGuard.MinCount == nil {
		n := 5
		c.DeletionGuard.MinCount = &n
	}
	if c.Report != "" && !filepath.IsAbs(c.Report) {
		c.Report = filepath.Join(filepath.Dir(file), c.Report)
	}
	if c.KeycloakState != "" && c.KeycloakState != KeycloakStateOff && !filepath.IsAbs(c.KeycloakState) {
		c.KeycloakState = filepath.Join(filepath.Dir(file), c.KeycloakState)
	}
	if c.Git.AuthorEmail == "" {
		c.Git.AuthorEmail = "waldur-gitops@localhost"
	}
	dir := filepath.Dir(file)
	c.Git.applyDefaults(dir)
	c.Orders.applyDefaults()
	c.Review.applyDefaults(dir)
	c.applyDeadlineDefaults()
	c.Serve.LeaderElection.applyDefaults()
	for i := range c.Offerings {
		o := &c.Offerings[i]
		o.configDir = dir
		o.BackendType = strings.ToLower(strings.TrimSpace(o.BackendType))
		for _, p := range []*string{&o.TemplatesDir, &o.WaldurAPITokenFile} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(dir, *p)
			}
		}
		o.applyOrderDefaults(c.Orders)
		for k, comp := range o.BackendComponents {
			if comp.UnitFactor == 0 {
				comp.UnitFactor = 1
			}
			o.BackendComponents[k] = comp
		}
	}
}

// validate checks the decoded config and decodes each offering's backend settings.
func (c *Config) validate(r *report) {
	if len(c.Offerings) == 0 && !slices.ContainsFunc(r.problems, func(p Problem) bool { return p.Path == "offerings" }) {
		r.addf("offerings", nil, "required: list at least one offering")
	}
	if _, err := time.LoadLocation(c.Timezone); err != nil {
		r.addf("timezone", nil, "unknown time zone %q", c.Timezone)
	}
	if !slices.Contains([]string{"debug", "info", "warning", "warn", "error", "critical"}, strings.ToLower(c.LogLevel)) {
		r.addf("log_level", nil, "must be one of debug, info, warning, error; got %q", c.LogLevel)
	}
	c.Orders.validate(r)
	c.Review.validate(r)
	c.validateDeadlines(r)
	c.Serve.LeaderElection.validate(r)
	if st, err := os.Stat(c.KeycloakState); c.KeycloakState != "" && c.KeycloakState != KeycloakStateOff && err == nil && !st.Mode().IsRegular() {
		r.addf("keycloak_state", nil, "%s is not a regular file; name a file the Keycloak stage may replace", c.KeycloakState)
	}
	for _, m := range validation.IsDNS1123Label(c.KeycloakStateNamespace) {
		if c.KeycloakStateNamespace != "" {
			r.addf("keycloak_state_namespace", nil, "%q is not a valid namespace name: %s", c.KeycloakStateNamespace, m)
		}
	}
	if a := c.Usage.Allocation; a != AllocationPeak && a != AllocationTimeWeighted {
		r.addf("usage.allocation", nil, "must be %s or %s, got %q", AllocationPeak, AllocationTimeWeighted, a)
	}
	if f := *c.DeletionGuard.MaxFraction; f < 0 || f > 1 {
		r.addf("deletion_guard.max_fraction", nil, "must be between 0 and 1, got %v", f)
	}
	if *c.DeletionGuard.MinCount < 1 {
		r.addf("deletion_guard.min_count", nil, "must be at least 1, got %d", *c.DeletionGuard.MinCount)
	}
	p := path.Clean(c.Git.Path)
	if path.IsAbs(c.Git.Path) || p == ".." || strings.HasPrefix(p, "../") {
		r.addf("git.path", nil, "must be a relative path inside the repository, got %q", c.Git.Path)
	}
	c.Git.validate(r)
	names := map[string]int{}
	for i := range c.Offerings {
		o := &c.Offerings[i]
		at := fmt.Sprintf("offerings[%d]", i)
		o.validate(at, r)
		if dn := o.DirName(); dn != "" {
			if j, dup := names[dn]; dup {
				r.addf(at+".name", nil, "%q collides with offerings[%d].name %q (both give directory %q)", o.Name, j, c.Offerings[j].Name, dn)
			}
			names[dn] = i
		}
	}
	c.checkPools(r)
}

func (o *Offering) validate(at string, r *report) {
	if strings.TrimSpace(o.Name) == "" {
		r.addf(at+".name", nil, "required")
	} else if o.DirName() == "" {
		r.addf(at+".name", nil, "%q has no letters or digits to name a directory with", o.Name)
	}
	if o.WaldurAPIURL == "" {
		r.addf(at+".waldur_api_url", nil, "required")
	} else {
		checkURL(at+".waldur_api_url", o.WaldurAPIURL, "put the token in waldur_api_token, waldur_api_token_file or $"+TokenEnv, r)
	}
	if o.WaldurOfferingUUID == "" {
		r.addf(at+".waldur_offering_uuid", nil, "required")
	} else if u, err := waldur.ParseUUID(o.WaldurOfferingUUID); err != nil {
		r.addf(at+".waldur_offering_uuid", nil, "%v", err)
	} else {
		o.WaldurOfferingUUID = string(u)
	}
	if o.WaldurAPIToken != "" && o.WaldurAPITokenFile != "" {
		r.addf(at+".waldur_api_token_file", nil, "set either waldur_api_token or waldur_api_token_file, not both")
	}
	for k, comp := range o.BackendComponents {
		ck := at + ".backend_components." + k
		if comp.AccountingType != "" && !slices.Contains([]string{"usage", "limit", "one"}, comp.AccountingType) {
			r.addf(ck+".accounting_type", nil, "must be usage, limit or one, got %q", comp.AccountingType)
		}
		if comp.UnitFactor < 0 {
			r.addf(ck+".unit_factor", nil, "must be positive, got %v", comp.UnitFactor)
		}
	}
	o.decodeSettings(at, r)
	o.validateOrders(at, r)
	o.validateCapacity(at, r)
}

// decodeSettings decodes backend_settings into the profile's settings struct, over
// its defaults, and checks them.
func (o *Offering) decodeSettings(at string, r *report) {
	sp := at + ".backend_settings"
	if o.BackendType == "" {
		r.addf(at+".backend_type", nil, "required: one of %s", strings.Join(backend.Types(), ", "))
		return
	}
	b := backend.Lookup(o.BackendType)
	if b == nil {
		r.addf(at+".backend_type", nil, "unknown backend type %q: want one of %s", o.BackendType, strings.Join(backend.Types(), ", "))
		return
	}
	target := o.backendSettings(b)
	if target == nil {
		r.addf(at+".backend_type", nil, "backend type %q uses profile %q, which has no settings", o.BackendType, b.Profile)
		return
	}
	if o.BackendSettings.Kind != 0 {
		decodeNode(&o.BackendSettings, reflect.ValueOf(target).Elem(), sp, r)
	}
	c := o.Settings.Common()
	o.resolveKubeconfigs(sp, r)
	if c.DownscaledLimits == nil {
		c.DownscaledLimits = defaultDownscaled()
	}
	checkLimits(sp+".paused_limits", c.PausedLimits, r)
	checkLimits(sp+".downscaled_limits", c.DownscaledLimits, r)
	checkLabels(sp+".namespace_labels", c.NamespaceLabels, true, r)
	checkLabels(sp+".namespace_annotations", c.NamespaceAnnotations, false, r)
	c.validateKeycloak(sp, cmp.Or(backend.Lookup(b.Profile), b), o.configDir, r)
	if b.CheckSettings != nil {
		b.CheckSettings(target, func(key, msg string) { r.addf(sp+"."+key, nil, "%s", msg) })
	}
	if ps, ok := target.(profileSettings); ok {
		ps.check(sp, r)
	}
}

// backendSettings returns the settings a backend's backend_settings decode
// into: its own (Settings.Custom) or, as for the built-ins, those of the
// profile it uses. nil: neither.
func (o *Offering) backendSettings(b *backend.Backend) any {
	if b.Settings == nil {
		return o.newSettings(b.Profile)
	}
	s := b.Settings()
	if _, ok := s.(commonSettings); !ok {
		return nil
	}
	o.Settings.Custom = s
	return s
}

// newSettings sets the settings of a built-in profile to their defaults and
// returns them, for backend_settings to be decoded over; nil for a name that
// is no built-in profile.
func (o *Offering) newSettings(profile string) any {
	if f := builtinSettings[profile]; f != nil {
		return f(&o.Settings)
	}
	return nil
}

// IdentityFields are the user attributes a profile can use as a user's identity.
var IdentityFields = []string{"email", "username", "civil_number", "full_name", "first_name", "last_name"}

// checkPrefix reports a name prefix that no slug can turn into a DNS-1123 label.
func checkPrefix(at, prefix string, r *report) {
	switch {
	case prefix == "":
	case len(prefix) >= manifest.MaxLabel:
		r.addf(at, nil, "%q is %d characters: it leaves no room for the slug in a %d-character name", prefix, len(prefix), manifest.MaxLabel)
	case !prefixRE.MatchString(prefix):
		r.addf(at, nil, "%q can only yield names that are not RFC 1123 labels: use lower-case letters, digits and '-', starting with a letter or digit", prefix)
	}
}

func checkOneOf(at, v string, allowed []string, r *report) {
	if !slices.Contains(allowed, v) {
		r.addf(at, nil, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}
}

func checkLimits(at string, m map[string]int64, r *report) {
	for k, v := range m {
		if v < 0 {
			r.addf(at+"."+k, nil, "must not be negative, got %d", v)
		}
	}
}

// checkLabels reports invalid keys and, for labels, invalid values.
func checkLabels(at string, m map[string]string, values bool, r *report) {
	for k, v := range m {
		if !manifest.IsQualifiedName(k) {
			r.addf(at+"."+k, nil, "%q is not a valid label or annotation key", k)
		} else if values && !manifest.IsLabelValue(v) {
			r.addf(at+"."+k, nil, "%q is not a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)", v)
		}
	}
}

// mergeRoles merges custom Waldur-role → namespace-role entries over the defaults,
// normalising Waldur role spellings and checking every target role.
func mergeRoles(at string, defaults, custom map[string]string, allowed []string, r *report) map[string]string {
	for k, v := range custom {
		checkOneOf(at+"."+k, v, allowed, r)
	}
	return mergeMap(defaults, normalizeKeys(at, custom, r))
}

// normalizeKeys maps PROJECT.MANAGER-style keys to the short role names and
// reports two keys that name the same role.
func normalizeKeys(at string, m map[string]string, r *report) map[string]string {
	out := make(map[string]string, len(m))
	from := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		nk := waldur.NormalizeRole(k)
		if prev, dup := from[nk]; dup {
			r.addf(at+"."+k, nil, "%q and %q both name the role %q", prev, k, nk)
			continue
		}
		out[nk], from[nk] = m[k], k
	}
	return out
}

func mergeMap(defaults, custom map[string]string) map[string]string {
	for k, v := range custom {
		defaults[k] = v
	}
	return defaults
}

// resolveKubeconfigs resolves the kubeconfig paths of backend_settings against
// the config file's directory, like every other path in the file, and checks
// that a context is not given without something to pick it from.
func (o *Offering) resolveKubeconfigs(at string, r *report) {
	keys := o.Settings.value().kubeconfigKeys()
	for _, k := range keys {
		if p := k.value; k.path && *p != "" && !filepath.IsAbs(*p) && o.configDir != "" {
			*p = filepath.Join(o.configDir, *p)
		}
	}
	for _, k := range keys {
		if v := *k.value; v != strings.TrimSpace(v) {
			r.addf(at+"."+k.key, nil, "%q has leading or trailing white space", v)
		}
	}
}
