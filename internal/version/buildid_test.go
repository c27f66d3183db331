package version

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// BuildID is what the go tool reads from the running executable.
func TestBuildIDIsTheGoToolsOne(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Fatalf("go tool buildid: %v", err)
	}
	want := strings.TrimSpace(string(out))
	if got := BuildID(); got == "" || got != want {
		t.Errorf("BuildID() = %q, want %q", got, want)
	}
}

// Outside ELF the build ID is read from the linker's mark.
func TestMarkedBuildID(t *testing.T) {
	for _, c := range []struct{ name, content, want string }{
		{"marked", "\x00\x01junk\xff Go build ID: \"abc/def\"\n \xffmore", "abc/def"},
		{"no mark", "nothing here", ""},
		{"no end", "\xff Go build ID: \"abc", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := t.TempDir() + "/exe"
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := markedBuildID(path); got != c.want {
				t.Errorf("markedBuildID = %q, want %q", got, c.want)
			}
		})
	}
}
