package config

import (
	"os"
	"strings"
)

// Where a credential comes from, for the errors of a refused login: the
// config key and the file or environment variable it is read from, never
// the value. The files and variables win over the inline keys, as Token and
// WithCredentials read them.

// TokenSource names where the offering's Waldur token is read from.
func (o *Offering) TokenSource() string {
	switch {
	case o.WaldurAPIToken != "":
		return "waldur_api_token in the config"
	case o.WaldurAPITokenFile != "":
		return "waldur_api_token_file " + o.WaldurAPITokenFile
	case strings.TrimSpace(os.Getenv(TokenEnv)) != "":
		return "$" + TokenEnv
	}
	return "no token"
}

// CredentialSource names where the Keycloak secrets of the login are read
// from: the user's password (and a confidential client's secret), else the
// client secret.
func (k *KeycloakSettings) CredentialSource() string {
	secret := secretOrigin("client_secret", k.ClientSecretFile, k.ClientSecretEnv, k.ClientSecret != "")
	if k.Username == "" {
		return secret
	}
	out := secretOrigin("keycloak_password", k.PasswordFile, k.PasswordEnv, k.Password != "")
	if k.ClientSecretFile != "" || k.ClientSecretEnv != "" || k.ClientSecret != "" {
		out += " and " + secret
	}
	return out
}

// CredentialSource names the Git credential: the key file of an ssh URL, else
// the user and the file or variable the password or token is read from, in
// the order HTTPCredentials reads them.
func (g *Git) CredentialSource() string {
	if g.SSHKeyFile != "" {
		return "git.ssh_key_file " + g.SSHKeyFile
	}
	var secret string
	switch {
	case g.PasswordFile != "":
		secret = "git.password_file " + g.PasswordFile
	case g.PasswordEnv != "":
		secret = "git.password_env $" + g.PasswordEnv
	case g.TokenFile != "":
		secret = "git.token_file " + g.TokenFile
	case g.TokenEnv != "":
		secret = "git.token_env $" + g.TokenEnv
	default:
		return "no credential"
	}
	if g.Username == "" {
		return secret
	}
	return "git.username " + g.Username + " with " + secret
}

// FluxOCICredentialSource names the credential the shard artifacts are
// pushed with: the user and the file or variable of the password.
func (g *Git) FluxOCICredentialSource() string {
	var secret string
	switch {
	case g.FluxOCIPasswordFile != "":
		secret = "git.flux_oci_password_file " + g.FluxOCIPasswordFile
	case g.FluxOCIPasswordEnv != "":
		secret = "git.flux_oci_password_env $" + g.FluxOCIPasswordEnv
	default:
		return "no credential"
	}
	if g.FluxOCIUsername == "" {
		return secret
	}
	return "git.flux_oci_username " + g.FluxOCIUsername + " with " + secret
}

// CredentialSource names the Pushgateway credential: the user and the
// file or variable of the password.
func (m *Metrics) CredentialSource() string {
	secret := secretOrigin("metrics.password", m.PasswordFile, m.PasswordEnv, false)
	if m.Username == "" {
		return secret
	}
	return "metrics.username " + m.Username + " with " + secret
}

// TokenSource names the file or variable the forge's API token is read from.
func (f *Forge) TokenSource() string {
	return secretOrigin("review.forge.token", f.TokenFile, f.TokenEnv, false)
}

// secretOrigin names the file (key_file), the variable (key_env) or the
// inline key a secret is given with.
func secretOrigin(key, file, env string, inline bool) string {
	switch {
	case file != "":
		return key + "_file " + file
	case env != "":
		return key + "_env $" + env
	case inline:
		return key + " in the config"
	}
	return "no " + key
}
