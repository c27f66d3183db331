package waldur

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// SnapshotFormat identifies the snapshot file format.
const SnapshotFormat = "waldur-gitops/snapshot/v1"

// Snapshot is a recorded Waldur state with where it came from.
type Snapshot struct {
	Format string `json:"format"`
	// ToolVersion is the waldur-gitops version that recorded it.
	ToolVersion string `json:"tool_version,omitempty"`
	// TakenAt is when it was recorded; rendering ignores it.
	TakenAt time.Time `json:"taken_at"`
	State
}

// WriteSnapshot writes s as indented JSON.
func WriteSnapshot(w io.Writer, s *Snapshot) error {
	s.Format = SnapshotFormat
	for i := range s.Offerings {
		if s.Offerings[i].Teams == nil {
			s.Offerings[i].Teams = map[UUID][]TeamMember{}
		}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadSnapshot decodes a snapshot and checks its format.
func ReadSnapshot(r io.Reader) (*Snapshot, error) {
	var s Snapshot
	dec := json.NewDecoder(r)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	if s.Format != SnapshotFormat {
		return nil, fmt.Errorf("unsupported snapshot format %q (want %q)", s.Format, SnapshotFormat)
	}
	return &s, nil
}

// LoadSnapshot reads a snapshot file.
func LoadSnapshot(path string) (*Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	s, err := ReadSnapshot(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
