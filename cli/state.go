package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
)

// readState loads the Waldur state from a snapshot file, or else from the Waldur
// API of every configured offering.
func readState(ctx context.Context, cfg *config.Config, snapshot string, log *slog.Logger) (*waldur.State, error) {
	if snapshot != "" {
		s, err := waldur.LoadSnapshot(snapshot)
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		log.Info("read snapshot", "file", snapshot, "taken_at", s.TakenAt.Format(time.RFC3339), "offerings", len(s.Offerings))
		return &s.State, nil
	}
	st := &waldur.State{}
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		token, err := o.Token()
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		opts := waldur.DefaultClientOptions()
		opts.BaseURL, opts.Token, opts.VerifySSL = o.WaldurAPIURL, token.Reveal(), o.VerifiesSSL()
		opts.UserAgent, opts.Logger = version.UserAgent(), log.With("offering", o.Name)
		c, err := waldur.NewClient(opts)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("offering %s: %w", o.Name, err))
		}
		start := time.Now()
		ost, err := c.ReadOffering(ctx, o.Name, waldur.UUID(o.WaldurOfferingUUID))
		if err != nil {
			return nil, withCode(ExitWaldur, err)
		}
		log.Info("read Waldur offering", "offering", o.Name, "resources", len(ost.Resources), "orders", len(ost.Orders),
			"projects", len(ost.Teams), "offering_users", len(ost.OfferingUsers), "duration", time.Since(start).Round(time.Millisecond).String())
		st.Offerings = append(st.Offerings, *ost)
	}
	return st, nil
}
