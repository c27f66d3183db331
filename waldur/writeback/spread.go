package writeback

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/waldur"
)

// write is one write-back: its entry, the call kind it counts as, and the
// request. what names it in an error.
type write struct {
	entry changeset.Entry
	kind  string
	what  string
	send  func() error
	// sent, when set, runs once the request succeeded.
	sent func()
	err  error
}

// send makes the writes Writers at a time (none in a dry run) and adds
// their entries in order, a failed one as a skip with why. It returns the
// first failure in that order. The client honours 429 and Retry-After on
// each request.
func (f *ResourceFeedback) send(ctx context.Context, ws []*write, dryRun bool, cs *changeset.Set, calls map[string]int) error {
	if !dryRun {
		f.parallel(ctx, ws)
	}
	var first error
	for _, w := range ws {
		e := w.entry
		if !dryRun {
			calls[w.kind]++
			if w.err != nil {
				e.Action, e.Reason, e.Cause = changeset.Skip, "failed: "+w.err.Error(), changeset.CauseFeedbackFailed
				if first == nil {
					first = fmt.Errorf("%s: %w", w.what, w.err)
				}
			} else if w.sent != nil {
				w.sent()
			}
		}
		cs.Add(e)
	}
	return first
}

// parallel runs every write's request, Writers at a time. The writes of
// one resource go out one after the other, in their order (set_as_ok
// before the others); a cancelled context stops those not started.
func (f *ResourceFeedback) parallel(ctx context.Context, ws []*write) {
	n := f.Writers
	if n <= 0 {
		n = config.DefaultWriteConcurrency
	}
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, chain := range byResource(ws) {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			for _, w := range chain {
				if w.err = ctx.Err(); w.err == nil {
					w.err = w.send()
				}
			}
		}()
	}
	wg.Wait()
}

// byResource splits ws into runs of consecutive writes of the same resource.
func byResource(ws []*write) [][]*write {
	var out [][]*write
	for i, w := range ws {
		if i > 0 && w.entry.Resource == ws[i-1].entry.Resource {
			out[len(out)-1] = append(out[len(out)-1], w)
			continue
		}
		out = append(out, []*write{w})
	}
	return out
}

// lastSyncDue is a refresh_last_sync write that is due, and by how much it
// is overdue.
type lastSyncDue struct {
	w    *write
	over time.Duration
}

// lastSyncDue reports whether r's refresh_last_sync is due at now, and by
// how much. It falls due after the interval less a stable share of it
// (lastSyncJitter), so that resources synced together do not all fall due
// in the same run again; a last_sync Waldur never set or that does not
// parse is due at once, before any other.
func (f *ResourceFeedback) lastSyncDue(r *waldur.Resource, now time.Time) (time.Duration, bool) {
	interval := f.lastSyncInterval()
	t, err := time.Parse(time.RFC3339Nano, r.LastSync)
	if err != nil {
		return time.Duration(1<<62 - 1), true
	}
	over := now.Sub(t) - (interval - lastSyncJitter(r.UUID, interval))
	return over, over >= 0
}

func (f *ResourceFeedback) lastSyncInterval() time.Duration {
	if f.LastSyncInterval <= 0 {
		return config.DefaultLastSyncInterval
	}
	return f.LastSyncInterval
}

// lastSyncJitter is a resource's stable share of a quarter of the
// interval: the same resource always falls due at the same point of it.
func lastSyncJitter(id waldur.UUID, interval time.Duration) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return time.Duration(uint64(interval/4) * uint64(h.Sum32()%1024) / 1024)
}

// LastSyncBudget is how many refresh_last_sync writes one run of an
// offering with resources resources may send: resources × run ÷ interval,
// rounded up, so that every resource is refreshed once an interval and a
// backlog (after an outage, or the first run) is spread over runs.
func LastSyncBudget(resources int, run, interval time.Duration) int {
	if run <= 0 {
		run = config.DefaultRunInterval
	}
	if interval <= 0 {
		interval = config.DefaultLastSyncInterval
	}
	if run >= interval {
		return resources
	}
	return int((int64(resources)*int64(run) + int64(interval) - 1) / int64(interval))
}

// budgetLastSync keeps of ws the refresh_last_sync writes of due that fit
// the run's budget, the most overdue first; the others wait for a later
// run.
func (f *ResourceFeedback) budgetLastSync(ws []*write, due []lastSyncDue, resources int) []*write {
	budget := LastSyncBudget(resources, f.RunInterval, f.lastSyncInterval())
	if len(due) <= budget {
		return ws
	}
	slices.SortStableFunc(due, func(a, b lastSyncDue) int {
		return cmp.Or(cmp.Compare(b.over, a.over), cmp.Compare(a.w.entry.Resource, b.w.entry.Resource))
	})
	drop := map[*write]bool{}
	for _, d := range due[budget:] {
		drop[d.w] = true
	}
	if f.Log != nil {
		f.Log.Debug("refresh_last_sync spread over runs", "due", len(due), "sent", budget)
	}
	return slices.DeleteFunc(ws, func(w *write) bool { return drop[w] })
}
