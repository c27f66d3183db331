//go:build linux

package bench

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if out := os.Getenv(measureEnv); out != "" {
		os.Exit(runMeasured(out, os.Args[1:]))
	}
	code := m.Run()
	removeScratch()
	os.Exit(code)
}
