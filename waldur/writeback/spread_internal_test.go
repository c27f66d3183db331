package writeback

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/waldur"
)

// TestParallelWrites: the writes go out Writers at a time — all Writers of
// them are in flight together, never more — and one resource's writes one
// after the other, in order.
func TestParallelWrites(t *testing.T) {
	for _, writers := range []int{1, 3, 8} {
		t.Run(fmt.Sprint(writers), func(t *testing.T) {
			var mu sync.Mutex
			inFlight, peak := 0, 0
			busy := map[string]bool{}
			var order []string
			full := make(chan struct{})
			var once sync.Once
			var ws []*write
			for i := range 24 {
				res := fmt.Sprintf("r%02d", i/2) // two writes per resource
				ws = append(ws, &write{entry: changeset.Entry{Resource: res, Subject: fmt.Sprint(i)}, send: func() error {
					mu.Lock()
					if busy[res] {
						mu.Unlock()
						return fmt.Errorf("two writes of %s at once", res)
					}
					busy[res] = true
					order = append(order, fmt.Sprint(i))
					inFlight++
					peak = max(peak, inFlight)
					if inFlight == writers {
						once.Do(func() { close(full) })
					}
					mu.Unlock()
					select {
					case <-full:
					case <-time.After(10 * time.Second):
					}
					mu.Lock()
					inFlight--
					busy[res] = false
					mu.Unlock()
					return nil
				}})
			}
			f := &ResourceFeedback{Writers: writers}
			var cs changeset.Set
			calls := map[string]int{}
			if err := f.send(context.Background(), ws, false, &cs, calls); err != nil {
				t.Fatal(err)
			}
			select {
			case <-full:
			default:
				t.Fatalf("never %d writes in flight at once (peak %d)", writers, peak)
			}
			if peak > writers {
				t.Errorf("%d writes in flight, over %d", peak, writers)
			}
			pos := map[string]int{}
			for i, s := range order {
				pos[s] = i
			}
			for i := 0; i < 24; i += 2 {
				if pos[fmt.Sprint(i)] > pos[fmt.Sprint(i+1)] {
					t.Errorf("write %d of a resource went out before write %d", i+1, i)
				}
			}
			for i, e := range cs.Entries {
				if e.Subject != fmt.Sprint(i) {
					t.Fatalf("entry %d is %q: entries out of order", i, e.Subject)
				}
			}
		})
	}
}

// TestLastSyncSpread: after an outage that left every resource overdue,
// refresh_last_sync is spread over runs within the budget, the most
// overdue first; resources synced together fall due over the last quarter
// of the interval, each always at the same point.
func TestLastSyncSpread(t *testing.T) {
	const interval, run = time.Hour, 15 * time.Minute
	f := &ResourceFeedback{LastSyncInterval: interval, RunInterval: run}
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var due []lastSyncDue
	var ws []*write
	for i := range 400 {
		r := &waldur.Resource{UUID: waldur.UUID(fmt.Sprintf("%032x", i)), LastSync: t0.Add(-2*time.Hour - time.Duration(i)*time.Second).Format(time.RFC3339)}
		over, ok := f.lastSyncDue(r, t0)
		if !ok {
			t.Fatalf("%s is two hours old and not due", r.UUID)
		}
		w := &write{entry: changeset.Entry{Resource: string(r.UUID)}}
		ws = append(ws, w)
		due = append(due, lastSyncDue{w: w, over: over})
	}
	all := slices.Clone(ws)
	kept := f.budgetLastSync(ws, due, 400)
	if len(kept) != 100 {
		t.Fatalf("one run sends %d of 400 overdue refreshes, want the budget of 100", len(kept))
	}
	over := map[*write]time.Duration{}
	for _, d := range due {
		over[d.w] = d.over
	}
	sent := map[*write]bool{}
	least := time.Duration(1 << 62)
	for _, w := range kept {
		sent[w] = true
		least = min(least, over[w])
	}
	for _, w := range all {
		if !sent[w] && over[w] > least {
			t.Fatalf("%s, overdue by %s, waits while one overdue by %s is sent", w.entry.Resource, over[w], least)
		}
	}

	// Synced together at t0: none due before 45 minutes, all by the hour,
	// spread in between, and each resource on the same minute every time.
	firstDue := map[string]time.Duration{}
	for i := range 400 {
		r := &waldur.Resource{UUID: waldur.UUID(fmt.Sprintf("%032x", i)), LastSync: t0.Format(time.RFC3339)}
		for m := time.Duration(0); m <= interval; m += time.Minute {
			if _, ok := f.lastSyncDue(r, t0.Add(m)); ok {
				firstDue[string(r.UUID)] = m
				break
			}
		}
	}
	minutes := map[time.Duration]int{}
	for id, m := range firstDue {
		if m < 45*time.Minute || m > interval {
			t.Errorf("%s falls due after %s", id, m)
		}
		minutes[m]++
	}
	if len(firstDue) != 400 || len(minutes) < 10 {
		t.Errorf("%d resources fall due on %d distinct minutes: not spread", len(firstDue), len(minutes))
	}
	r := &waldur.Resource{UUID: "00000000000000000000000000000007", LastSync: t0.Format(time.RFC3339)}
	if _, ok := f.lastSyncDue(r, t0.Add(firstDue[string(r.UUID)])); !ok {
		t.Error("the same resource falls due at another point of the interval")
	}
	if _, ok := f.lastSyncDue(&waldur.Resource{UUID: "x"}, t0); !ok {
		t.Error("a resource Waldur never synced is not due")
	}
}

func TestLastSyncBudget(t *testing.T) {
	for _, tc := range []struct {
		n             int
		run, interval time.Duration
		want          int
	}{
		{10000, 15 * time.Minute, time.Hour, 2500},
		{3, 15 * time.Minute, time.Hour, 1},
		{0, 15 * time.Minute, time.Hour, 0},
		{10000, time.Minute, time.Hour, 167},
		{10, 2 * time.Hour, time.Hour, 10},
		{10, 0, 0, 3},
	} {
		t.Run(fmt.Sprint(tc.n, tc.run, tc.interval), func(t *testing.T) {
			if got := LastSyncBudget(tc.n, tc.run, tc.interval); got != tc.want {
				t.Errorf("LastSyncBudget = %d, want %d", got, tc.want)
			}
		})
	}
}
