package usage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/waldur/waldur-gitops/waldur"
)

// ErrSnapshotReadOnly is returned by SetUsage of a snapshot: a recorded state
// can show what would be posted, never post it.
var ErrSnapshotReadOnly = errors.New("usage is not posted from a snapshot: a recorded state serves dry runs only")

// SnapshotWaldur is the Waldur of one offering as a snapshot recorded it, for
// report --snapshot --dry-run: its resources and open orders as recorded, and
// no usage record (a snapshot holds none), so the plan shows what a first
// report of the month would post.
type SnapshotWaldur struct {
	Offering *waldur.OfferingState
}

var _ Waldur = SnapshotWaldur{}

// FromSnapshot returns the recorded Waldur of the offering named name (its
// config name, the snapshot's key); an offering the snapshot lacks is an
// error naming it and the file.
func FromSnapshot(snap *waldur.Snapshot, file, name string) (SnapshotWaldur, error) {
	o, ok := snap.Offering(name)
	if !ok {
		return SnapshotWaldur{}, fmt.Errorf("offering %s is not in snapshot %s (record it again with waldur-gitops snapshot)", name, file)
	}
	return SnapshotWaldur{Offering: o}, nil
}

// ListResources returns the recorded resources of the offering.
func (s SnapshotWaldur) ListResources(_ context.Context, offering waldur.UUID) ([]waldur.Resource, error) {
	if err := s.check(offering); err != nil {
		return nil, err
	}
	return append([]waldur.Resource(nil), s.Offering.Resources...), nil
}

// ListOrders returns the recorded open orders of the offering.
func (s SnapshotWaldur) ListOrders(_ context.Context, offering waldur.UUID) ([]waldur.Order, error) {
	if err := s.check(offering); err != nil {
		return nil, err
	}
	return append([]waldur.Order(nil), s.Offering.Orders...), nil
}

// ListComponentUsages returns no record: a snapshot holds none.
func (s SnapshotWaldur) ListComponentUsages(context.Context, waldur.UsageFilter) ([]waldur.ComponentUsage, error) {
	return nil, nil
}

// SetUsage always fails with ErrSnapshotReadOnly.
func (s SnapshotWaldur) SetUsage(context.Context, waldur.UsageReport) error {
	return ErrSnapshotReadOnly
}

// check refuses a read of another offering than the recorded one.
func (s SnapshotWaldur) check(offering waldur.UUID) error {
	if norm(s.Offering.OfferingUUID) != norm(offering) {
		return fmt.Errorf("offering %s: the snapshot recorded offering %s under this name, the config names %s", s.Offering.Name, s.Offering.OfferingUUID, offering)
	}
	return nil
}

// norm is a UUID without dashes, in lower case, for comparing the config's
// form with the snapshot's.
func norm(u waldur.UUID) string { return strings.ToLower(strings.ReplaceAll(string(u), "-", "")) }
