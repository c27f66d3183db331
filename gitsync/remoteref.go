package gitsync

import (
	"context"
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// remoteRef is where the server's ref is now, from the references it
// advertises (op names the step in errors); zero when the ref or the
// repository is empty.
func (r *Repo) remoteRef(ctx context.Context, ref plumbing.ReferenceName, op string) (plumbing.Hash, error) {
	var tip plumbing.Hash
	err := r.bounded(ctx, "fetch", func(ctx context.Context) error {
		sess, err := r.client.NewUploadPackSession(r.ep, r.opts.Auth)
		if err != nil {
			return r.wrap(op, err)
		}
		defer sess.Close()
		ar, err := sess.AdvertisedReferencesContext(ctx)
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return nil
		}
		if err == nil {
			tip, err = advertised(ar, ref)
		}
		return r.wrap(op, err)
	})
	return tip, err
}
