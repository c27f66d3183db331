package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/waldur/waldur-gitops/internal/redact"
)

// Transports of a git.url, as GitTransport returns them.
const (
	GitHTTPS = "https"
	GitHTTP  = "http"
	GitSSH   = "ssh"
	GitFile  = "file"
)

// Signing key types.
const (
	SigningSSH     = "ssh"
	SigningOpenPGP = "openpgp"
)

// DefaultTokenUser is the HTTPS user name sent with a token when git.username is
// not set. GitHub, GitLab, Gitea and Forgejo accept any user name with a token;
// Bitbucket wants x-token-auth.
const DefaultTokenUser = "x-access-token"

// MaxFluxShardParts bounds git.flux_shard_parts.
const MaxFluxShardParts = 64

// scpLike matches the scp-style ssh address user@host:path (the user optional).
var scpLike = regexp.MustCompile(`^(?:[A-Za-z0-9._~-]+@)?[A-Za-z0-9.-]+:[^/\\]?`)

// Transport names how the repository is reached: GitHTTPS, GitHTTP, GitSSH or
// GitFile; "" when the URL is empty or not understood.
func (g *Git) Transport() string {
	u := g.URL
	switch {
	case u == "":
		return ""
	case strings.Contains(u, "://"):
		p, err := url.Parse(u)
		if err != nil {
			return ""
		}
		switch p.Scheme {
		case "https":
			return GitHTTPS
		case "http":
			return GitHTTP
		case "ssh":
			return GitSSH
		case "file":
			return GitFile
		}
		return ""
	case strings.HasPrefix(u, "/") || strings.HasPrefix(u, "."):
		return GitFile
	case scpLike.MatchString(u):
		return GitSSH
	}
	return GitFile
}

// HTTPCredentials returns the user name and password (or token) sent to an
// https remote, read from the configured file or environment variable. Both are
// empty when none is configured.
func (g *Git) HTTPCredentials() (string, Secret, error) {
	var (
		secret Secret
		err    error
	)
	user := g.Username
	switch {
	case g.PasswordFile != "":
		secret, err = readSecretFile("git.password_file", g.PasswordFile)
	case g.PasswordEnv != "":
		secret, err = readSecretEnv("git.password_env", g.PasswordEnv)
	case g.TokenFile != "":
		secret, err = readSecretFile("git.token_file", g.TokenFile)
	case g.TokenEnv != "":
		secret, err = readSecretEnv("git.token_env", g.TokenEnv)
	default:
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	if user == "" {
		user = DefaultTokenUser
	}
	return user, secret, nil
}

// FluxOCICredentials returns the user name and password (or token) the shard
// artifacts are pushed with, read from git.flux_oci_password_file or
// git.flux_oci_password_env; both empty when none is configured.
func (g *Git) FluxOCICredentials() (string, Secret, error) {
	var (
		secret Secret
		err    error
	)
	switch {
	case g.FluxOCIPasswordFile != "":
		secret, err = readSecretFile("git.flux_oci_password_file", g.FluxOCIPasswordFile)
	case g.FluxOCIPasswordEnv != "":
		secret, err = readSecretEnv("git.flux_oci_password_env", g.FluxOCIPasswordEnv)
	default:
		return g.FluxOCIUsername, "", nil
	}
	if err != nil {
		return "", "", err
	}
	return g.FluxOCIUsername, secret, nil
}

func readSecretFile(key, file string) (Secret, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", key, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s %s is empty", key, file)
	}
	redact.Register(s)
	return Secret(s), nil
}

func readSecretEnv(key, name string) (Secret, error) {
	s := strings.TrimSpace(os.Getenv(name))
	if s == "" {
		return "", fmt.Errorf("%s: the environment variable %s is not set or empty", key, name)
	}
	redact.Register(s)
	return Secret(s), nil
}

// Retries returns how many times a push that lost a race is retried.
func (g *Git) Retries() int {
	if g.PushRetries == nil {
		return 3
	}
	return *g.PushRetries
}

// applyDefaults resolves the git files against the config file's directory.
func (g *Git) applyDefaults(dir string) {
	if g.PushRetries == nil {
		n := 3
		g.PushRetries = &n
	}
	for _, d := range []struct {
		v   *string
		def string
	}{
		{&g.FluxNamespace, "flux-system"}, {&g.FluxSourceName, "waldur-tenants"}, {&g.FluxNamePrefix, "waldur-"},
	} {
		if *d.v == "" {
			*d.v = d.def
		}
	}
	if g.FluxSourceNamespace == "" {
		g.FluxSourceNamespace = g.FluxNamespace
	}
	if g.FluxShardParts == 0 {
		g.FluxShardParts = 1
	}
	for _, p := range []*string{&g.PasswordFile, &g.TokenFile, &g.SSHKeyFile, &g.KnownHostsFile, &g.SigningKeyFile, &g.FluxKubeconfigPath, &g.FluxOCIPasswordFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	if g.Transport() == GitFile && !strings.Contains(g.URL, "://") && !filepath.IsAbs(g.URL) {
		g.URL = filepath.Join(dir, g.URL)
	}
}

// validate checks the repository address, the credentials fit its transport,
// and the signing and retry settings.
func (g *Git) validate(r *report) {
	tr := g.Transport()
	if g.URL != "" {
		if tr == "" {
			r.addf("git.url", nil, "%q is not a repository address: use https://…, ssh://…, user@host:path, file://… or a local path", g.URL)
		} else if strings.Contains(g.URL, "://") {
			if u, err := url.Parse(g.URL); err == nil && u.User != nil {
				if _, has := u.User.Password(); has {
					// The value is not repeated: it holds a credential.
					r.addf("git.url", nil, "must not contain a password: put it in git.password_file, git.password_env, git.token_file or git.token_env")
				} else if tr == GitHTTPS {
					// A token is often given as the user name of an https URL.
					r.addf("git.url", nil, "must not contain user information: put the user name in git.username and the password or token in git.password_file, git.password_env, git.token_file or git.token_env")
				}
			}
		}
	}
	var secrets []string
	for _, k := range []struct{ key, v string }{
		{"password_file", g.PasswordFile}, {"password_env", g.PasswordEnv},
		{"token_file", g.TokenFile}, {"token_env", g.TokenEnv},
	} {
		if k.v != "" {
			secrets = append(secrets, k.key)
		}
	}
	if len(secrets) > 1 {
		r.addf("git."+secrets[1], nil, "set only one of password_file, password_env, token_file and token_env (also set: %s)", secrets[0])
	}
	if (g.PasswordFile != "" || g.PasswordEnv != "") && g.Username == "" {
		r.addf("git.username", nil, "required with a password")
	}
	for _, k := range []struct{ key, v string }{{"password_env", g.PasswordEnv}, {"token_env", g.TokenEnv}} {
		if k.v != "" && !envName.MatchString(k.v) {
			r.addf("git."+k.key, nil, "%q is not an environment variable name", k.v)
		}
	}
	httpKeys := g.Username != "" || len(secrets) > 0
	sshKeys := g.SSHKeyFile != "" || g.KnownHostsFile != ""
	switch tr {
	case GitHTTPS, GitHTTP:
		if sshKeys {
			r.addf("git.ssh_key_file", nil, "ssh_key_file and known_hosts_file are only used with ssh URLs; git.url is %s", tr)
		}
	case GitSSH:
		if httpKeys {
			r.addf("git.username", nil, "username, password and token keys are only used with https URLs; git.url is ssh (the user goes in the URL)")
		}
		if g.SSHKeyFile == "" {
			r.addf("git.ssh_key_file", nil, "required with an ssh URL")
		}
		if g.KnownHostsFile == "" {
			r.addf("git.known_hosts_file", nil, "required with an ssh URL: the server's host key is always checked")
		}
	case GitFile:
		if httpKeys || sshKeys {
			r.addf("git.url", nil, "a local repository takes no credentials")
		}
	}
	switch {
	case g.SigningKeyFile != "" && g.SigningKeyType == "":
		r.addf("git.signing_key_type", nil, "required with signing_key_file: ssh or openpgp")
	case g.SigningKeyFile == "" && g.SigningKeyType != "":
		r.addf("git.signing_key_file", nil, "required with signing_key_type")
	case g.SigningKeyType != "" && !slices.Contains([]string{SigningSSH, SigningOpenPGP}, g.SigningKeyType):
		r.addf("git.signing_key_type", nil, "must be ssh or openpgp, got %q", g.SigningKeyType)
	}
	if n := *g.PushRetries; n < 0 || n > 20 {
		r.addf("git.push_retries", nil, "must be between 0 and 20, got %d", n)
	}
	if g.FluxShards < 0 || g.FluxShards > 1000 {
		r.addf("git.flux_shards", nil, "must be between 0 and 1000, got %d", g.FluxShards)
	}
	if g.FluxShardGeneration < 0 || g.FluxShardGeneration > 9999 {
		r.addf("git.flux_shard_generation", nil, "must be between 0 and 9999, got %d", g.FluxShardGeneration)
	} else if g.FluxShardGeneration > 0 && g.FluxShards == 0 {
		r.addf("git.flux_shard_generation", nil, "only used with git.flux_shards above 0")
	}
	if g.FluxShardParts < 1 || g.FluxShardParts > MaxFluxShardParts {
		r.addf("git.flux_shard_parts", nil, "must be between 1 and %d, got %d", MaxFluxShardParts, g.FluxShardParts)
	} else if g.FluxShardParts > 1 && g.FluxShards == 0 {
		r.addf("git.flux_shard_parts", nil, "only used with git.flux_shards above 0: the parts are of a shard")
	}
	for _, k := range []struct{ key, v string }{
		{"flux_namespace", g.FluxNamespace}, {"flux_source_name", g.FluxSourceName}, {"flux_source_namespace", g.FluxSourceNamespace},
		{"argocd_namespace", g.ArgoCDNamespace},
	} {
		if k.v != "" && !dnsLabel.MatchString(k.v) {
			r.addf("git."+k.key, nil, "%q is not a Kubernetes name: lower-case letters, digits and '-', at most 63 characters, starting and ending with a letter or digit", k.v)
		}
	}
	if g.FluxShards == 0 && (g.FluxReconcile || g.FluxKubeconfigPath != "" || g.FluxKubeconfigContext != "") {
		r.addf("git.flux_reconcile", nil, "flux_reconcile, flux_kubeconfig_path and flux_kubeconfig_context are only used with git.flux_shards above 0")
	}
	g.validateOCI(r)
	g.validateShardBranches(r)
	if p := g.FluxNamePrefix; p != "" && (len(p) > 30 || !namePrefix.MatchString(p)) {
		r.addf("git.flux_name_prefix", nil, "%q cannot start a Kubernetes name: lower-case letters, digits and '-', at most 30 characters, starting with a letter", p)
	}
}

// validateShardBranches checks the keys of the shard-branch layout.
func (g *Git) validateShardBranches(r *report) {
	if !g.FluxShardBranches {
		if g.FluxShardBranchesURL != "" || g.FluxShardBranchesSecretName != "" {
			r.addf("git.flux_shard_branches_url", nil, "flux_shard_branches_url and flux_shard_branches_secret_name are only used with git.flux_shard_branches")
		}
		return
	}
	if g.FluxShards == 0 {
		r.addf("git.flux_shard_branches", nil, "only used with git.flux_shards above 0: the branches are the shards")
	}
	if g.FluxOCIRepository != "" {
		r.addf("git.flux_shard_branches", nil, "choose one layout: git.flux_oci_repository or git.flux_shard_branches")
	}
	if u := g.FluxShardBranchesURL; u != "" && strings.Contains(u, "@") && strings.Contains(u, "://") {
		if i, j := strings.Index(u, "://"), strings.Index(u, "@"); j > i && strings.Contains(u[i+3:j], ":") {
			r.addf("git.flux_shard_branches_url", nil, "must not carry a password: Flux fetches with git.flux_shard_branches_secret_name")
		}
	}
	if n := g.FluxShardBranchesSecretName; n != "" && !dnsLabel.MatchString(n) {
		r.addf("git.flux_shard_branches_secret_name", nil, "%q is not a Kubernetes object name", n)
	}
}

// validateOCI checks the keys of the OCI layout.
func (g *Git) validateOCI(r *report) {
	repo := g.FluxOCIRepository
	if repo == "" {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"flux_oci_insecure", g.FluxOCIInsecure}, {"flux_oci_username", g.FluxOCIUsername != ""},
			{"flux_oci_password_file", g.FluxOCIPasswordFile != ""}, {"flux_oci_password_env", g.FluxOCIPasswordEnv != ""},
			{"flux_oci_secret_name", g.FluxOCISecretName != ""},
		} {
			if k.set {
				r.addf("git."+k.key, nil, "only used with git.flux_oci_repository")
			}
		}
		return
	}
	if g.FluxShards == 0 {
		r.addf("git.flux_oci_repository", nil, "only used with git.flux_shards above 0: the artifacts are the shards")
	}
	switch {
	case strings.Contains(repo, "://"):
		r.addf("git.flux_oci_repository", nil, "%q: give the repository without a scheme, e.g. registry.example.org/site/waldur-tenants (the OCIRepositories get oci://)", redact.URL(repo))
	case strings.Contains(repo, "@"):
		r.addf("git.flux_oci_repository", nil, "must not contain user information or a digest: put the user in git.flux_oci_username and the password in git.flux_oci_password_file or git.flux_oci_password_env")
	default:
		host, _, _ := strings.Cut(repo, "/")
		if !strings.ContainsAny(host, ".:") && host != "localhost" {
			r.addf("git.flux_oci_repository", nil, "%q does not start with a registry host (a name with a dot or a port, or localhost)", repo)
		} else if _, err := name.NewRepository(strings.TrimSuffix(repo, "/")+"/"+g.FluxNamePrefix+"x-cluster-00", name.StrictValidation); err != nil {
			r.addf("git.flux_oci_repository", nil, "%q is not an OCI repository: a registry host, then lower-case path components, e.g. registry.example.org/site/waldur-tenants", repo)
		}
	}
	if g.FluxOCIPasswordFile != "" && g.FluxOCIPasswordEnv != "" {
		r.addf("git.flux_oci_password_env", nil, "set only one of flux_oci_password_file and flux_oci_password_env")
	}
	if (g.FluxOCIPasswordFile != "" || g.FluxOCIPasswordEnv != "") && g.FluxOCIUsername == "" {
		r.addf("git.flux_oci_username", nil, "required with a registry password")
	}
	if g.FluxOCIPasswordEnv != "" && !envName.MatchString(g.FluxOCIPasswordEnv) {
		r.addf("git.flux_oci_password_env", nil, "%q is not an environment variable name", g.FluxOCIPasswordEnv)
	}
	if g.FluxOCISecretName != "" && !dnsLabel.MatchString(g.FluxOCISecretName) {
		r.addf("git.flux_oci_secret_name", nil, "%q is not a Kubernetes name", g.FluxOCISecretName)
	}
}

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	namePrefix = regexp.MustCompile(`^[a-z][-a-z0-9]*$`)
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
