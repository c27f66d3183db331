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
	switch {
	case g.SSHKeyFile != "":
		return "git.ssh_key_file " + g.SSHKeyFile
	case g.PasswordFile != "" || g.PasswordEnv != "":
		return withUser("git.username", g.Username, secretOrigin("git.password", g.PasswordFile, g.PasswordEnv, false))
	case g.TokenFile != "" || g.TokenEnv != "":
		return withUser("git.username", g.Username, secretOrigin("git.token", g.TokenFile, g.TokenEnv, false))
	}
	return "no credential"
}

// FluxOCICredentialSource names the credential the shard artifacts are
// pushed with: the user and the file or variable of the password.
func (g *Git) FluxOCICredentialSource() string {
	if g.FluxOCIPasswordFile == "" && g.FluxOCIPasswordEnv == "" {
		return "no credential"
	}
	return withUser("git.flux_oci_username", g.FluxOCIUsername, secretOrigin("git.flux_oci_password", g.FluxOCIPasswordFile, g.FluxOCIPasswordEnv, false))
}

// CredentialSource names the Pushgateway credential: the user and the
// file or variable of the password.
func (m *Metrics) CredentialSource() string {
	return withUser("metrics.username", m.Username, secretOrigin("metrics.password", m.PasswordFile, m.PasswordEnv, false))
}

// withUser puts the user a secret goes with before it, when there is one.
func withUser(key, user, secret string) string {
	if user == "" {
		return secret
	}
	return key + " " + user + " with " + secret
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
