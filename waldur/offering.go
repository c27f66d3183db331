package waldur

import (
	"context"
	"fmt"
	"sync"
)

// Reader reads the Waldur state of one offering. *Client implements it; tests
// and snapshot replay can supply their own.
type Reader interface {
	ReadOffering(ctx context.Context, name string, offering UUID) (*OfferingState, error)
}

var _ Reader = (*Client)(nil)

// ReadOffering reads everything the renderer needs about one offering: its
// resources, open orders, offering users and the team of every project that has
// a resource. Teams are read once per project, through the project's first
// resource in (created, uuid) order. The lists are read concurrently, bounded by
// Concurrency. Any failed call fails the whole read: a partial state is never
// returned, because rendering it could delete tenants from Git.
func (c *Client) ReadOffering(ctx context.Context, name string, offering UUID) (*OfferingState, error) {
	id, err := canonical("offering", offering)
	if err != nil {
		return nil, fmt.Errorf("read offering %q: %w", name, err)
	}
	st := &OfferingState{Name: name, OfferingUUID: id}
	g := newGroup(ctx, 0)
	g.Go(func(ctx context.Context) error {
		res, err := c.ListResources(ctx, id)
		if err != nil {
			return err
		}
		st.Resources = res
		st.Teams, err = c.readTeams(ctx, res)
		return err
	})
	g.Go(func(ctx context.Context) (err error) {
		st.Orders, err = c.ListOrders(ctx, id)
		return err
	})
	g.Go(func(ctx context.Context) (err error) {
		st.OfferingUsers, err = c.ListOfferingUsers(ctx, id)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("read offering %q: %w", name, err)
	}
	return st, nil
}

// readTeams fetches the team of each project once, through the project's first
// resource in the given (sorted) order.
func (c *Client) readTeams(ctx context.Context, resources []Resource) (map[UUID][]TeamMember, error) {
	type job struct{ project, resource UUID }
	var jobs []job
	seen := map[UUID]bool{}
	for _, r := range resources {
		if r.ProjectUUID == "" || seen[r.ProjectUUID] {
			continue
		}
		seen[r.ProjectUUID] = true
		jobs = append(jobs, job{r.ProjectUUID, r.UUID})
	}
	teams := make([][]TeamMember, len(jobs))
	g := newGroup(ctx, c.opts.Concurrency)
	for i, j := range jobs {
		g.Go(func(ctx context.Context) (err error) {
			teams[i], err = c.Team(ctx, j.resource)
			if err != nil {
				return fmt.Errorf("project %s: %w", j.project, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make(map[UUID][]TeamMember, len(jobs))
	for i, j := range jobs {
		out[j.project] = teams[i]
	}
	return out, nil
}

// group runs functions concurrently, at most limit at a time (0: no limit); the
// first error cancels the others and is returned by Wait.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{}
	once   sync.Once
	err    error
}

func newGroup(ctx context.Context, limit int) *group {
	ctx, cancel := context.WithCancel(ctx)
	g := &group{ctx: ctx, cancel: cancel}
	if limit > 0 {
		g.slots = make(chan struct{}, limit)
	}
	return g
}

// Go runs fn in a new goroutine once a slot is free; it does not block.
func (g *group) Go(fn func(ctx context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if g.slots != nil {
			select {
			case g.slots <- struct{}{}:
				defer func() { <-g.slots }()
			case <-g.ctx.Done():
				g.fail(g.ctx.Err())
				return
			}
		}
		if err := g.ctx.Err(); err != nil {
			g.fail(err)
			return
		}
		if err := fn(g.ctx); err != nil {
			g.fail(err)
		}
	}()
}

func (g *group) fail(err error) {
	g.once.Do(func() {
		g.err = err
		g.cancel()
	})
}

// Wait waits for all functions and returns the first error.
func (g *group) Wait() error {
	g.wg.Wait()
	g.cancel()
	return g.err
}
