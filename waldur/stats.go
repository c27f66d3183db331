package waldur

import (
	"context"
	"maps"
	"sync"
)

// Call kinds used as keys of CallStats.
const (
	KindResourcesList     = "resources.list"
	KindTerminatedList    = "resources.list_terminated"
	KindResourceGet       = "resources.get"
	KindResourceBackendID = "resources.set_backend_id"
	KindOrdersList        = "orders.list"
	KindOrderGet          = "orders.get"
	KindOrderApprove      = "orders.approve"
	KindOrderReject       = "orders.reject"
	KindOrderDone         = "orders.set_done"
	KindOrderErred        = "orders.set_erred"
	KindTeam              = "team"
	KindOfferingUsersList = "offering_users.list"
	KindServiceAccounts   = "service_accounts.list"
	KindCourseAccounts    = "course_accounts.list"
	KindVersion           = "version"
	KindUsagesList        = "usages.list"
	KindUsageSet          = "usages.set"
	KindOfferingGet       = "offerings.get"
	KindUserMe            = "users.me"
	KindPlanGet           = "plans.get"
	KindResourceLimits    = "resources.set_limits"
	KindResourceOK        = "resources.set_as_ok"
	KindResourceErred     = "resources.set_as_erred"
	KindResourceMetadata  = "resources.set_backend_metadata"
	KindResourceLastSync  = "resources.refresh_last_sync"
	KindMembershipStatus  = "resources.set_membership_sync_statuses"
	KindAgentList         = "agent_identities.list"
	KindAgentCreate       = "agent_identities.create"
	KindAgentUpdate       = "agent_identities.update"
	KindAgentService      = "agent_identities.register_service"
	KindAgentProcessor    = "agent_services.register_processor"
	KindAgentQueue        = "agent_identities.register_queue"
	KindAgentSubscription = "agent_identities.register_event_subscription"
	KindEventQueue        = "event_subscriptions.create_queue"
)

// CallStats counts the API traffic of a client, for the run report.
type CallStats struct {
	// Requests is the number of HTTP requests sent per call kind, retries included.
	Requests map[string]int `json:"requests"`
	// Retries is the number of repeated attempts per call kind.
	Retries map[string]int `json:"retries,omitempty"`
	// Errors is the number of calls per kind that finally failed with a transport
	// error or a non-2xx answer.
	Errors map[string]int `json:"errors,omitempty"`
}

// TotalRequests is the number of HTTP requests sent.
func (s CallStats) TotalRequests() int { return sum(s.Requests) }

// TotalRetries is the number of repeated attempts.
func (s CallStats) TotalRetries() int { return sum(s.Retries) }

// TotalErrors is the number of failed calls.
func (s CallStats) TotalErrors() int { return sum(s.Errors) }

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Stats returns a copy of the counters collected so far.
func (c *Client) Stats() CallStats { return c.stats.snapshot() }

type statsRecorder struct {
	mu                        sync.Mutex
	requests, retries, errors map[string]int
}

func newStatsRecorder() *statsRecorder {
	return &statsRecorder{requests: map[string]int{}, retries: map[string]int{}, errors: map[string]int{}}
}

func (r *statsRecorder) add(m map[string]int, kind string) {
	r.mu.Lock()
	m[kind]++
	r.mu.Unlock()
}

func (r *statsRecorder) attempt(kind string) { r.add(r.requests, kind) }
func (r *statsRecorder) retry(kind string)   { r.add(r.retries, kind) }
func (r *statsRecorder) failed(kind string)  { r.add(r.errors, kind) }

func (r *statsRecorder) snapshot() CallStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return CallStats{Requests: maps.Clone(r.requests), Retries: maps.Clone(r.retries), Errors: maps.Clone(r.errors)}
}

// Tally adds up the call statistics of every client that works under a
// context made by WithTally, so that a run which builds several clients (one
// per offering and stage) can report its whole Waldur traffic. It is safe for
// concurrent use.
type Tally struct{ rec *statsRecorder }

type tallyKey struct{}

// WithTally returns a context whose Waldur calls are also counted in a new
// Tally, and that Tally.
func WithTally(ctx context.Context) (context.Context, *Tally) {
	t := &Tally{rec: newStatsRecorder()}
	return context.WithValue(ctx, tallyKey{}, t), t
}

// Stats returns a copy of the counters collected so far; the zero CallStats
// (empty maps) for a nil Tally.
func (t *Tally) Stats() CallStats {
	if t == nil {
		return newStatsRecorder().snapshot()
	}
	return t.rec.snapshot()
}

// tallyOf is the Tally of ctx, nil when there is none.
func tallyOf(ctx context.Context) *statsRecorder {
	if t, ok := ctx.Value(tallyKey{}).(*Tally); ok {
		return t.rec
	}
	return nil
}

// count records one event with add on the client's recorder and on the
// context's Tally, if any.
func (c *Client) count(ctx context.Context, add func(*statsRecorder, string), kind string) {
	add(c.stats, kind)
	if t := tallyOf(ctx); t != nil {
		add(t, kind)
	}
}
