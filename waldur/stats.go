package waldur

import (
	"maps"
	"sync"
)

// Call kinds used as keys of CallStats.
const (
	KindResourcesList     = "resources.list"
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
	KindVersion           = "version"
	KindUsagesList        = "usages.list"
	KindUsageSet          = "usages.set"
	KindOfferingGet       = "offerings.get"
	KindUserMe            = "users.me"
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
