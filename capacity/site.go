package capacity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/kube"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/waldur"
)

// NodeLister lists a cluster's Nodes; *kube.Reader is one.
type NodeLister interface {
	Nodes(ctx context.Context) ([]kube.Node, error)
}

// Site is the capacity of the configured pools, shared by the approve
// stage (Decide) and the capacity stage (Report) of each run: the Nodes of
// each cluster are listed once per run, at the first need.
type Site struct {
	Pools []*Pool
	// Kubeconfig, when set, replaces every pool's kubeconfig (apply
	// --kubeconfig: the tenants land on that cluster).
	Kubeconfig string
	// Open opens a cluster (nil: kube.Open).
	Open func(kube.Source) (NodeLister, error)
	Log  *slog.Logger

	mu  sync.Mutex
	run *runState
}

// runState is what one run has learnt: each cluster's Nodes and the
// accounts Decide left (with what waiting orders request).
type runState struct {
	nodes    map[kube.Source]*listing
	accounts map[string]*Account
}

// listing is one cluster's Node list, done once read.
type listing struct {
	done  chan struct{}
	nodes []kube.Node
	err   error
}

// FromConfig returns the Site of the offerings with a capacity section,
// nil when none has one; kubeconfig, when set, replaces the pools'.
func FromConfig(offerings []config.Offering, kubeconfig string, log *slog.Logger) *Site {
	pools := Pools(offerings)
	if len(pools) == 0 {
		return nil
	}
	return &Site{Pools: pools, Kubeconfig: kubeconfig, Log: log}
}

// state returns the run's state, starting one when fresh or none is open.
func (s *Site) state(fresh bool) *runState {
	if fresh || s.run == nil {
		s.run = &runState{nodes: map[kube.Source]*listing{}, accounts: map[string]*Account{}}
	}
	return s.run
}

// source is the cluster a pool's Nodes are read from.
func (s *Site) source(p *Pool) kube.Source {
	if s.Kubeconfig != "" {
		return kube.Source{Path: s.Kubeconfig}
	}
	path, ctx := p.Config.Cluster()
	return kube.Source{Path: path, Context: ctx}
}

// listing returns this run's Node list of a cluster, starting it in the
// background unless this run has. s.mu is held.
func (s *Site) listing(ctx context.Context, rs *runState, src kube.Source) *listing {
	l, ok := rs.nodes[src]
	if !ok {
		l = &listing{done: make(chan struct{})}
		rs.nodes[src] = l
		go func() {
			defer close(l.done)
			l.nodes, l.err = s.list(ctx, src)
		}()
	}
	return l
}

// account builds a pool's totals from its cluster's Nodes, waiting for
// this run's list. s.mu is held.
func (s *Site) account(ctx context.Context, rs *runState, p *Pool) *Account {
	if !p.Config.NeedsNodes() {
		return total(p, nil)
	}
	src := s.source(p)
	l := s.listing(ctx, rs, src)
	var nodes []kube.Node
	err := ctx.Err()
	select {
	case <-l.done:
		nodes, err = l.nodes, l.err
	case <-ctx.Done():
	}
	a := total(p, nodes)
	a.Cluster = src.String()
	if err != nil {
		a.Err = fmt.Errorf("cluster %s: %w", src, err)
	}
	return a
}

func (s *Site) list(ctx context.Context, src kube.Source) ([]kube.Node, error) {
	open := s.Open
	if open == nil {
		open = func(src kube.Source) (NodeLister, error) { return kube.Open(src) }
	}
	r, err := open(src)
	if err != nil {
		return nil, err
	}
	return r.Nodes(ctx)
}

// Begin starts a run: each cluster's Nodes are listed once, in the
// background from now on (so the list overlaps the render), and nothing a
// run cut short left is reported. ctx is the run's.
func (s *Site) Begin(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.state(true)
	for _, p := range s.Pools {
		if p.Config.NeedsNodes() {
			s.listing(ctx, rs, s.source(p))
		}
	}
}

// Decide says, for each order of an offering that draws from a pool,
// whether capacity lets it through (orders of other offerings get no
// verdict), with the Nodes this run has listed. probe is the render with every
// pending order executing; baseline renders the state before any approval
// and is called only when some pool has orders. The error, a contained
// cluster failure, names every pool whose cluster could not be read: its
// orders wait, the others are decided.
func (s *Site) Decide(ctx context.Context, orders []Order, probe *render.Result, baseline func() (*render.Result, error), now time.Time) (map[waldur.UUID]Verdict, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.state(false)
	byPool := map[*Pool][]Order{}
	for _, o := range orders {
		for _, p := range s.Pools {
			if p.Has(o.Offering) {
				byPool[p] = append(byPool[p], o)
			}
		}
	}
	if len(byPool) == 0 {
		return nil, nil
	}
	base, err := baseline()
	if err != nil {
		return nil, fmt.Errorf("render before approval, for capacity: %w", err)
	}
	out := map[waldur.UUID]Verdict{}
	var unread []error
	for _, p := range s.Pools {
		if len(byPool[p]) == 0 {
			continue
		}
		a := s.account(ctx, rs, p)
		for id, v := range decide(p, a, base, probe, byPool[p], now) {
			out[id] = v
		}
		rs.accounts[p.Name] = a
		if a.Err != nil {
			unread = append(unread, fmt.Errorf("capacity pool %s: %w", p.Name, a.Err))
		}
	}
	return out, unreadable(unread)
}

// unreadable makes the pools that could not be read a contained cluster
// failure: the run goes on, and exits with the cluster failure's code.
func unreadable(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return failure.Contained(failure.Classify(failure.ClassCluster, errors.Join(errs...)))
}

// Report is the capacity stage: every pool's account after the render res
// (what is committed once this run's approvals are rendered), with what
// the orders Decide left waiting request. It ends the run's state. The
// entries are one per pool and resource; an unreadable pool is a skipped
// entry and a contained cluster failure.
func (s *Site) Report(ctx context.Context, res *render.Result) (changeset.Result, []report.PoolLine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.state(false)
	defer func() { s.run = nil }()
	var cs changeset.Set
	var lines []report.PoolLine
	var unread []error
	for _, p := range s.Pools {
		a := s.account(ctx, rs, p)
		if a.Err != nil {
			unread = append(unread, fmt.Errorf("capacity pool %s: %w", p.Name, a.Err))
			cs.Add(changeset.Entry{Stage: Stage, Kind: EntryKind, Subject: p.Name, Action: changeset.Skip,
				Reason: "capacity unknown: " + a.Err.Error(), Cause: changeset.CauseCapacityUnknown})
			lines = append(lines, report.PoolLine{Pool: p.Name, Cluster: a.Cluster, Error: redact.String(a.Err.Error())})
			continue
		}
		a.committed(p, res)
		for _, l := range sortedLines(a) {
			if d := rs.accounts[p.Name]; d != nil {
				l.Waiting = d.line(l.Resource).Waiting
			}
			cs.Add(changeset.Entry{Stage: Stage, Kind: EntryKind, Subject: p.Name + " " + l.Resource, Action: changeset.Unchanged, Reason: l.String()})
			lines = append(lines, report.PoolLine{Pool: p.Name, Cluster: a.Cluster, Nodes: a.Nodes, Resource: l.Resource,
				Allocatable: l.Allocatable, Overcommit: l.Overcommit, Committed: l.Committed, Waiting: l.Waiting, Free: l.Free()})
		}
	}
	cs.Sort()
	return changeset.Result{Changes: cs}, lines, unreadable(unread)
}
