package config_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
)

// The git keys that fit the URL's transport are accepted, resolved and read.
func TestGitKeys(t *testing.T) {
	tests := []struct {
		name, git, transport string
	}{
		{"https with a token file", "{url: 'https://git.example.org/t.git', token_file: tok}", config.GitHTTPS},
		{"http with a password", "{url: 'http://127.0.0.1:8080/t.git', username: bot, password_env: GIT_PW}", config.GitHTTP},
		{"ssh URL", "{url: 'ssh://git@git.example.org:2222/t.git', ssh_key_file: id, known_hosts_file: kh}", config.GitSSH},
		{"scp-style address", "{url: 'git@github.com:org/tenants.git', ssh_key_file: id, known_hosts_file: kh}", config.GitSSH},
		{"local path", "{url: ../repos/t.git}", config.GitFile},
		{"file URL", "{url: 'file:///srv/git/t.git'}", config.GitFile},
		{"signing and retries", "{url: /srv/t.git, signing_key_file: key, signing_key_type: ssh, push_retries: 0, flux_shards: 16}", config.GitFile},
		{"flux reconcile", "{url: /srv/t.git, flux_shards: 4, flux_reconcile: true, flux_kubeconfig_path: kc, flux_kubeconfig_context: mgmt}", config.GitFile},
		{"flux objects", "{url: /srv/t.git, flux_shards: 4, flux_namespace: tenants-a, flux_source_name: repo-a, flux_source_namespace: sources, flux_name_prefix: site-a-}", config.GitFile},
		{"flux OCI layout", "{url: /srv/t.git, flux_shards: 4, flux_oci_repository: registry.example.org/site/waldur-tenants, flux_oci_username: bot, flux_oci_password_file: pw, flux_oci_secret_name: registry}", config.GitFile},
		{"flux OCI test registry", "{url: /srv/t.git, flux_shards: 4, flux_oci_repository: '127.0.0.1:5000/w', flux_oci_insecure: true}", config.GitFile},
		{"flux shard parts", "{url: /srv/t.git, flux_shards: 16, flux_shard_parts: 4, flux_shard_branches: true}", config.GitFile},
		{"flux shard branches", "{url: /srv/t.git, flux_shards: 4, flux_shard_branches: true, flux_shard_branches_url: 'https://git.internal/t.git', flux_shard_branches_secret_name: waldur-tenants-git}", config.GitFile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, "git: "+tc.git+"\n"+oneOffering("namespace", "", ""))
			l := mustLoad(t, path)
			if got := l.Git.Transport(); got != tc.transport {
				t.Errorf("transport %q, want %q", got, tc.transport)
			}
			dir := filepath.Dir(path)
			for _, f := range []string{l.Git.FluxOCIPasswordFile, l.Git.TokenFile, l.Git.SSHKeyFile, l.Git.KnownHostsFile, l.Git.SigningKeyFile, l.Git.FluxKubeconfigPath} {
				if f != "" && filepath.Dir(f) != dir {
					t.Errorf("%s is not resolved against the config's directory", f)
				}
			}
			if l.Git.Transport() == config.GitFile && !strings.Contains(l.Git.URL, "://") && !filepath.IsAbs(l.Git.URL) {
				t.Errorf("local path %s is not absolute", l.Git.URL)
			}
		})
	}
	l := mustParse(t, oneOffering("namespace", "", ""))
	if *l.Git.PushRetries != 3 || l.Git.Retries() != 3 || l.Git.FluxShards != 0 || l.Git.FluxShardParts != 1 {
		t.Errorf("defaults: push_retries %d, flux_shards %d, flux_shard_parts %d", *l.Git.PushRetries, l.Git.FluxShards, l.Git.FluxShardParts)
	}
}

func TestGitProblems(t *testing.T) {
	tests := []struct {
		name, git, path, message string
	}{
		{"password in the URL", "{url: 'https://bot:hunter2@git.example.org/t.git'}", "git.url", "must not contain a password"},
		{"git protocol", "{url: 'git://git.example.org/t.git'}", "git.url", "is not a repository address"},
		{"two secrets", "{url: 'https://h/t.git', token_file: a, password_file: b, username: u}", "git.token_file", "set only one of"},
		{"password without user", "{url: 'https://h/t.git', password_file: a}", "git.username", "required with a password"},
		{"bad env name", "{url: 'https://h/t.git', token_env: 'GIT TOKEN'}", "git.token_env", "not an environment variable name"},
		{"ssh key with https", "{url: 'https://h/t.git', ssh_key_file: id}", "git.ssh_key_file", "only used with ssh URLs"},
		{"token with ssh", "{url: 'git@h:o/t.git', token_env: T, ssh_key_file: id, known_hosts_file: kh}", "git.username", "only used with https URLs"},
		{"ssh without key", "{url: 'ssh://git@h/t.git', known_hosts_file: kh}", "git.ssh_key_file", "required with an ssh URL"},
		{"ssh without known_hosts", "{url: 'ssh://git@h/t.git', ssh_key_file: id}", "git.known_hosts_file", "host key is always checked"},
		{"credentials for a local path", "{url: /srv/t.git, token_env: T}", "git.url", "takes no credentials"},
		{"signing key without type", "{signing_key_file: k}", "git.signing_key_type", "required with signing_key_file"},
		{"signing type without key", "{signing_key_type: ssh}", "git.signing_key_file", "required with signing_key_type"},
		{"unknown signing type", "{signing_key_file: k, signing_key_type: x509}", "git.signing_key_type", "must be ssh or openpgp"},
		{"negative retries", "{push_retries: -1}", "git.push_retries", "between 0 and 20"},
		{"too many shards", "{flux_shards: 5000}", "git.flux_shards", "between 0 and 1000"},
		{"too many shard parts", "{flux_shards: 4, flux_shard_parts: 65}", "git.flux_shard_parts", "between 1 and 64"},
		{"negative shard parts", "{flux_shards: 4, flux_shard_parts: -1}", "git.flux_shard_parts", "between 1 and 64"},
		{"shard parts without shards", "{flux_shard_parts: 2}", "git.flux_shard_parts", "only used with git.flux_shards above 0"},
		{"flux namespace not a name", "{flux_shards: 2, flux_namespace: Flux_System}", "git.flux_namespace", "is not a Kubernetes name"},
		{"flux source not a name", "{flux_shards: 2, flux_source_name: 'repo.a'}", "git.flux_source_name", "is not a Kubernetes name"},
		{"flux source namespace too long", "{flux_shards: 2, flux_source_namespace: " + strings.Repeat("a", 64) + "}", "git.flux_source_namespace", "is not a Kubernetes name"},
		{"flux reconcile without shards", "{flux_reconcile: true}", "git.flux_reconcile", "only used with git.flux_shards above 0"},
		{"OCI without shards", "{flux_oci_repository: registry.example.org/w}", "git.flux_oci_repository", "only used with git.flux_shards above 0"},
		{"OCI with a scheme", "{flux_shards: 2, flux_oci_repository: 'oci://registry.example.org/w'}", "git.flux_oci_repository", "without a scheme"},
		{"OCI upper case", "{flux_shards: 2, flux_oci_repository: registry.example.org/Site}", "git.flux_oci_repository", "is not an OCI repository"},
		{"OCI without a host", "{flux_shards: 2, flux_oci_repository: site/waldur}", "git.flux_oci_repository", "does not start with a registry host"},
		{"OCI user in the address", "{flux_shards: 2, flux_oci_repository: 'bot@registry.example.org/w'}", "git.flux_oci_repository", "must not contain user information"},
		{"OCI password without user", "{flux_shards: 2, flux_oci_repository: registry.example.org/w, flux_oci_password_env: PW}", "git.flux_oci_username", "required with a registry password"},
		{"OCI two passwords", "{flux_shards: 2, flux_oci_repository: registry.example.org/w, flux_oci_username: u, flux_oci_password_env: PW, flux_oci_password_file: pw}", "git.flux_oci_password_env", "set only one of"},
		{"OCI insecure without repository", "{flux_shards: 2, flux_oci_insecure: true}", "git.flux_oci_insecure", "only used with git.flux_oci_repository"},
		{"shard branches without shards", "{flux_shard_branches: true}", "git.flux_shard_branches", "only used with git.flux_shards above 0"},
		{"shard branches and OCI", "{flux_shards: 2, flux_shard_branches: true, flux_oci_repository: registry.example.org/w}", "git.flux_shard_branches", "choose one layout"},
		{"shard branch URL without the layout", "{flux_shards: 2, flux_shard_branches_url: 'https://git.internal/t.git'}", "git.flux_shard_branches_url", "only used with git.flux_shard_branches"},
		{"shard branch URL with a password", "{flux_shards: 2, flux_shard_branches: true, flux_shard_branches_url: 'https://bot:s3cret@git.internal/t.git'}", "git.flux_shard_branches_url", "must not carry a password"},
		{"shard branch Secret not a name", "{flux_shards: 2, flux_shard_branches: true, flux_shard_branches_secret_name: Git_Secret}", "git.flux_shard_branches_secret_name", "is not a Kubernetes object name"},
		{"OCI secret not a name", "{flux_shards: 2, flux_oci_repository: registry.example.org/w, flux_oci_secret_name: Reg_Cred}", "git.flux_oci_secret_name", "is not a Kubernetes name"},
		{"flux prefix upper case", "{flux_shards: 2, flux_name_prefix: Site-}", "git.flux_name_prefix", "cannot start a Kubernetes name"},
		{"flux prefix too long", "{flux_shards: 2, flux_name_prefix: " + strings.Repeat("a", 31) + "}", "git.flux_name_prefix", "at most 30"},
		{"argocd namespace not a name", "{argocd_namespace: Argo_CD}", "git.argocd_namespace", "is not a Kubernetes name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ve, problems := mustFail(t, "git: "+tc.git+"\n"+oneOffering("namespace", "", ""))
			p := findProblem(t, problems, tc.path)
			if !strings.Contains(p.Message, tc.message) {
				t.Errorf("%s: %q, want %q", tc.path, p.Message, tc.message)
			}
			if strings.Contains(ve.Error(), "hunter2") {
				t.Errorf("the error shows the password: %v", ve)
			}
		})
	}
}

// Credentials come from the file or the environment variable, never printed.
func TestGitCredentials(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tok"), "  s3cret-token-77\n")
	writeFile(t, filepath.Join(dir, "empty"), "\n")
	t.Setenv("GIT_PW_TEST", "s3cret-pw-88")
	tests := []struct {
		name     string
		g        config.Git
		user     string
		secret   string
		errorHas string
	}{
		{"none", config.Git{}, "", "", ""},
		{"token file, default user", config.Git{TokenFile: filepath.Join(dir, "tok")}, config.DefaultTokenUser, "s3cret-token-77", ""},
		{"token env with user", config.Git{TokenEnv: "GIT_PW_TEST", Username: "oauth2"}, "oauth2", "s3cret-pw-88", ""},
		{"password env", config.Git{PasswordEnv: "GIT_PW_TEST", Username: "bot"}, "bot", "s3cret-pw-88", ""},
		{"empty file", config.Git{TokenFile: filepath.Join(dir, "empty")}, "", "", "is empty"},
		{"missing file", config.Git{PasswordFile: filepath.Join(dir, "nope"), Username: "bot"}, "", "", "read git.password_file"},
		{"unset env", config.Git{TokenEnv: "GIT_PW_UNSET_TEST"}, "", "", "GIT_PW_UNSET_TEST is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			user, secret, err := tc.g.HTTPCredentials()
			if tc.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
					t.Fatalf("err %v, want %q", err, tc.errorHas)
				}
				return
			}
			if err != nil || user != tc.user || secret.Reveal() != tc.secret {
				t.Errorf("got %q %q %v", user, secret.Reveal(), err)
			}
			if tc.secret != "" && strings.Contains(secret.String(), tc.secret) {
				t.Error("the secret prints")
			}
		})
	}
}
