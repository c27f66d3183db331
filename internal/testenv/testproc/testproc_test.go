package testproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRetry: a start is retried only while a port was taken, at most the
// given number of times; any other failure ends it at once.
func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		errs  []error
		calls int
		ok    bool
	}{
		{"first try", []error{nil}, 1, true},
		{"port taken once", []error{fmt.Errorf("bind: %w", ErrAddrInUse), nil}, 2, true},
		{"port always taken", []error{ErrAddrInUse, ErrAddrInUse, ErrAddrInUse, nil}, 3, false},
		{"another failure", []error{errors.New("no binary"), nil}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			v, err := Retry(context.Background(), 3, func() (int, error) {
				calls++
				return calls, tc.errs[calls-1]
			})
			if calls != tc.calls || (err == nil) != tc.ok || (tc.ok && v != calls) {
				t.Errorf("calls %d, value %d, err %v", calls, v, err)
			}
		})
	}
}

// TestFreePorts: distinct ports that can be listened on.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(3)
	if err != nil || len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Fatalf("%v %v", ports, err)
	}
}

// TestFileTail: the end of a log, whole when short, "" when missing.
func TestFileTail(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.log")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		n          int
		want       string
	}{
		{"cut", p, 4, "6789"},
		{"whole", p, 40, "0123456789"},
		{"missing", filepath.Join(dir, "none.log"), 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FileTail(tc.path, tc.n); got != tc.want {
				t.Errorf("FileTail = %q, want %q", got, tc.want)
			}
		})
	}
}
