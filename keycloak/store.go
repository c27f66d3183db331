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
	"maps"
	"os"
	"slices"
	"strings"
	"time"

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

// maxState is MaxState (tests lower it).
var maxState = MaxState

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

// storedState is the stored form of a stateFile. Version 2 (Targets) names
// each member once, in Users, and its groups by index, and keeps times as
// Unix milliseconds: a third of version 1's size, and as much faster to
// read and write. Version 1 (Realms, realmMemory's own JSON) is still read.
type storedState struct {
	Comment string `json:"comment"`
	Version int    `json:"version"`
	// Users are the members of every remembered group, each once.
	Users   []User         `json:"users,omitempty"`
	Targets []storedRealm  `json:"targets,omitempty"`
	Realms  []*realmMemory `json:"realms,omitempty"`
}

// storedRealm is a realmMemory in version 2.
type storedRealm struct {
	Key        string        `json:"key"`
	URL        string        `json:"url"`
	Realm      string        `json:"realm"`
	LastPass   int64         `json:"last_pass"`
	EventsFrom int64         `json:"events_from,omitempty"`
	EventsRead int64         `json:"events_read,omitempty"`
	Groups     []storedGroup `json:"groups"`
}

// storedGroup is a memGroup in version 2; its name and parent are those of
// its path.
type storedGroup struct {
	Path          string              `json:"path"`
	ID            string              `json:"id"`
	Attributes    map[string][]string `json:"attributes,omitempty"`
	SubGroupCount int                 `json:"subgroups,omitempty"`
	Children      []string            `json:"children,omitempty"`
	ChildrenRead  bool                `json:"children_read,omitempty"`
	Members       []int               `json:"members,omitempty"`
	MembersRead   bool                `json:"members_read,omitempty"`
	Verified      int64               `json:"verified,omitempty"`
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// store converts f to its stored form, groups in path order.
func (f stateFile) store() storedState {
	out := storedState{Comment: f.Comment, Version: stateVersion}
	index := map[User]int{}
	for _, r := range f.Realms {
		sr := storedRealm{Key: r.Key, URL: r.URL, Realm: r.Realm, LastPass: millis(r.LastPass), EventsFrom: r.EventsFrom, EventsRead: millis(r.EventsRead)}
		for _, p := range slices.Sorted(maps.Keys(r.Groups)) {
			g := r.Groups[p]
			sg := storedGroup{Path: p, ID: g.ID, Attributes: g.Attributes, SubGroupCount: g.SubGroupCount, Children: g.Children,
				ChildrenRead: g.ChildrenRead, MembersRead: g.MembersRead, Verified: millis(g.Verified)}
			for _, u := range g.Members {
				i, ok := index[u]
				if !ok {
					i = len(out.Users)
					index[u] = i
					out.Users = append(out.Users, u)
				}
				sg.Members = append(sg.Members, i)
			}
			sr.Groups = append(sr.Groups, sg)
		}
		out.Targets = append(out.Targets, sr)
	}
	return out
}

// load converts a stored state back; a member index out of range is an
// error.
func (s storedState) load() (stateFile, error) {
	f := stateFile{Comment: s.Comment, Version: s.Version}
	if s.Version != stateVersion {
		f.Realms = s.Realms
		return f, nil
	}
	for _, sr := range s.Targets {
		r := &realmMemory{Key: sr.Key, URL: sr.URL, Realm: sr.Realm, LastPass: fromMillis(sr.LastPass), EventsFrom: sr.EventsFrom,
			EventsRead: fromMillis(sr.EventsRead), Groups: make(map[string]*memGroup, len(sr.Groups))}
		for _, sg := range sr.Groups {
			i := strings.LastIndex(sg.Path, "/")
			if i < 0 {
				return f, fmt.Errorf("group path %q does not start with /", sg.Path)
			}
			g := &memGroup{ID: sg.ID, Name: sg.Path[i+1:], Parent: sg.Path[:i], Attributes: sg.Attributes, SubGroupCount: sg.SubGroupCount,
				Children: sg.Children, ChildrenRead: sg.ChildrenRead, MembersRead: sg.MembersRead, Verified: fromMillis(sg.Verified)}
			for _, m := range sg.Members {
				if m < 0 || m >= len(s.Users) {
					return f, fmt.Errorf("group %s names member %d of %d", sg.Path, m, len(s.Users))
				}
				g.Members = append(g.Members, s.Users[m])
			}
			r.Groups[sg.Path] = g
		}
		f.Realms = append(f.Realms, r)
	}
	return f, nil
}

// encodeState writes f as gzip'd JSON (version 2).
func encodeState(f stateFile) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err := json.NewEncoder(zw).Encode(f.store()); err != nil {
		return nil, fmt.Errorf("encode keycloak state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress keycloak state: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeState reads a state: gzip'd JSON, or plain JSON as state files were
// written before; version 2, or version 1 as they were written before.
func decodeState(data []byte) (stateFile, error) {
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return stateFile{}, fmt.Errorf("decompress: %w", err)
		}
		r = zr
	}
	plain, err := io.ReadAll(io.LimitReader(r, maxDecoded+1))
	if err != nil {
		return stateFile{}, fmt.Errorf("decompress: %w", err)
	}
	if len(plain) > maxDecoded {
		return stateFile{}, fmt.Errorf("expands to more than %d MiB", maxDecoded>>20)
	}
	var s storedState
	if err := json.Unmarshal(plain, &s); err != nil {
		return stateFile{}, err
	}
	return s.load()
}
