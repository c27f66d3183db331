package gitsync

import (
	"context"
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// RemoteTip asks the remote where the branch is, from the references it
// advertises, and fetches nothing: "" when the branch or the repository is
// empty. It leaves what the Repo holds as it is.
func (r *Repo) RemoteTip(ctx context.Context) (string, error) {
	var tip plumbing.Hash
	err := r.bounded(ctx, "fetch", func(ctx context.Context) error {
		sess, err := r.client.NewUploadPackSession(r.ep, r.opts.Auth)
		if err != nil {
			return r.wrap("read the branch tip", err)
		}
		defer sess.Close()
		ar, err := sess.AdvertisedReferencesContext(ctx)
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return nil
		}
		if err == nil {
			tip, err = advertised(ar, r.branch)
		}
		return r.wrap("read the branch tip", err)
	})
	if err != nil || tip.IsZero() {
		return "", err
	}
	return tip.String(), nil
}
