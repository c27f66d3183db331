package ociship

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// refused adds to err, when the registry refused the credential (401 or
// 403), where the credential was read from.
func (g Registry) refused(err error) error {
	var te *transport.Error
	if g.CredentialSource == "" || !errors.As(err, &te) || (te.StatusCode != http.StatusUnauthorized && te.StatusCode != http.StatusForbidden) {
		return err
	}
	return fmt.Errorf("%w (check the credential, %s)", err, g.CredentialSource)
}
