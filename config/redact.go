package config

import (
	"net/url"
	"reflect"

	"github.com/waldur/waldur-gitops/internal/redact"
)

// registerSecrets registers every credential the config names with the
// process-wide redactor (internal/redact), so that no error text, log line,
// report or commit message shows one in any form: the inline secrets
// (waldur_api_token, keycloak_password, client_secret and every other
// Secret-typed key), the ones held in files and environment variables (read
// once here; a missing file is reported where it is used, not here), and the
// Basic-auth pairs of the Git, Pushgateway and Keycloak credentials. Reading a
// secret later (a rotated file) registers it again.
func registerSecrets(c *Config) {
	walkSecrets(reflect.ValueOf(c).Elem())
	for i := range c.Offerings {
		o := &c.Offerings[i]
		_, _ = o.Token()
		if cs := o.Settings.Common(); cs != nil {
			k, err := cs.Keycloak.WithCredentials()
			if err == nil {
				redact.RegisterBasic(k.Username, k.Password.Reveal())
				redact.RegisterBasic(k.ClientID, k.ClientSecret.Reveal())
				// Form bodies carry the client id and the secret escaped.
				redact.Register(url.QueryEscape(k.ClientSecret.Reveal()))
			}
		}
	}
	if user, secret, err := c.Git.HTTPCredentials(); err == nil {
		redact.RegisterBasic(user, secret.Reveal())
	}
	if user, secret, err := c.Metrics.BasicAuth(); err == nil {
		redact.RegisterBasic(user, secret.Reveal())
	}
	if user, secret, err := c.Git.FluxOCICredentials(); err == nil && secret != "" {
		redact.RegisterBasic(user, secret.Reveal())
	}
}

// walkSecrets registers every Secret reachable from v.
func walkSecrets(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkSecrets(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkSecrets(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkSecrets(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			walkSecrets(it.Value())
		}
	case reflect.String:
		if v.Type() == secretType {
			redact.Register(v.String())
		}
	}
}

// checkURL reports a problem at key when raw is not an http or https URL with
// a host, or carries user information (a credential in the URL). The value
// is never repeated in full: only its redacted form.
func checkURL(key, raw, credentialHint string, r *report) (*url.URL, bool) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		r.addf(key, nil, "must be an http or https URL with a host, got %q", redact.URL(raw))
		return nil, false
	case u.User != nil:
		r.addf(key, nil, "must not contain user information (user:password@): %s", credentialHint)
		return nil, false
	}
	return u, true
}
