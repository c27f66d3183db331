package source

import (
	"context"
	"fmt"
	"slices"

	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/waldur"
)

// RefreshUsers reads the named offering users again into st, a state
// Refresh returned: one read per user and offering that lists it. A user
// Waldur no longer knows, or now restricted, leaves the offering's list, as
// the listing of a full read leaves it out. st's lists are copied before
// they change, so the last state Refresh started from stays as it was.
func (s *API) RefreshUsers(ctx context.Context, st *waldur.State, users []waldur.UUID) error {
	for i := range st.Offerings {
		ost := &st.Offerings[i]
		if !slices.ContainsFunc(ost.OfferingUsers, func(u waldur.OfferingUser) bool { return slices.Contains(users, u.UUID) }) {
			continue
		}
		o := s.offering(ost.Name)
		if o == nil {
			return failure.Errorf(failure.ClassConfig, "offering %q of the last state is no longer configured", ost.Name)
		}
		c, err := s.Client(o)
		if err != nil {
			return err
		}
		list := slices.Clone(ost.OfferingUsers)
		for _, id := range users {
			at := slices.IndexFunc(list, func(u waldur.OfferingUser) bool { return u.UUID == id })
			if at < 0 {
				continue
			}
			u, err := c.GetOfferingUser(ctx, id)
			switch {
			case waldur.IsNotFound(err) || err == nil && bool(u.IsRestricted):
				list = slices.Delete(list, at, at+1)
			case err != nil:
				return failure.Classify(failure.ClassWaldur, fmt.Errorf("refresh offering %q: %w", ost.Name, err))
			default:
				list[at] = *u
			}
		}
		ost.OfferingUsers = list
	}
	return nil
}
