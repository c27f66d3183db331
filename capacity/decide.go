package capacity

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
)

// Order is one pending-provider order as the decision sees it.
type Order struct {
	UUID, Resource waldur.UUID
	Offering       string
	Created        time.Time
	// Frees is set for a Terminate order: it frees what its tenant reserves.
	Frees bool
	// Auto is set when the order is approved if nothing stops it; without
	// it a person decides and the order is only flagged.
	Auto bool
}

// Verdict is what capacity says of one order.
type Verdict struct {
	// Fits is set when capacity lets the order through; otherwise Reason
	// says why it waits (or, with Reject, why it is rejected).
	Fits   bool
	Reject bool
	Reason string
	Cause  changeset.Cause
	// Note, for an order that fits, says which older order it goes ahead of.
	Note string
}

// reservations maps each resource of a pool to what its tenant reserves.
type reservations map[waldur.UUID]map[string]float64

func (p *Pool) reservations(res *render.Result) reservations {
	out := reservations{}
	if res == nil {
		return out
	}
	for _, t := range res.Tenants {
		if r := p.Reserved(t); r != nil {
			out[t.Resource] = r
		}
	}
	return out
}

// decide decides the orders of one pool (oldest first) against its
// account, which it updates: what the approved orders commit and what the
// waiting ones would add. baseline is the render of the state before any
// approval, probe the render with every pending order executing.
func decide(p *Pool, a *Account, baseline, probe *render.Result, orders []Order, now time.Time) map[waldur.UUID]Verdict {
	out := map[waldur.UUID]Verdict{}
	if a.Err != nil {
		for _, o := range orders {
			out[o.UUID] = Verdict{Reason: fmt.Sprintf("capacity of pool %s unknown, nothing in it is approved: %v", p.Name, a.Err), Cause: changeset.CauseCapacityUnknown}
		}
		return out
	}
	a.committed(p, baseline)
	before, after := p.reservations(baseline), p.reservations(probe)
	orders = slices.Clone(orders)
	slices.SortStableFunc(orders, func(x, y Order) int {
		return cmp.Or(x.Created.Compare(y.Created), cmp.Compare(x.UUID, y.UUID))
	})
	var grow []Order
	for _, o := range orders {
		d := delta(before[o.Resource], after[o.Resource], o.Frees)
		if !growing(d) {
			// Terminations and decreases always pass, and free what they free.
			out[o.UUID] = Verdict{Fits: true}
			if o.Auto {
				a.add(d, false)
			}
			continue
		}
		grow = append(grow, o)
	}
	var older, blocking *Order
	for i := range grow {
		o := &grow[i]
		d := delta(before[o.Resource], after[o.Resource], false)
		short := a.short(d)
		cfg := p.configOf(o.Offering)
		switch {
		case !o.Auto:
			v := Verdict{Fits: short == ""}
			if short != "" {
				v.Reason = "would oversell pool " + p.Name + ": " + short
			}
			out[o.UUID] = v
		case short == "" && blocking == nil:
			v := Verdict{Fits: true}
			if older != nil {
				v.Note = fmt.Sprintf("goes ahead of older order %s, which does not fit and has waited %s of max_bypass %s", older.UUID, waited(now, older.Created), cfg.Bypass())
			}
			out[o.UUID] = v
			a.add(d, false)
		case short == "":
			out[o.UUID] = Verdict{Reason: fmt.Sprintf("waits behind older order %s of pool %s, which has waited longer than max_bypass %s for capacity", blocking.UUID, p.Name, p.configOf(blocking.Offering).Bypass()), Cause: changeset.CauseCapacityExceeded}
			a.add(d, true)
		default:
			v := Verdict{Reason: "would oversell pool " + p.Name + ": " + short, Cause: changeset.CauseCapacityExceeded}
			if cfg.OnExceeded == config.CapacityReject {
				v.Reject = true
				out[o.UUID] = v
				continue
			}
			out[o.UUID] = v
			a.add(d, true)
			older = cmp.Or(older, o)
			if blocking == nil && now.Sub(o.Created) >= cfg.Bypass() {
				blocking = o
			}
		}
	}
	return out
}

// configOf returns the capacity section of one of the pool's offerings.
func (p *Pool) configOf(offering string) *config.Capacity {
	if c := p.configs[offering]; c != nil {
		return c
	}
	return p.Config
}

func waited(now, since time.Time) time.Duration { return now.Sub(since).Round(time.Minute) }

// delta is what an order adds to each resource: the tenant after it less
// the tenant before it (less everything, for a termination).
func delta(before, after map[string]float64, frees bool) map[string]float64 {
	out := map[string]float64{}
	if frees {
		for r, v := range before {
			out[r] = -v
		}
		return out
	}
	for r, v := range after {
		out[r] = v - before[r]
	}
	for r, v := range before {
		if _, ok := after[r]; !ok {
			out[r] = -v
		}
	}
	return out
}

// growing reports whether d adds to some resource.
func growing(d map[string]float64) bool {
	for _, v := range d {
		if v > 0 {
			return true
		}
	}
	return false
}

// add counts d as committed (or, waiting, as requested by waiting orders).
func (a *Account) add(d map[string]float64, waiting bool) {
	for r, v := range d {
		l := a.line(r)
		switch {
		case l == nil:
		case waiting && v > 0:
			l.Waiting += v
		case !waiting:
			l.Committed += v
		}
	}
}

// short says which resources d would take past what may be sold, with the
// request and what is free; "" when it fits.
func (a *Account) short(d map[string]float64) string {
	var parts []string
	for _, l := range sortedLines(a) {
		v := d[l.Resource]
		if v <= 0 || l.Committed+v <= l.Sellable()*(1+1e-9) {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s requested %s, %s free of %s (allocatable %s × overcommit %s, committed %s)",
			l.Resource, Format(l.Resource, v), Format(l.Resource, l.Free()), Format(l.Resource, l.Sellable()),
			Format(l.Resource, l.Allocatable), trimRatio(l.Overcommit), Format(l.Resource, l.Committed)))
	}
	return strings.Join(parts, "; ")
}
