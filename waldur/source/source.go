// Package source reads the Waldur state a run works on: from the API of
// every configured offering (API, which also refreshes a few resources into
// the last state and confirms a removal with a direct read), or from a
// recorded snapshot (Snapshot). API keeps one Waldur client per offering,
// which every stage of a run shares (Client).
package source

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
)

// Snapshot reads a recorded state from a snapshot file.
type Snapshot struct {
	Path string
	Log  *slog.Logger
}

// Read loads the snapshot; a missing or broken file is a config error.
func (s *Snapshot) Read(context.Context) (*waldur.State, error) {
	snap, err := waldur.LoadSnapshot(s.Path)
	if err != nil {
		return nil, failure.Classify(failure.ClassConfig, err)
	}
	logOrDiscard(s.Log).Info("read snapshot", "file", s.Path, "taken_at", snap.TakenAt.Format(time.RFC3339), "offerings", len(snap.Offerings))
	return &snap.State, nil
}

// API reads the state of every configured offering from its Waldur API.
// It keeps one client per offering for every stage and run, and builds it
// anew when the offering's token changes (a rotated token file is picked up).
type API struct {
	Offerings []config.Offering
	Log       *slog.Logger
	// Tune adjusts every client's options (tests shorten the retry waits).
	Tune func(*waldur.ClientOptions)
	// Writers, when above the client's default concurrency, raises it so
	// that orders.write_concurrency write-backs can be in flight at once.
	Writers int

	clients map[string]tokenClient // by offering name
}

// tokenClient is a client and the token it was built with.
type tokenClient struct {
	token config.Secret
	c     *waldur.Client
}

// Read reads every offering in config order. An offering that cannot be
// read (Waldur down or refusing, an inconsistent listing, a missing token) is
// recorded in State.Unread and the others are read: its tenants are kept as
// they are. Only when no offering can be read does Read fail.
func (s *API) Read(ctx context.Context) (*waldur.State, error) {
	log := logOrDiscard(s.Log)
	st := &waldur.State{}
	var first error
	for i := range s.Offerings {
		o := &s.Offerings[i]
		ost, err := s.readOffering(ctx, o)
		if err != nil {
			if ctx.Err() != nil {
				return nil, failure.Classify(failure.ClassWaldur, err)
			}
			first = cmp.Or(first, err)
			if st.Unread == nil {
				st.Unread = map[string]string{}
			}
			st.Unread[o.Name] = err.Error()
			log.Error("reading the offering failed: its tenants are kept as they are", "offering", o.Name, "error", err.Error())
			continue
		}
		st.Offerings = append(st.Offerings, *ost)
	}
	if len(st.Unread) == len(s.Offerings) && first != nil {
		return nil, first
	}
	return st, nil
}

func (s *API) readOffering(ctx context.Context, o *config.Offering) (*waldur.OfferingState, error) {
	c, err := s.Client(o)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ost, err := c.ReadOffering(ctx, o.Name, waldur.UUID(o.WaldurOfferingUUID))
	if err != nil {
		return nil, failure.Classify(failure.ClassWaldur, err)
	}
	logOrDiscard(s.Log).Info("read Waldur offering", "offering", o.Name, "resources", len(ost.Resources), "orders", len(ost.Orders),
		"projects", len(ost.Teams), "offering_users", len(ost.OfferingUsers), "terminated", len(ost.Terminated),
		"bad_records", len(ost.BadRecords), "duration", time.Since(start).Round(time.Millisecond).String())
	return ost, nil
}

// Client is the Waldur client of an offering, built anew when its token
// changed. A missing token or a bad URL is a config error.
func (s *API) Client(o *config.Offering) (*waldur.Client, error) {
	token, err := o.Token()
	if err != nil {
		return nil, failure.Classify(failure.ClassConfig, err)
	}
	if tc, ok := s.clients[o.Name]; ok && tc.token == token {
		return tc.c, nil
	}
	opts := waldur.DefaultClientOptions()
	opts.BaseURL, opts.Token, opts.VerifySSL = o.WaldurAPIURL, token.Reveal(), o.VerifiesSSL()
	opts.TokenSource = o.TokenSource()
	opts.UserAgent, opts.Logger = version.UserAgent(), logOrDiscard(s.Log).With("offering", o.Name)
	opts.Concurrency = max(opts.Concurrency, s.Writers)
	if s.Tune != nil {
		s.Tune(&opts)
	}
	c, err := waldur.NewClient(opts)
	if err != nil {
		return nil, failure.Errorf(failure.ClassConfig, "offering %s: %w", o.Name, err)
	}
	if s.clients == nil {
		s.clients = map[string]tokenClient{}
	}
	s.clients[o.Name] = tokenClient{token: token, c: c}
	return c, nil
}

func logOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Preflight builds the client of every offering, before a run sends a
// request: its token is read and its URL checked. It returns every failure.
func (s *API) Preflight() []error {
	var errs []error
	for i := range s.Offerings {
		if _, err := s.Client(&s.Offerings[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Refresh returns a copy of last in which the named resources, their teams
// and every offering's open orders and accounts are read again: per
// offering the order listing and the two account listings, and one resource
// and one team read per named resource. A resource
// now in a state the listing leaves out (Terminated) or answering 404 leaves
// the state; one of another offering is ignored.
func (s *API) Refresh(ctx context.Context, last *waldur.State, ids []waldur.UUID) (*waldur.State, error) {
	st := &waldur.State{Offerings: make([]waldur.OfferingState, len(last.Offerings)), Unread: maps.Clone(last.Unread)}
	for i, prev := range last.Offerings {
		o := s.offering(prev.Name)
		if o == nil {
			return nil, failure.Errorf(failure.ClassConfig, "offering %q of the last state is no longer configured", prev.Name)
		}
		c, err := s.Client(o)
		if err != nil {
			return nil, err
		}
		ost := prev
		ost.Resources = slices.Clone(prev.Resources)
		ost.Teams = maps.Clone(prev.Teams)
		if ost.Teams == nil {
			ost.Teams = map[waldur.UUID][]waldur.TeamMember{}
		}
		if ost.Orders, err = c.ListOrders(ctx, prev.OfferingUUID); err == nil {
			err = c.RefreshAccounts(ctx, &ost)
		}
		if err != nil {
			return nil, failure.Classify(failure.ClassWaldur, fmt.Errorf("refresh offering %q: %w", prev.Name, err))
		}
		for _, id := range withOrderResources(ids, prev.Orders, ost.Orders) {
			if err := refreshResource(ctx, c, &ost, id); err != nil {
				return nil, failure.Classify(failure.ClassWaldur, fmt.Errorf("refresh offering %q: %w", prev.Name, err))
			}
		}
		st.Offerings[i] = ost
	}
	return st, nil
}

// withOrderResources adds to ids the resources of the orders open at the last
// read and of those open now: a run that moved an order (approved it, set it
// done) changed its resource in Waldur, and a resource whose order was opened
// or closed since renders differently, so the kept copy of it is stale.
func withOrderResources(ids []waldur.UUID, before, now []waldur.Order) []waldur.UUID {
	out := slices.Clone(ids)
	for _, list := range [][]waldur.Order{before, now} {
		for _, o := range list {
			if o.MarketplaceResourceUUID != "" && !slices.Contains(out, o.MarketplaceResourceUUID) {
				out = append(out, o.MarketplaceResourceUUID)
			}
		}
	}
	return out
}

// refreshResource reads one resource (and its team) into ost.
func refreshResource(ctx context.Context, c *waldur.Client, ost *waldur.OfferingState, id waldur.UUID) error {
	at := slices.IndexFunc(ost.Resources, func(r waldur.Resource) bool { return r.UUID == id })
	r, found, err := c.LookupResource(ctx, id)
	switch {
	case err != nil:
		return err
	case !found:
		if at >= 0 {
			ost.Resources = slices.Delete(ost.Resources, at, at+1)
		}
		return nil
	case r.OfferingUUID != ost.OfferingUUID:
		return nil
	}
	if at >= 0 {
		ost.Resources = slices.Delete(ost.Resources, at, at+1)
	}
	if !slices.Contains(waldur.ListedResourceStates, r.State) {
		return nil
	}
	team, err := c.Team(ctx, id)
	if err != nil {
		return err
	}
	ost.Teams[r.ProjectUUID] = team
	pos, _ := slices.BinarySearchFunc(ost.Resources, *r, func(a, b waldur.Resource) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.UUID, b.UUID))
	})
	ost.Resources = slices.Insert(ost.Resources, pos, *r)
	return nil
}

func (s *API) offering(name string) *config.Offering {
	for i := range s.Offerings {
		if s.Offerings[i].Name == name {
			return &s.Offerings[i]
		}
	}
	return nil
}

// Unread is the waldur stage's entries: every offering that could not be
// read, skipped with why.
func Unread(st *waldur.State) changeset.Set {
	var cs changeset.Set
	if st == nil {
		return cs
	}
	for _, name := range slices.Sorted(maps.Keys(st.Unread)) {
		cs.Add(changeset.Entry{Stage: "waldur", Kind: "Offering", Subject: name, Action: changeset.Skip, Offering: name,
			Reason: "not read, its tenants are kept as they are: " + st.Unread[name], Cause: changeset.CauseOfferingUnread})
	}
	return cs
}
