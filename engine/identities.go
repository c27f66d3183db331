package engine

import (
	"context"
	"errors"
	"log/slog"
	"maps"
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
func (k *KeycloakStage) Reconcile(ctx context.Context, res *render.Result, present func(waldur.UUID) bool, o IdentityOptions) (*IdentityResult, error) {
	cfg, res := doubtless(k.Config, res)
	g := o.Guard
	out, err := keycloak.Reconcile(ctx, cfg, res, keycloak.Options{
		DryRun: o.DryRun, NoDelete: o.NoDelete, Log: k.Log, Guard: &g, InGit: present, Connect: k.Connect,
		ClientOptions: keycloak.ClientOptions{UserAgent: version.UserAgent()},
	})
	if errors.Is(err, keycloak.ErrCredentials) {
		err = Classify(ClassConfig, err)
	}
	return &IdentityResult{Changes: out.Changes, Calls: out.Calls, Waiting: waiting(cfg, res, out.Changes)}, err
}

// waiting finds the rendered resources whose groups are not in place after
// a pass: every group of a realm that failed, and each group (or membership
// write) that was skipped for anything but a member missing in Keycloak.
func waiting(cfg *config.Config, res *render.Result, cs changeset.Set) map[waldur.UUID]string {
	failedRealm := map[string]string{} // offering → why
	notInPlace := map[string]string{}  // group path → why
	for _, e := range cs.ByAction(changeset.Skip) {
		switch e.Kind {
		case keycloak.KindRealm:
			for _, t := range keycloak.Targets(cfg) {
				if t.String() == e.Subject {
					for _, o := range t.Offerings {
						failedRealm[o.Name] = "Keycloak " + e.Subject + " " + e.Reason
					}
				}
			}
		case keycloak.KindGroup:
			notInPlace[e.Subject] = "Keycloak group " + e.Subject + ": " + e.Reason
		case keycloak.KindMembership:
			if strings.HasPrefix(e.Reason, "failed: ") || strings.HasPrefix(e.Reason, "not attempted: ") {
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
