package diagnose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/gitsync"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// gitRemote talks to a remote with go-git's transports: the reference
// advertisement of git-upload-pack (what a fetch or ls-remote reads) and of
// git-receive-pack (the first step of a push; nothing is sent after it).
type gitRemote struct {
	ep    *transport.Endpoint
	auth  transport.AuthMethod
	local string // the repository directory of a local remote
	// secret is never shown in an error.
	secret string
}

// NewGitRemote builds the remote of the git section, with its credentials.
func NewGitRemote(g config.Git) (GitRemote, error) {
	ep, err := transport.NewEndpoint(g.URL)
	if err != nil {
		return nil, fmt.Errorf("git.url: %w", err)
	}
	auth, secret, err := gitsync.AuthFromConfig(g)
	if err != nil {
		return nil, err
	}
	r := &gitRemote{ep: ep, auth: auth, secret: secret}
	if g.Transport() == config.GitFile {
		r.local = ep.Path
	}
	return r, nil
}

func (r *gitRemote) ReadRefs(ctx context.Context) (map[string]string, error) {
	refs, err := r.advertised(ctx, false)
	if err != nil {
		return nil, r.clean(fmt.Errorf("read the repository: %w", err))
	}
	return refs, nil
}

func (r *gitRemote) WriteRefs(ctx context.Context) (map[string]string, error) {
	refs, err := r.advertised(ctx, true)
	if err != nil {
		return nil, r.clean(fmt.Errorf("open a push session: %w", err))
	}
	if r.local != "" {
		if err := writable(r.local); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// advertised opens an upload-pack or receive-pack session and returns the
// advertised references by name (none for an empty repository).
func (r *gitRemote) advertised(ctx context.Context, push bool) (map[string]string, error) {
	// A session rewrites its endpoint (on redirects), and the read and write
	// checks run at once: each gets its own copy.
	epCopy := *r.ep
	ep := &epCopy
	cl, err := gitsync.NewTransport(ep)
	if err != nil {
		return nil, err
	}
	var (
		ar     *packp.AdvRefs
		advErr error
	)
	if push {
		s, err := cl.NewReceivePackSession(ep, r.auth)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		ar, advErr = s.AdvertisedReferencesContext(ctx)
	} else {
		s, err := cl.NewUploadPackSession(ep, r.auth)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		ar, advErr = s.AdvertisedReferencesContext(ctx)
	}
	err = advErr
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ar.References))
	for name, h := range ar.References {
		out[name] = h.String()
	}
	return out, nil
}

// clean removes the secret (in every form, see internal/redact) from an
// error, in case a server echoes it.
func (r *gitRemote) clean(err error) error {
	return redact.Default().With(r.secret).Error(err)
}

// writable checks that a local repository's object store takes new files.
func writable(dir string) error {
	objects := filepath.Join(dir, "objects")
	if _, err := os.Stat(filepath.Join(dir, ".git", "objects")); err == nil {
		objects = filepath.Join(dir, ".git", "objects")
	}
	f, err := os.CreateTemp(objects, ".waldur-gitops-diagnose-")
	if err != nil {
		return fmt.Errorf("the repository is not writable: %w", err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}
