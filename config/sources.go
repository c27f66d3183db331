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
