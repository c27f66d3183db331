package diagnose

import (
	"testing"

	"github.com/waldur/waldur-gitops/config"
)

// TestCredentialNames: the credential a diagnosis names is the first one set
// in the order the clients use, after the username when one is set; an SSH
// key goes without it.
func TestCredentialNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		g        config.Git
		git, reg string
	}{
		{name: "nothing", git: "none", reg: "none"},
		{name: "username alone", g: config.Git{Username: "bot", FluxOCIUsername: "puller"}, git: "none", reg: "none"},
		{name: "ssh key over password, without user",
			g:   config.Git{Username: "bot", SSHKeyFile: "/k", PasswordFile: "/p"},
			git: "git.ssh_key_file /k", reg: "none"},
		{name: "password file over env",
			g:   config.Git{Username: "bot", PasswordFile: "/p", PasswordEnv: "PW", FluxOCIUsername: "puller", FluxOCIPasswordFile: "/o", FluxOCIPasswordEnv: "OPW"},
			git: "git.username bot, git.password_file /p", reg: "git.flux_oci_username puller, git.flux_oci_password_file /o"},
		{name: "envs",
			g:   config.Git{PasswordEnv: "PW", TokenFile: "/t", FluxOCIPasswordEnv: "OPW"},
			git: "git.password_env $PW", reg: "git.flux_oci_password_env $OPW"},
		{name: "token file over env", g: config.Git{TokenFile: "/t", TokenEnv: "TK"}, git: "git.token_file /t", reg: "none"},
		{name: "token env", g: config.Git{Username: "u", TokenEnv: "TK"}, git: "git.username u, git.token_env $TK", reg: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GitCredential(tc.g); got != tc.git {
				t.Errorf("GitCredential = %q, want %q", got, tc.git)
			}
			if got := RegistryCredential(tc.g); got != tc.reg {
				t.Errorf("RegistryCredential = %q, want %q", got, tc.reg)
			}
		})
	}
}
