package status

import (
	"sync"

	"github.com/waldur/waldur-gitops/report"
)

// Kept is how many runs serve keeps in memory for its status page.
const Kept = 50

// Record is one finished run as the status page keeps it.
type Record struct {
	// ID numbers the runs of one process from 1; 0 for a report read from a file.
	ID     int
	Report *report.Run
	// Backends maps each offering's directory (config.Offering.DirName) to
	// its backend_type, as the run's config had them.
	Backends map[string]string
	// CommitURL is serve.commit_url of the run's config ("" for no links).
	CommitURL string
}

// History keeps the last runs. It is safe for concurrent use.
type History struct {
	mu   sync.Mutex
	max  int
	next int
	recs []Record // oldest first
}

// NewHistory keeps the last max runs (Kept when max is not above 0).
func NewHistory(max int) *History {
	if max <= 0 {
		max = Kept
	}
	return &History{max: max}
}

// Add keeps r under the next ID, dropping the oldest run beyond the limit,
// and returns the ID.
func (h *History) Add(r Record) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	r.ID = h.next
	h.recs = append(h.recs, r)
	if len(h.recs) > h.max {
		h.recs = append([]Record(nil), h.recs[len(h.recs)-h.max:]...)
	}
	return r.ID
}

// Records returns the runs kept, newest first.
func (h *History) Records() []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Record, len(h.recs))
	for i, r := range h.recs {
		out[len(h.recs)-1-i] = r
	}
	return out
}

// Get returns the run with id, if it is still kept.
func (h *History) Get(id int) (Record, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.recs {
		if r.ID == id {
			return r, true
		}
	}
	return Record{}, false
}
