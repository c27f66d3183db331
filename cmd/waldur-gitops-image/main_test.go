package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefuses checks the flag errors; containerimage's tests build images.
func TestRunRefuses(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "waldur-gitops")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no binary", nil, "-binary is required"},
		{"binary without platform", []string{"-binary", missing}, "want OS/ARCH=PATH"},
		{"platform without arch", []string{"-binary", "linux=" + missing}, "want OS/ARCH"},
		{"bad reference", []string{"-binary", "linux/amd64=" + missing, "-image", "Not A Ref"}, `image reference "Not A Ref"`},
		{"stray argument", []string{"-binary", "linux/amd64=" + missing, "extra"}, "unexpected arguments"},
		{"binary missing", []string{"-binary", "linux/amd64=" + missing}, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}
