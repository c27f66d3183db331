package testproc

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGroup: a Group runs its processes in its directory, logs each to
// <name>.log, and Stop kills them and removes the directory unless the keep
// variable is set.
func TestGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep string
	}{
		{"removed", ""},
		{"kept", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WALDUR_GITOPS_TESTPROC_KEEP", tc.keep)
			g, err := NewGroup("testproc-group-", "WALDUR_GITOPS_TESTPROC_KEEP")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(g.Dir) })
			p, err := g.Run("sleeper", "/bin/sh", nil, "-c", "pwd; exec sleep 60")
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			if err := p.WaitReady(context.Background(), "second poll", 10*time.Second, func(context.Context) bool { calls++; return calls == 2 }); err != nil {
				t.Fatal(err)
			}
			if len(g.Procs) != 1 || p.Log != filepath.Join(g.Dir, "sleeper.log") {
				t.Fatalf("procs %v, log %s", g.Procs, p.Log)
			}
			g.Stop()
			g.Stop()
			if !p.Exited() {
				t.Error("running after Stop")
			}
			_, err = os.Stat(g.Dir)
			if kept := err == nil; kept != (tc.keep != "") {
				t.Errorf("dir kept %v (%v), keep %q", kept, err, tc.keep)
			}
		})
	}
}
