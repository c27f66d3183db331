// Package offboard is the offering-user deletion workflow: who is claimed,
// when Waldur may hear "deleted", and the proof behind it.
//
// An offering user in Requested deletion (or Error deleting, a failed
// earlier attempt) is claimed with set_deleting before the render; the
// render then leaves every user in Deleting out of every tenant and group of
// the offering. After the publish and the Keycloak pass the workflow proves
// the removal — the destination holds the offering's tenants as rendered
// (apply: applied; GitOps: committed on the branch) and Keycloak, read back,
// lists the user in no managed group — and only then sends set_deleted. A
// removal Keycloak refuses sends set_error_deleting; the next run claims the
// user again. A claim Waldur refuses (the user was granted again) leaves the
// user alone: read again, they keep the access Waldur's state now gives.
package offboard

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/keycloak"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// Stage names the entries of the claims; ProofStage those of the proof.
const (
	Stage      = "offboard"
	ProofStage = "proof"
	// KindOfferingUser is the kind of the workflow's entries.
	KindOfferingUser = "OfferingUser"
)

// Clients gives the Waldur client of an offering (engine.APISource).
type Clients interface {
	Client(o *config.Offering) (*waldur.Client, error)
}

// Workflow is the deletion workflow of one engine; it keeps, between the
// runs of a serve process, when each request was first seen and claimed.
// Run is not safe for concurrent use, like the engine.
type Workflow struct {
	Config *config.Config
	// Source gives the Waldur clients; nil (a snapshot) sends nothing: the
	// claims are made in the state only, as in a dry run.
	Source Clients
	// Keycloak reads the realms back (keycloak.ReadBack's options: Connect,
	// ClientOptions); nil when the run reconciles no Keycloak.
	Keycloak *keycloak.Options
	// Cluster reads the objects of the GitOps offerings with
	// order_done_on: applied back from their clusters; nil: not read.
	Cluster Cluster
	// Refused returns the users whose group removal Keycloak refused in
	// this run (keycloak.Result.RefusedUsers); nil: none.
	Refused func() map[string]string
	Log     *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// PollInterval is how often the proof reads the cluster again while it
	// waits for the consumer (order_done_on: applied); 0 is 2s.
	PollInterval time.Duration
	// Sleep waits between those reads (tests); nil waits on a timer.
	Sleep func(ctx context.Context, d time.Duration) error

	requested, claimed map[waldur.UUID]time.Time
	run                []*user
}

// user is one offering user the run works on.
type user struct {
	o   *config.Offering
	ost *waldur.OfferingState
	u   *waldur.OfferingUser
	rec report.Offboard
	// leaving: claimed now or earlier, so rendered out.
	leaving bool
}

func (w *Workflow) now() time.Time {
	if w.Now != nil {
		return w.Now().UTC()
	}
	return time.Now().UTC()
}

func (w *Workflow) log() *slog.Logger {
	if w.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Log
}

// claimable are the states a claim starts from.
func claimable(state string) bool {
	return state == waldur.OfferingUserRequestedDeletion || state == waldur.OfferingUserErrorDeleting
}

// Claim claims every deletion request of st (Requested deletion, Error
// deleting) with set_deleting (dryRun, or without a Source: in the state
// only, nothing sent) and marks the claimed users Deleting in st — their
// offering-user record and the team entries naming them — so that the
// render leaves them out. After a claim Waldur refuses, the user is read
// again and st given the state Waldur holds now: a user granted again keeps
// the access they had. A user Deleting since an earlier run is carried on.
// It returns the entries, and the names the leaving users have in grants
// with the request behind each (guard.Options.Offboarded).
func (w *Workflow) Claim(ctx context.Context, st *waldur.State, dryRun bool) (changeset.Result, map[string]string, error) {
	w.run = nil
	if w.requested == nil {
		w.requested, w.claimed = map[waldur.UUID]time.Time{}, map[waldur.UUID]time.Time{}
	}
	res := changeset.Result{Calls: map[string]int{}}
	if st == nil {
		return res, nil, nil
	}
	leaving := map[string]string{}
	for i := range st.Offerings {
		ost := &st.Offerings[i]
		o := w.offering(ost.Name)
		if o == nil {
			continue
		}
		for j := range ost.OfferingUsers {
			u := &ost.OfferingUsers[j]
			if !claimable(u.State) && u.State != waldur.OfferingUserDeleting {
				continue
			}
			x := &user{o: o, ost: ost, u: u, rec: report.Offboard{Offering: o.Name, OfferingUser: string(u.UUID), Username: u.Username, State: u.State}}
			if u.State == waldur.OfferingUserRequestedDeletion {
				if _, seen := w.requested[u.UUID]; !seen {
					w.requested[u.UUID] = w.now()
				}
			}
			x.rec.RequestedAt = w.requested[u.UUID]
			if claimable(u.State) {
				res.Changes.Add(w.claim(ctx, x, dryRun, res.Calls))
			}
			x.leaving = x.rec.State == waldur.OfferingUserDeleting && (u.State == waldur.OfferingUserDeleting || x.rec.Cause == "")
			x.rec.ClaimedAt = w.claimed[u.UUID]
			if x.rec.State != u.State {
				setState(ost, u, x.rec.State)
			}
			if x.leaving {
				for _, name := range names(o, u) {
					leaving[name] = fmt.Sprintf("offering user %s (%s) of %s: deletion requested in Waldur", u.UUID, u.Username, o.Name)
				}
			}
			w.run = append(w.run, x)
		}
	}
	return res, leaving, nil
}

// claim sends one claim (or, in a dry run, says it would) and returns its
// entry; x.rec.State is Deleting once it is claimed.
func (w *Workflow) claim(ctx context.Context, x *user, dryRun bool, calls map[string]int) changeset.Entry {
	e := changeset.Entry{Stage: Stage, Kind: KindOfferingUser, Subject: subject(x), Offering: x.o.Name, Action: changeset.Update}
	if dryRun || w.Source == nil {
		e.Reason = "would claim the deletion request (set_deleting): " + x.u.State + " → Deleting"
		x.rec.State = waldur.OfferingUserDeleting
		return e
	}
	c, err := w.Source.Client(x.o)
	if err == nil {
		calls[waldur.KindOfferingUserDeleting]++
		err = c.SetOfferingUserDeleting(ctx, x.u.UUID)
	}
	switch {
	case err == nil:
		e.Reason = "claimed the deletion request: " + x.u.State + " → Deleting"
		x.rec.State = waldur.OfferingUserDeleting
		w.claimed[x.u.UUID] = w.now()
		w.log().Info("offboarding claimed", "offering", x.o.Name, "offering_user", x.u.UUID, "username", x.u.Username)
	case waldur.IsRefusedClaim(err):
		e.Action, e.Cause = changeset.Skip, changeset.CauseClaimRefused
		e.Reason = "left alone: Waldur refused the claim (granted again, or claimed elsewhere): " + err.Error()
		x.rec.Cause, x.rec.Reason = e.Cause, e.Reason
		// The render goes by the state Waldur gives now: a user granted
		// again keeps their access, one claimed elsewhere is left out.
		if now, rerr := c.GetOfferingUser(ctx, x.u.UUID); rerr == nil && now.State != "" {
			calls[waldur.KindOfferingUserGet]++
			x.rec.State = now.State
		}
	default:
		e.Action, e.Cause = changeset.Skip, changeset.CauseAPIFailure
		e.Reason = "not claimed, the next run tries again: " + err.Error()
		x.rec.Cause, x.rec.Reason = e.Cause, e.Reason
	}
	return e
}

// setState puts u in state in the offering's state, in the team entries
// naming it too: the render leaves out the members in a deletion state.
func setState(ost *waldur.OfferingState, u *waldur.OfferingUser, state string) {
	u.State = state
	if u.Username == "" || ost == nil {
		return
	}
	for _, team := range ost.Teams {
		for i := range team {
			if team[i].OfferingUserUsername == u.Username {
				team[i].OfferingUserState = state
			}
		}
	}
}

// names are the names a user may have in a grant of the offering's tenants:
// the offering username and each identity a profile may bind (e-mail, civil
// number, names), as they are and in lower case, bare and after the
// offering's user_prefix (namespace backend).
func names(o *config.Offering, u *waldur.OfferingUser) []string {
	var out []string
	prefix := o.Settings.SubjectUserPrefix()
	for _, id := range []string{u.Username, u.UserEmail, u.UserCivilNumber, u.UserFullName, u.UserFirstName, u.UserLastName} {
		if id == "" {
			continue
		}
		for _, v := range []string{id, strings.ToLower(id)} {
			out = append(out, v)
			if prefix != "" {
				out = append(out, prefix+v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// subject names an offering user in entries: <offering>/<uuid> (<username>).
func subject(x *user) string {
	return x.o.Name + "/" + string(x.u.UUID) + " (" + cmp.Or(x.u.Username, "no username") + ")"
}

func (w *Workflow) offering(name string) *config.Offering {
	for i := range w.Config.Offerings {
		if w.Config.Offerings[i].Name == name {
			return &w.Config.Offerings[i]
		}
	}
	return nil
}

// Leaving reports whether the last Claim found a user leaving, whose
// removal Prove then checks in the published files.
func (w *Workflow) Leaving() bool {
	for _, x := range w.run {
		if x.leaving {
			return true
		}
	}
	return false
}
