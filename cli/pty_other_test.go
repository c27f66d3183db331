//go:build !linux

package cli

import (
	"os"
	"testing"
)

// openPTY is Linux only (/dev/ptmx); elsewhere the terminal cases skip.
func openPTY(t *testing.T) (*os.File, func() string) {
	t.Skip("pseudo-terminal tests run on Linux")
	return nil, nil
}
