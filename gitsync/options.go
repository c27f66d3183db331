package gitsync

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/waldur/waldur-gitops/config"
)

// Options say which repository, branch and directory a Repo writes, as whom.
type Options struct {
	// URL of the repository: https://, http://, ssh://, user@host:path, file:// or a local path.
	URL string
	// Branch is the branch committed to; it is created when missing.
	Branch string
	// Path is the slash-separated directory of the repository that is replaced
	// with the rendered tree; "" or "." is the whole repository.
	Path string
	// Auth authenticates to the remote; nil for none.
	Auth transport.AuthMethod
	// AuthorName and AuthorEmail are the author and committer of every commit.
	AuthorName, AuthorEmail string
	// Signer signs every commit; nil for unsigned commits.
	Signer Signer
	// Now dates commits (default time.Now).
	Now func() time.Time
	// Timeout bounds one fetch and one push (default config.DefaultGitTimeout).
	Timeout time.Duration
	// Log receives progress messages (default: discarded).
	Log *slog.Logger
	// CredentialSource names where the credential was read from (config
	// keys and files or variables, never the value), for a refusal's error.
	CredentialSource string
	// secrets are values that must never appear in an error.
	secrets []string
}

// OptionsFromConfig builds options from the git section of the config: it
// reads the credentials, the ssh key and known_hosts file and the signing key.
func OptionsFromConfig(g config.Git) (Options, error) {
	o := Options{URL: g.URL, Branch: g.Branch, Path: g.Path, AuthorName: g.AuthorName, AuthorEmail: g.AuthorEmail, Timeout: g.FetchTimeout()}
	if g.URL == "" {
		return o, errors.New("git.url is not set: there is no repository to compare with or commit to")
	}
	auth, secret, err := AuthFromConfig(g)
	if err != nil {
		return o, err
	}
	o.Auth, o.CredentialSource = auth, g.CredentialSource()
	if secret != "" {
		o.secrets = append(o.secrets, secret)
	}
	if g.SigningKeyFile != "" {
		s, err := LoadSigner(g.SigningKeyFile, g.SigningKeyType)
		if err != nil {
			return o, err
		}
		o.Signer = s
	}
	return o, nil
}

// dir returns the cleaned subtree path, "" for the whole repository.
func (o *Options) dir() string {
	p := strings.Trim(path.Clean("/"+o.Path), "/")
	return p
}

// RedactURL returns the URL without any user information, safe to print.
func RedactURL(u string) string {
	if !strings.Contains(u, "://") {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable repository URL)"
	}
	p.User = nil
	return p.String()
}

// AuthFromConfig builds the credentials of the git section: basic auth (a
// token or password from a file or the environment) for HTTP, a key and a
// known_hosts file for SSH, none for a local repository. secret is the value
// that must never appear in an error.
func AuthFromConfig(g config.Git) (auth transport.AuthMethod, secret string, err error) {
	switch g.Transport() {
	case config.GitHTTPS, config.GitHTTP:
		user, secret, err := g.HTTPCredentials()
		if err != nil {
			return nil, "", err
		}
		if secret != "" {
			return &githttp.BasicAuth{Username: user, Password: secret.Reveal()}, secret.Reveal(), nil
		}
	case config.GitSSH:
		ep, err := transport.NewEndpoint(g.URL)
		if err != nil {
			return nil, "", fmt.Errorf("git.url: %w", err)
		}
		user := ep.User
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, g.SSHKeyFile, "")
		if err != nil {
			return nil, "", fmt.Errorf("git.ssh_key_file %s: %w", g.SSHKeyFile, err)
		}
		db, err := gitssh.NewKnownHostsDb(g.KnownHostsFile)
		if err != nil {
			return nil, "", fmt.Errorf("git.known_hosts_file %s: %w", g.KnownHostsFile, err)
		}
		port := ep.Port
		if port == 0 {
			port = 22
		}
		keys.HostKeyCallback = db.HostKeyCallback()
		keys.HostKeyAlgorithms = db.HostKeyAlgorithms(net.JoinHostPort(ep.Host, strconv.Itoa(port)))
		return keys, "", nil
	}
	return nil, "", nil
}
