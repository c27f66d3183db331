package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/orders"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// The order steps of sync. They are plain functions of what the sync run
// holds, so that sync.go wires each with one line:
//
//	before render:  approveOrders(ctx, cfg, log, state, dryRun)
//	after the push: finishOrders(ctx, cfg, log, state, result, pushedTree, dryRun)
//
// Both must be skipped when the state comes from a snapshot: a recorded state
// says nothing about the orders Waldur has now.

// tuneWaldurClient adjusts the options of the clients newWaldurClient builds;
// tests shorten the retry waits with it.
var tuneWaldurClient = func(*waldur.ClientOptions) {}

// newWaldurClient builds the Waldur client of an offering as readState does.
func newWaldurClient(o *config.Offering, log *slog.Logger) (*waldur.Client, error) {
	token, err := o.Token()
	if err != nil {
		return nil, err
	}
	opts := waldur.DefaultClientOptions()
	opts.BaseURL, opts.Token, opts.VerifySSL = o.WaldurAPIURL, token.Reveal(), o.VerifiesSSL()
	opts.UserAgent, opts.Logger = version.UserAgent(), log.With("offering", o.Name)
	tuneWaldurClient(&opts)
	c, err := waldur.NewClient(opts)
	if err != nil {
		return nil, fmt.Errorf("offering %s: %w", o.Name, err)
	}
	return c, nil
}

// newOrderStage builds the order stage of every offering: its Waldur client
// and, when clusters is set and the offering has order_done_on: applied, a
// reader of its (downstream) cluster.
func newOrderStage(cfg *config.Config, log *slog.Logger, dryRun, clusters bool) (*orders.Stage, error) {
	s := &orders.Stage{DryRun: dryRun, Log: log}
	for i := range cfg.Offerings {
		o := &cfg.Offerings[i]
		c, err := newWaldurClient(o, log)
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		var cluster orders.Cluster
		if clusters && o.OrderDoneOn == config.DoneOnApplied {
			cs := o.Settings.Common()
			src := kube.Source{Path: cs.KubeconfigPath, Context: cs.KubeconfigContext}
			r, err := kube.Open(src)
			if err != nil {
				return nil, withCode(ExitUsage, fmt.Errorf("offering %s: order_done_on applied: %w", o.Name, err))
			}
			cluster = r
		}
		s.Offerings = append(s.Offerings, orders.OfferingFromConfig(o, c, cluster))
	}
	return s, nil
}

// approveOrders is the sync step before the render that is committed: it
// approves (or rejects) the pending-provider orders and updates st in place.
// It fails only when the setup or the probe render fails; a failed transition
// is an entry with action skip.
func approveOrders(ctx context.Context, cfg *config.Config, log *slog.Logger, st *waldur.State, dryRun bool) (changeset.Set, map[string]int, error) {
	s, err := newOrderStage(cfg, log, dryRun, false)
	if err != nil {
		return changeset.Set{}, nil, err
	}
	tpls, err := render.LoadTemplates(cfg)
	if err != nil {
		return changeset.Set{}, nil, withCode(ExitUsage, err)
	}
	rdr := render.New(cfg, tpls)
	cs, calls, err := s.Approve(ctx, st, rdr.Render)
	if err != nil {
		return cs, calls, withCode(ExitRender, err)
	}
	return cs, calls, nil
}

// finishOrders is the sync step after a successful push: pushed is the owned
// directory as the remote branch now holds it. Failed transitions make it
// return an ExitWaldur error after every order was tried.
func finishOrders(ctx context.Context, cfg *config.Config, log *slog.Logger, st *waldur.State, res *render.Result, pushed render.Tree, dryRun bool) (changeset.Set, map[string]int, error) {
	if res == nil || pushed == nil {
		return changeset.Set{}, nil, withCode(ExitRender, errors.New("order feedback needs the render result and the pushed tree"))
	}
	s, err := newOrderStage(cfg, log, dryRun, !dryRun)
	if err != nil {
		return changeset.Set{}, nil, err
	}
	cs, calls, err := s.Finish(ctx, st, res, pushed)
	if err != nil {
		return cs, calls, withCode(ExitWaldur, err)
	}
	return cs, calls, nil
}
