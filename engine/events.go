package engine

import (
	"context"

	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/waldur"
)

// EventRequest is the run a trigger asks for, given the engine's last run:
// what the trigger reaches in the last state (events.Trigger.Reach),
// refreshed into it, with the named offering users read again too; a full
// run (Request.Full says why) when the trigger asks for one, there is no
// last state, or Reach cannot tell. ok is false when there is nothing to do.
func EventRequest(t events.Trigger, last *Outcome) (req Request, ok bool) {
	req = Request{Command: "serve"}
	if !t.Full && (last == nil || last.State == nil) {
		req.Full = events.FullNoLastRun
		return req, true
	}
	var st *waldur.State
	if last != nil {
		st = last.State
	}
	req.Resources, req.Full, ok = t.Reach(st)
	if ok && req.Full == "" {
		req.OfferingUsers = t.OfferingUsers
	}
	return req, ok
}

// read is the waldur stage's read: the resources and offering users req
// names, read again into the last run's state when the source can, else
// everything; an event run that reads everything says why at debug level.
func (e *Engine) read(ctx context.Context, req Request) (*waldur.State, error) {
	r, refresh := e.seams.Source.(Refresher)
	switch {
	case req.Full != "":
	case !refresh || len(req.Resources) == 0 || e.last == nil || e.last.State == nil:
		if len(req.Resources) > 0 {
			req.Full = events.FullNoLastRun
		}
	default:
		st, err := r.Refresh(ctx, e.last.State, req.Resources)
		if err == nil && len(req.OfferingUsers) > 0 {
			err = r.RefreshUsers(ctx, st, req.OfferingUsers)
		}
		return st, err
	}
	if req.Full != "" {
		e.log.Debug("an event run reads and renders in full", "cause", string(req.Full))
	}
	return e.seams.Source.Read(ctx)
}
