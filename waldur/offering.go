package waldur

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Reader reads the Waldur state of one offering. *Client implements it; tests
// and snapshot replay can supply their own.
type Reader interface {
	ReadOffering(ctx context.Context, name string, offering UUID) (*OfferingState, error)
}

var _ Reader = (*Client)(nil)

// ReadOffering reads everything the renderer needs about one offering: first
// the offering itself, which must exist (*OfferingNotFoundError), then its
// resources, open orders, offering users, project service accounts, course
// accounts, the resources terminated within
// TerminatedWindow and the team of every project that has a resource. Teams
// are read once per project, through the project's first resource in
// (created, uuid) order (the next one when that resource's team answers 404).
// The lists are read concurrently, bounded by Concurrency.
//
// A record that cannot be used (it does not decode, a uuid in it is
// malformed, its team answers 404 through every resource of its project) is
// left out and listed in BadRecords; the rest is read as usual. Any failed
// call or inconsistent listing (*InconsistentListingError) fails the whole
// read: a partial state is never returned, because rendering it could delete
// tenants from Git.
func (c *Client) ReadOffering(ctx context.Context, name string, offering UUID) (*OfferingState, error) {
	id, err := canonical("offering", offering)
	if err != nil {
		return nil, fmt.Errorf("read offering %q: %w", name, err)
	}
	if err := c.CheckOffering(ctx, id); err != nil {
		return nil, fmt.Errorf("read offering %q: %w", name, err)
	}
	st := &OfferingState{Name: name, OfferingUUID: id}
	var badRes, badOrders, badUsers, badTerm, badTeams, badSA, badCA []BadRecord
	var terminated []UUID
	g := newGroup(ctx, 0)
	g.Go(func(ctx context.Context) error {
		res, bad, err := c.listResources(ctx, id)
		if err != nil {
			return fmt.Errorf("list resources of offering %s: %w", id, err)
		}
		badRes = bad
		// The Terminated listing follows the live one, so that a resource
		// terminated meanwhile is in at least one of them; teams are read
		// at the same time.
		tg := newGroup(ctx, 0)
		tg.Go(func(ctx context.Context) (err error) {
			var since time.Time
			if c.opts.TerminatedWindow > 0 {
				since = time.Now().Add(-c.opts.TerminatedWindow)
			}
			terminated, badTerm, err = c.listTerminated(ctx, id, since)
			if err != nil {
				return fmt.Errorf("list terminated resources of offering %s: %w", id, err)
			}
			return nil
		})
		tg.Go(func(ctx context.Context) (err error) {
			st.Resources, st.Teams, badTeams, err = c.readTeams(ctx, res)
			return err
		})
		return tg.Wait()
	})
	g.Go(func(ctx context.Context) (err error) {
		st.Orders, badOrders, err = c.listOrders(ctx, id)
		return err
	})
	g.Go(func(ctx context.Context) (err error) {
		st.OfferingUsers, badUsers, err = c.listOfferingUsers(ctx, id)
		return err
	})
	g.Go(func(ctx context.Context) (err error) {
		st.ServiceAccounts, badSA, err = c.serviceAccounts(ctx, id)
		return err
	})
	g.Go(func(ctx context.Context) (err error) {
		st.CourseAccounts, badCA, err = c.courseAccounts(ctx, id)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("read offering %q: %w", name, err)
	}
	if err := c.readPlanQuotas(ctx, st); err != nil {
		return nil, fmt.Errorf("read offering %q: %w", name, err)
	}
	live := map[UUID]bool{}
	for _, r := range st.Resources {
		live[r.UUID] = true
	}
	for _, b := range slices.Concat(badRes, badTeams) {
		if b.Kind == RecordResource && b.UUID != "" {
			live[b.UUID] = true
		}
	}
	for _, t := range terminated {
		if !live[t] {
			st.Terminated = append(st.Terminated, t)
		}
	}
	st.BadRecords = slices.Concat(badRes, badTeams, badOrders, badUsers, badSA, badCA, badTerm)
	if len(st.BadRecords) > 0 {
		c.log.Warn("waldur records skipped", "offering", name, "count", len(st.BadRecords), "records", badRecordsText(st.BadRecords))
	}
	return st, nil
}

// PlanlessUpdate reports whether o is an open (pending-provider or executing)
// Update order without limits, whose new limits are its plan's quotas.
func PlanlessUpdate(o *Order) bool {
	return o.Type == OrderUpdate && len(o.Limits) == 0 &&
		(o.State == OrderExecuting || o.State == OrderPendingProvider)
}

// readPlanQuotas reads the quotas of the plans that open Update orders without
// limits switch to (each plan once), into st.PlanQuotas. Nothing is read when
// no such order exists, which is the common case. A plan that answers 404 is
// left out (its orders then wait, see render); any other failure fails the
// read.
func (c *Client) readPlanQuotas(ctx context.Context, st *OfferingState) error {
	var plans []UUID
	for i := range st.Orders {
		o := &st.Orders[i]
		if PlanlessUpdate(o) && o.PlanUUID.Valid() && !slices.Contains(plans, o.PlanUUID) {
			plans = append(plans, o.PlanUUID)
		}
	}
	if len(plans) == 0 {
		return nil
	}
	slices.Sort(plans)
	quotas := make([]*Plan, len(plans))
	g := newGroup(ctx, c.opts.Concurrency)
	for i, id := range plans {
		g.Go(func(ctx context.Context) error {
			p, err := c.GetPlan(ctx, id)
			if IsNotFound(err) {
				c.log.Warn("waldur plan not found; its update orders wait", "plan", string(id))
				return nil
			}
			quotas[i] = p
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, id := range plans {
		if quotas[i] == nil {
			continue
		}
		if st.PlanQuotas == nil {
			st.PlanQuotas = map[UUID]Limits{}
		}
		q := quotas[i].Quotas
		if q == nil {
			q = Limits{}
		}
		st.PlanQuotas[id] = q
	}
	return nil
}

// readTeams fetches the team of each project once, through the project's first
// resource in the given (sorted) order. A team that answers 404 (the resource
// was deleted after it was listed) is read through the project's next
// resource; the resources whose team could not be read are left out of the
// returned resources and reported as bad records.
func (c *Client) readTeams(ctx context.Context, resources []Resource) ([]Resource, map[UUID][]TeamMember, []BadRecord, error) {
	type job struct {
		project UUID
		via     []UUID // the project's resources, in order
	}
	var jobs []*job
	byProject := map[UUID]*job{}
	for _, r := range resources {
		if r.ProjectUUID == "" {
			continue
		}
		j := byProject[r.ProjectUUID]
		if j == nil {
			j = &job{project: r.ProjectUUID}
			byProject[r.ProjectUUID] = j
			jobs = append(jobs, j)
		}
		j.via = append(j.via, r.UUID)
	}
	type result struct {
		members []TeamMember
		bad     []BadRecord
		gone    []UUID // resources whose team answered 404
	}
	results := make([]result, len(jobs))
	g := newGroup(ctx, c.opts.Concurrency)
	for i, j := range jobs {
		g.Go(func(ctx context.Context) error {
			for _, r := range j.via {
				members, bad, err := c.team(ctx, r)
				if IsNotFound(err) {
					results[i].gone = append(results[i].gone, r)
					continue
				}
				if err != nil {
					return fmt.Errorf("read team of resource %s (project %s): %w", r, j.project, err)
				}
				results[i].members, results[i].bad = members, bad
				return nil
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, nil, err
	}
	teams := make(map[UUID][]TeamMember, len(jobs))
	gone := map[UUID]bool{}
	var bad []BadRecord
	for i, j := range jobs {
		res := results[i]
		bad = append(bad, res.bad...)
		if res.members == nil && len(res.gone) == len(j.via) {
			// Every resource of the project answered 404: skip them all.
			for _, r := range res.gone {
				gone[r] = true
				bad = append(bad, BadRecord{Kind: RecordResource, UUID: r, Key: "team",
					Reason: fmt.Sprintf("key team: GET marketplace-provider-resources/%s/team/ answered 404 (deleted after it was listed?); its tenant is kept as it is", r)})
			}
			continue
		}
		if res.members == nil {
			res.members = []TeamMember{}
		}
		teams[j.project] = res.members
	}
	kept := resources
	if len(gone) > 0 {
		kept = slices.DeleteFunc(slices.Clone(resources), func(r Resource) bool { return gone[r.UUID] })
	}
	return kept, teams, bad, nil
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

// RefreshAccounts reads the project service accounts and course accounts of
// st's offering again, as ReadOffering reads them, and puts them in st in
// place of those it holds, with the records of theirs it reported as bad:
// an event run's refresh, so that an account event reaches the tenants of
// its project. st is unchanged when a read fails.
func (c *Client) RefreshAccounts(ctx context.Context, st *OfferingState) error {
	sa, badSA, err := c.serviceAccounts(ctx, st.OfferingUUID)
	if err != nil {
		return err
	}
	ca, badCA, err := c.courseAccounts(ctx, st.OfferingUUID)
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(slices.Clone(st.BadRecords), func(b BadRecord) bool {
		return b.Kind == RecordServiceAccount || b.Kind == RecordCourseAccount
	})
	st.ServiceAccounts, st.CourseAccounts, st.BadRecords = sa, ca, slices.Concat(kept, badSA, badCA)
	return nil
}
