package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
)

// SnapshotSource reads a recorded state from a snapshot file.
type SnapshotSource struct {
	Path string
	Log  *slog.Logger
}

// Read loads the snapshot; a missing or broken file is a config error.
func (s *SnapshotSource) Read(context.Context) (*waldur.State, error) {
	snap, err := waldur.LoadSnapshot(s.Path)
	if err != nil {
		return nil, Classify(ClassConfig, err)
	}
	logOrDiscard(s.Log).Info("read snapshot", "file", s.Path, "taken_at", snap.TakenAt.Format(time.RFC3339), "offerings", len(snap.Offerings))
	return &snap.State, nil
}

// APISource reads the state of every configured offering from its Waldur API.
// It builds the offerings' clients at every Read, so that a rotated token
// file is picked up, and the order stage of the same run uses those clients.
type APISource struct {
	Offerings []config.Offering
	Log       *slog.Logger
	// Tune adjusts every client's options (tests shorten the retry waits).
	Tune func(*waldur.ClientOptions)

	clients map[string]*waldur.Client // of the latest Read, by offering name
}

// Read reads every offering in config order.
func (s *APISource) Read(ctx context.Context) (*waldur.State, error) {
	log := logOrDiscard(s.Log)
	s.clients = map[string]*waldur.Client{}
	st := &waldur.State{}
	for i := range s.Offerings {
		o := &s.Offerings[i]
		c, err := s.Client(o)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		ost, err := c.ReadOffering(ctx, o.Name, waldur.UUID(o.WaldurOfferingUUID))
		if err != nil {
			return nil, Classify(ClassWaldur, err)
		}
		log.Info("read Waldur offering", "offering", o.Name, "resources", len(ost.Resources), "orders", len(ost.Orders),
			"projects", len(ost.Teams), "offering_users", len(ost.OfferingUsers), "duration", time.Since(start).Round(time.Millisecond).String())
		st.Offerings = append(st.Offerings, *ost)
	}
	return st, nil
}

// Client is the Waldur client of an offering: the one the latest Read used,
// else a new one. A missing token or a bad URL is a config error.
func (s *APISource) Client(o *config.Offering) (*waldur.Client, error) {
	if c, ok := s.clients[o.Name]; ok {
		return c, nil
	}
	token, err := o.Token()
	if err != nil {
		return nil, Classify(ClassConfig, err)
	}
	opts := waldur.DefaultClientOptions()
	opts.BaseURL, opts.Token, opts.VerifySSL = o.WaldurAPIURL, token.Reveal(), o.VerifiesSSL()
	opts.UserAgent, opts.Logger = version.UserAgent(), logOrDiscard(s.Log).With("offering", o.Name)
	if s.Tune != nil {
		s.Tune(&opts)
	}
	c, err := waldur.NewClient(opts)
	if err != nil {
		return nil, Errorf(ClassConfig, "offering %s: %w", o.Name, err)
	}
	if s.clients == nil {
		s.clients = map[string]*waldur.Client{}
	}
	s.clients[o.Name] = c
	return c, nil
}

func logOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
