package gobuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/internal/testenv/testproc"
)

// TestBuild builds a module of its own into a cache path: a good one gives an
// executable, a broken one an error with the compiler's words and no binary,
// not even the temporary file.
func TestBuild(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, tc := range []struct {
		name, main string
		ok         bool
	}{
		{"builds", "package main\n\nfunc main() {}\n", true},
		{"compile error", "package main\n\nfunc main() { undefinedName() }\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := t.TempDir()
			if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module gobuild.test/prog\n\ngo 1.22\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(tc.main), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "prog")
			err := Build(context.Background(), mod, out, ".", Options{LDFlags: "-s -w", Parallel: 1}, nil)
			if tc.ok {
				if err != nil || !testproc.Executable(out) {
					t.Fatalf("err %v, executable %v", err, testproc.Executable(out))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "undefinedName") || !strings.Contains(err.Error(), "build . in "+mod) {
				t.Errorf("err %v", err)
			}
			for _, p := range []string{out, out + ".tmp"} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s left behind (%v)", p, err)
				}
			}
		})
	}
}

// TestCommandReplacesGOFLAGS: the caller's GOFLAGS and GOWORK do not reach a
// cache build.
func TestCommandReplacesGOFLAGS(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	t.Setenv("GOFLAGS", "-race")
	t.Setenv("GOWORK", "/nowhere/go.work")
	cmd, err := Command(context.Background(), t.TempDir(), "env", "GOFLAGS", "GOWORK")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); len(got) != 2 || got[0] != "-mod=mod" || got[1] != "off" {
		t.Errorf("go env GOFLAGS GOWORK = %q", b)
	}
}

// TestDownloadRefused: a module the proxy cannot give is an error naming it.
func TestDownloadRefused(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	t.Setenv("GOPROXY", "off")
	_, err := Download(context.Background(), t.TempDir(), "gobuild.test/absent", "v1.0.0")
	if err == nil || !strings.Contains(err.Error(), "download gobuild.test/absent@v1.0.0") {
		t.Errorf("err %v", err)
	}
}
