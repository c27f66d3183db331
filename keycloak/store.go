package keycloak

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/waldur/waldur-gitops/internal/atomicfile"
)

// Store keeps a Memory's encoded state between processes: a file, a ref of
// the GitOps repository, Kubernetes objects. What a store holds is untrusted
// (others may write there): a Memory checks it when it reads it.
type Store interface {
	// Load returns what was saved last; nil and no error when nothing was.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces what is kept.
	Save(ctx context.Context, data []byte) error
	// String names the place in messages.
	String() string
}

// MaxState is the most a Memory writes to its store, encoded (gzip'd JSON,
// about 60 bytes per group): a realm memory above it is kept in this
// process only, with one warning, and the next process reads every group.
const MaxState = 8 << 20

// maxDecoded bounds what a stored state may expand to when it is read.
const maxDecoded = 256 << 20

// ErrStateTooLarge is matched by the refusal to save a state over MaxState.
var ErrStateTooLarge = errors.New("keycloak state over the size bound")

// FileStore keeps the state in a file (the config's keycloak_state), replaced
// atomically at every save.
type FileStore struct{ Path string }

// Load reads the file; a missing file is no state.
func (f FileStore) Load(context.Context) ([]byte, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// Save replaces the file.
func (f FileStore) Save(_ context.Context, data []byte) error {
	return atomicfile.Write(f.Path, data)
}

// String is "keycloak state file PATH".
func (f FileStore) String() string { return "keycloak state file " + f.Path }

// encodeState writes f as gzip'd JSON.
func encodeState(f stateFile) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err := json.NewEncoder(zw).Encode(f); err != nil {
		return nil, fmt.Errorf("encode keycloak state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress keycloak state: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeState reads a state: gzip'd JSON, or plain JSON as state files were
// written before.
func decodeState(data []byte) (stateFile, error) {
	var f stateFile
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return f, fmt.Errorf("decompress: %w", err)
		}
		r = zr
	}
	plain, err := io.ReadAll(io.LimitReader(r, maxDecoded+1))
	if err != nil {
		return f, fmt.Errorf("decompress: %w", err)
	}
	if len(plain) > maxDecoded {
		return f, fmt.Errorf("expands to more than %d MiB", maxDecoded>>20)
	}
	if err := json.Unmarshal(plain, &f); err != nil {
		return f, err
	}
	return f, nil
}
