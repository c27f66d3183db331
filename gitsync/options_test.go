package gitsync

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/waldur/waldur-gitops/config"
)

func TestOptionsFromConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := write("id", sshKey(t, "ed25519"))
	signer, _ := ssh.ParsePrivateKey(sshKey(t, "ed25519"))
	hostKey := string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
	kh := write("known_hosts", []byte("git.example.org "+hostKey))
	t.Setenv("GIT_TOKEN_OPTS_TEST", "tok-123456")
	remote := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}

	tests := []struct {
		name  string
		g     config.Git
		check func(t *testing.T, o Options)
		err   string
	}{
		{"no URL", config.Git{}, nil, "git.url is not set"},
		{"https token", config.Git{URL: "https://git.example.org/t.git", TokenEnv: "GIT_TOKEN_OPTS_TEST"}, func(t *testing.T, o Options) {
			a, ok := o.Auth.(*githttp.BasicAuth)
			if !ok || a.Username != config.DefaultTokenUser || a.Password != "tok-123456" {
				t.Errorf("auth %v", o.Auth)
			}
			if strings.Contains(fmt.Sprint(o.Auth), "tok-123456") {
				t.Error("the auth method prints the token")
			}
			if len(o.secrets) != 1 {
				t.Error("the token is not registered for redaction")
			}
		}, ""},
		{"https without credentials", config.Git{URL: "https://git.example.org/t.git"}, func(t *testing.T, o Options) {
			if o.Auth != nil {
				t.Errorf("auth %v", o.Auth)
			}
		}, ""},
		{"https, unset token variable", config.Git{URL: "https://git.example.org/t.git", TokenEnv: "GIT_TOKEN_OPTS_UNSET"}, nil, "not set"},
		{"scp-style ssh", config.Git{URL: "deploy@git.example.org:org/t.git", SSHKeyFile: key, KnownHostsFile: kh}, func(t *testing.T, o Options) {
			pk, ok := o.Auth.(*gitssh.PublicKeys)
			if !ok || pk.User != "deploy" || pk.HostKeyCallback == nil || len(pk.HostKeyAlgorithms) == 0 {
				t.Fatalf("auth %#v", o.Auth)
			}
			if err := pk.HostKeyCallback("git.example.org:22", remote, signer.PublicKey()); err != nil {
				t.Errorf("the known host is refused: %v", err)
			}
			other, _ := ssh.ParsePrivateKey(sshKey(t, "ed25519"))
			if err := pk.HostKeyCallback("git.example.org:22", remote, other.PublicKey()); err == nil {
				t.Error("an unknown host key is accepted")
			}
		}, ""},
		{"ssh URL without user", config.Git{URL: "ssh://git.example.org/t.git", SSHKeyFile: key, KnownHostsFile: kh}, func(t *testing.T, o Options) {
			if pk := o.Auth.(*gitssh.PublicKeys); pk.User != "git" {
				t.Errorf("user %q", pk.User)
			}
		}, ""},
		{"ssh, missing key", config.Git{URL: "ssh://git.example.org/t.git", SSHKeyFile: filepath.Join(dir, "nope"), KnownHostsFile: kh}, nil, "git.ssh_key_file"},
		{"ssh, missing known_hosts", config.Git{URL: "ssh://git.example.org/t.git", SSHKeyFile: key, KnownHostsFile: filepath.Join(dir, "nope")}, nil, "git.known_hosts_file"},
		{"signing key", config.Git{URL: "/srv/t.git", SigningKeyFile: key, SigningKeyType: config.SigningSSH}, func(t *testing.T, o Options) {
			if _, ok := o.Signer.(*sshSigner); !ok {
				t.Errorf("signer %T", o.Signer)
			}
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := OptionsFromConfig(tc.g)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

func TestRedaction(t *testing.T) {
	for in, want := range map[string]string{
		"https://bot:pw@git.example.org/t.git": "https://git.example.org/t.git",
		"ssh://git@git.example.org/t.git":      "ssh://git.example.org/t.git",
		"git@github.com:org/t.git":             "git@github.com:org/t.git",
		"/srv/git/t.git":                       "/srv/git/t.git",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	base := errors.New("boom")
	err := redact(fmt.Errorf("server said s3cret-value: %w", base), []string{"s3cret-value"})
	if strings.Contains(err.Error(), "s3cret-value") || !errors.Is(err, base) {
		t.Errorf("redact: %v", err)
	}
	r, err := Open(Options{URL: "https://git.example.org/t.git", secrets: []string{"s3cret-value"}})
	if err != nil {
		t.Fatal(err)
	}
	if msg := r.wrap("push", errors.New("echo s3cret-value")).Error(); strings.Contains(msg, "s3cret-value") || !strings.Contains(msg, "git push https://git.example.org/t.git") {
		t.Errorf("wrap: %s", msg)
	}
	if _, err := Open(Options{URL: "https://h/t.git", Branch: "bad..name"}); err == nil {
		t.Error("a bad branch name is accepted")
	}
}
