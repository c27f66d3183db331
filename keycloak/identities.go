package keycloak

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// PassOptions are the switches of one pass of the identities stage, field
// for field the engine's IdentityOptions.
type PassOptions struct {
	DryRun, NoDelete bool
	Guard            guard.Options
	// Resources, when set, are the resources the run was asked about: the
	// pass may limit itself to their groups.
	Resources []waldur.UUID
	// Held maps the resources whose Git change waits on a review branch to
	// why: nothing may be taken from them before the change is merged.
	Held map[waldur.UUID]string
}

// Identities is the work of the engine's identities stage: the groups and
// memberships of every offering with keycloak_enabled, reconciled with a
// render, and which rendered resources wait on them.
type Identities struct {
	Config *config.Config
	Log    *slog.Logger
	// Connect replaces the client Reconcile opens (tests).
	Connect func(Target) (*Client, error)
	// Memory is what the earlier passes of this stage found (kept between
	// the runs of one engine, and in the config's keycloak_state file);
	// nil: every pass reads every group.
	Memory *Memory

	missing, failed, refused map[string]string
}

// MissingUsers returns the members the last Reconcile did not find in
// Keycloak: offering username → why.
func (k *Identities) MissingUsers() map[string]string { return k.missing }

// FailedUsers returns the members whose membership write the last Reconcile
// could not make (Keycloak refused or failed): offering username → the error.
func (k *Identities) FailedUsers() map[string]string { return k.failed }

// RefusedUsers returns the members whose removal from a group the last
// Reconcile could not make because Keycloak refused it.
func (k *Identities) RefusedUsers() map[string]string { return k.refused }

// Reconcile makes Keycloak match res and returns what it did and the
// rendered resources whose groups are not in place, with why. Unusable
// credentials are ErrCredentials.
//
// A dry run leaves out the realms whose settings name no credential at all
// (no keycloak_password and no client_secret, in any of their forms): it says
// so with a skipped KeycloakRealm entry and a warning, and compares the other
// realms, so that a config still without secrets (the bundled example, a
// first try) can be dry-run. A run that writes keeps failing on them.
func (k *Identities) Reconcile(ctx context.Context, res *render.Result, present func(waldur.UUID) bool, o PassOptions) (*Result, map[waldur.UUID]string, error) {
	cfg, res := doubtless(k.Config, res)
	g := o.Guard
	var unread changeset.Set
	if o.DryRun {
		cfg, unread = k.withoutCredentiallessRealms(cfg)
	}
	out, err := Reconcile(ctx, cfg, res, Options{
		DryRun: o.DryRun, NoDelete: o.NoDelete, Log: k.Log, Guard: &g, InGit: present, Connect: k.Connect,
		Memory: k.Memory, Resources: o.Resources, Held: o.Held,
		ClientOptions: ClientOptions{UserAgent: version.UserAgent()},
	})
	out.Changes.Merge(unread)
	k.missing, k.failed, k.refused = out.MissingUsers, out.FailedUsers, out.RefusedUsers
	return out, waiting(cfg, res, out.Changes), err
}

// waiting finds the rendered resources whose groups are not in place after
// a pass: every group of a realm that failed, and each group (or membership
// write) that was skipped for anything but a member missing in Keycloak.
func waiting(cfg *config.Config, res *render.Result, cs changeset.Set) map[waldur.UUID]string {
	failedRealm := map[string]string{} // offering → why
	notInPlace := map[string]string{}  // group path → why
	for _, e := range cs.ByAction(changeset.Skip) {
		switch e.Kind {
		case KindRealm:
			for _, t := range Targets(cfg) {
				if t.String() == e.Subject {
					for _, o := range t.Offerings {
						failedRealm[o.Name] = "Keycloak " + e.Subject + " " + e.Reason
					}
				}
			}
		case KindGroup:
			notInPlace[e.Subject] = "Keycloak group " + e.Subject + ": " + e.Reason
		case KindMembership:
			if e.Cause == changeset.CauseKeycloakFailed || e.Cause == changeset.CauseNotAttempted {
				path, _, _ := strings.Cut(e.Subject, " ")
				notInPlace[path] = "Keycloak membership " + e.Subject + ": " + e.Reason
			}
		}
	}
	out := map[waldur.UUID]string{}
	for _, g := range res.Groups {
		why, bad := failedRealm[g.Offering]
		if !bad {
			why, bad = notInPlace[g.Path()]
		}
		if !bad {
			continue
		}
		for _, r := range g.Resources {
			if _, seen := out[r]; !seen {
				out[r] = why
			}
		}
	}
	return out
}

// doubtless leaves out of the Keycloak pass what the run is in doubt about:
// the offerings that could not be read (a realm only they use is not
// touched; in a shared realm their groups belong to an offering outside the
// pass and stay) and the resources kept for an unknown state (their groups
// stay as they are, like those of skipped resources).
func doubtless(cfg *config.Config, res *render.Result) (*config.Config, *render.Result) {
	if len(res.Unread) == 0 && len(res.Kept) == 0 {
		return cfg, res
	}
	c := *cfg
	c.Offerings = slices.DeleteFunc(slices.Clone(cfg.Offerings), func(o config.Offering) bool { _, unread := res.Unread[o.Name]; return unread })
	r := *res
	r.Skipped = maps.Clone(res.Skipped)
	if r.Skipped == nil {
		r.Skipped = map[waldur.UUID]string{}
	}
	for id, why := range res.Kept {
		r.Skipped[id] = "kept as it is: " + why
	}
	return &c, &r
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
func (k *Identities) withoutCredentiallessRealms(cfg *config.Config) (*config.Config, changeset.Set) {
	var (
		skip    changeset.Set
		dropped []*config.Offering
	)
	for _, t := range Targets(cfg) {
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
		skip.Add(changeset.Entry{Stage: Stage, Kind: KindRealm, Subject: t.String(), Action: changeset.Skip, Reason: reason, Cause: changeset.CauseNoCredentials})
		if k.Log != nil {
			k.Log.Warn("keycloak realm not read: no credentials", "realm", t.String(), "offerings", strings.Join(names, ", "), "dry_run", true)
		}
	}
	if len(dropped) == 0 {
		return cfg, skip
	}
	cp := *cfg
	cp.Offerings = nil
	for i := range cfg.Offerings {
		if !slices.Contains(dropped, &cfg.Offerings[i]) {
			cp.Offerings = append(cp.Offerings, cfg.Offerings[i])
		}
	}
	return &cp, skip
}

// Preflight builds the client of every Keycloak target (it makes no
// call): its URL is checked and its credentials read. A dry run leaves a
// realm whose settings name no credential out (Identities says so), so
// only a run that writes needs its credentials.
func Preflight(cfg *config.Config, dryRun bool) []error {
	var errs []error
	for _, t := range Targets(cfg) {
		if dryRun && NoCredentials(t.Settings) {
			continue
		}
		if _, err := NewClient(t, ClientOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("keycloak %s: %w", t, err))
		}
	}
	return errs
}
