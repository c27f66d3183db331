package usage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/usage"
	"github.com/waldur/waldur-gitops/waldur"
)

func TestSnapshotWaldur(t *testing.T) {
	snap := &waldur.Snapshot{State: waldur.State{Offerings: []waldur.OfferingState{{
		Name: "A", OfferingUUID: "41e0012c52dd79ad2bebfde833ef9fe7",
		Resources: []waldur.Resource{{UUID: "3cfe5210e4db306c7aabcd8103b2ad22", Name: "r"}},
	}}}}
	ctx := context.Background()
	w, err := usage.FromSnapshot(snap, "s.json", "A")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		uuid    waldur.UUID
		want    int
		wantErr string
	}{
		{"hex", "41e0012c52dd79ad2bebfde833ef9fe7", 1, ""},
		{"dashed, as a config may write it", "41e0012c-52dd-79ad-2beb-fde833ef9fe7", 1, ""},
		{"another offering", "66c0217f031fec833da0e057be1c007e", 0, "the config names 66c0217f031fec833da0e057be1c007e"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := w.ListResources(ctx, tc.uuid)
			if len(rs) != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("%d resources, error %v", len(rs), err)
			}
		})
	}
	if err := w.SetUsage(ctx, waldur.UsageReport{}); !errors.Is(err, usage.ErrSnapshotReadOnly) {
		t.Errorf("SetUsage: %v", err)
	}
	if _, err := usage.FromSnapshot(snap, "s.json", "B"); err == nil || !strings.Contains(err.Error(), "offering B is not in snapshot s.json") {
		t.Errorf("missing offering: %v", err)
	}
}
