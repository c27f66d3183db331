package diagnose

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/hostbound"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// gocloakCheck logs in and reads the realm with gocloak. The token is obtained
// once and shared by both checks.
type gocloakCheck struct {
	k  config.KeycloakSettings
	gc *gocloak.GoCloak

	once  sync.Once
	token string
	err   error
}

// NewKeycloak builds the Keycloak checks' client from an offering's keycloak
// settings. timeout bounds each request (diagnose --timeout); zero: the
// settings' keycloak_timeout_seconds, else 30s.
func NewKeycloak(k config.KeycloakSettings, timeout time.Duration) (Keycloak, error) {
	if k.URL == "" {
		return nil, errors.New("keycloak.keycloak_url is not set")
	}
	k, err := k.WithCredentials()
	if err != nil {
		return nil, err
	}
	gc := gocloak.NewClient(k.URL)
	rc := gc.RestyClient()
	if timeout <= 0 {
		timeout = 30 * time.Second
		if k.TimeoutSeconds != nil {
			timeout = time.Duration(*k.TimeoutSeconds) * time.Second
		}
	}
	rc.SetTimeout(timeout)
	if !k.VerifiesSSL() {
		rc.SetTLSClientConfig(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // explicitly configured
	}
	// As the Keycloak stage: no redirect, the password and token stay with
	// keycloak_url.
	rc.SetTransport(hostbound.Transport(rc.GetClient().Transport, "keycloak_url", hostbound.None))
	return &gocloakCheck{k: k, gc: gc}, nil
}

func (c *gocloakCheck) Login(ctx context.Context) error {
	c.once.Do(func() { c.token, c.err = c.login(ctx) })
	return c.err
}

// login mirrors how the Keycloak stage logs in: the password grant with a user
// name (and the client secret of a confidential client), else the client's own
// service account.
func (c *gocloakCheck) login(ctx context.Context) (string, error) {
	k := c.k
	opts := gocloak.TokenOptions{ClientID: gocloak.StringP(k.ClientID)}
	switch {
	case k.Username != "":
		opts.GrantType = gocloak.StringP("password")
		opts.Username = gocloak.StringP(k.Username)
		opts.Password = gocloak.StringP(k.Password.Reveal())
		if k.ClientSecret != "" {
			opts.ClientSecret = gocloak.StringP(k.ClientSecret.Reveal())
		}
	case k.ClientSecret != "":
		opts.GrantType = gocloak.StringP("client_credentials")
		opts.ClientSecret = gocloak.StringP(k.ClientSecret.Reveal())
	default:
		return "", errors.New("no credentials: set keycloak_username and keycloak_password, or client_secret (each also as _file or _env)")
	}
	tok, err := c.gc.GetToken(ctx, k.UserRealm, opts)
	if err != nil {
		return "", c.clean(err)
	}
	if tok.AccessToken == "" {
		return "", errors.New("no access token in the answer of Keycloak")
	}
	return tok.AccessToken, nil
}

func (c *gocloakCheck) ReadGroups(ctx context.Context) (int, error) {
	if err := c.Login(ctx); err != nil {
		return 0, errors.New("cannot log in: " + err.Error())
	}
	groups, err := c.gc.GetGroups(ctx, c.token, c.k.Realm, gocloak.GetGroupsParams{Max: gocloak.IntP(1), BriefRepresentation: gocloak.BoolP(true)})
	if err != nil {
		return 0, c.clean(err)
	}
	return len(groups), nil
}

// clean keeps secrets out of an error message, in every form a token
// endpoint may echo them (internal/redact).
func (c *gocloakCheck) clean(err error) error {
	red := redact.Default().With(c.k.Password.Reveal(), c.k.ClientSecret.Reveal(), c.token)
	return errors.New(red.String(err.Error()))
}
