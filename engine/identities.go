package engine

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// KeycloakStage is the Identities seam over package keycloak: the groups and
// memberships of every offering with keycloak_enabled.
type KeycloakStage struct {
	Config *config.Config
	Log    *slog.Logger
	// Connect replaces the client keycloak.Reconcile opens (tests).
	Connect func(keycloak.Target) (*keycloak.Client, error)
}

// Reconcile makes Keycloak match res. Unusable credentials are a config
// error (the engine reclassifies it when something was published already).
//
// A dry run leaves out the realms whose settings name no credential at all
// (no keycloak_password and no client_secret, in any of their forms): it says
// so with a skipped KeycloakRealm entry and a warning, and compares the other
// realms, so that a config still without secrets (the bundled example, a
// first try) can be dry-run. A run that writes keeps failing on them.
func (k *KeycloakStage) Reconcile(ctx context.Context, res *render.Result, present func(waldur.UUID) bool, o IdentityOptions) (changeset.Set, map[string]int, error) {
	g := o.Guard
	cfg := k.Config
	var unread changeset.Set
	if o.DryRun {
		cfg, unread = k.withoutCredentiallessRealms()
	}
	out, err := keycloak.Reconcile(ctx, cfg, res, keycloak.Options{
		DryRun: o.DryRun, NoDelete: o.NoDelete, Log: k.Log, Guard: &g, InGit: present, Connect: k.Connect,
		ClientOptions: keycloak.ClientOptions{UserAgent: version.UserAgent()},
	})
	if errors.Is(err, keycloak.ErrCredentials) {
		err = Classify(ClassConfig, err)
	}
	out.Changes.Merge(unread)
	return out.Changes, out.Calls, err
}

// NoCredentials reports whether Keycloak settings name no credential at all:
// neither a password nor a client secret, inline, as a file or as an
// environment variable. A user name alone is no credential.
func NoCredentials(k config.KeycloakSettings) bool {
	return k.Password == "" && k.PasswordFile == "" && k.PasswordEnv == "" && !k.HasClientSecret()
}

// withoutCredentiallessRealms returns the config without the offerings of the
// Keycloak realms whose settings name no credential, and a skipped entry for
// each such realm (logged as a warning).
func (k *KeycloakStage) withoutCredentiallessRealms() (*config.Config, changeset.Set) {
	var (
		skip    changeset.Set
		dropped []*config.Offering
	)
	for _, t := range keycloak.Targets(k.Config) {
		if !NoCredentials(t.Settings) {
			continue
		}
		names := make([]string, len(t.Offerings))
		for i, o := range t.Offerings {
			names[i] = o.Name
		}
		dropped = append(dropped, t.Offerings...)
		reason := "not read: no Keycloak credentials for offering(s) " + strings.Join(names, ", ") +
			"; a dry run leaves this realm out, sync fails on it until keycloak_username and keycloak_password, or client_secret, are set (each also as _file or _env)"
		skip.Add(changeset.Entry{Stage: keycloak.Stage, Kind: keycloak.KindRealm, Subject: t.String(), Action: changeset.Skip, Reason: reason})
		if k.Log != nil {
			k.Log.Warn("keycloak realm not read: no credentials", "realm", t.String(), "offerings", strings.Join(names, ", "), "dry_run", true)
		}
	}
	if len(dropped) == 0 {
		return k.Config, skip
	}
	cp := *k.Config
	cp.Offerings = nil
	for i := range k.Config.Offerings {
		if !slices.Contains(dropped, &k.Config.Offerings[i]) {
			cp.Offerings = append(cp.Offerings, k.Config.Offerings[i])
		}
	}
	return &cp, skip
}
