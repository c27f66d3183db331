package waldurgitops_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The engine is the cycle (issue 25): engine/cycle.go holds the cycle alone,
// and engine/ the cycle, the seams, the run's verdict, the wiring and thin
// adapters; policy lives with its concern (the exit-code table in failure).
// Lines are counted as wc -l does, over the non-test files of engine/ itself
// (its fakes in engine/enginetest are not counted).
const (
	maxCycleLines = 200
	// maxEngineLines is what engine/ may hold: the cycle, the seams, the
	// verdict, the wiring and thin adapters.
	maxEngineLines = 1500
)

// Verbs are thin (issue 25): cli/ holds flags, help and printing, and
// hands the work to the packages below it.
const (
	maxCLILines     = 1500
	maxCLIFileLines = 250
)

// lineCount is a file's lines, as wc -l counts them.
func lineCount(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// nonTestLines is the lines of the non-test Go files of dir, by file.
func nonTestLines(t *testing.T, dir string) (map[string]int, int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	by, total := map[string]int{}, 0
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			by[f] = lineCount(t, f)
			total += by[f]
		}
	}
	return by, total
}

// TestEngineLineBudget fails when engine/cycle.go grows over maxCycleLines
// or engine/ over maxEngineLines, so that a new rule lands with its concern
// rather than in the engine.
func TestEngineLineBudget(t *testing.T) {
	if n := lineCount(t, filepath.Join("engine", "cycle.go")); n > maxCycleLines {
		t.Errorf("engine/cycle.go is %d lines, over %d: move what is not the cycle out", n, maxCycleLines)
	}
	if _, total := nonTestLines(t, "engine"); total > maxEngineLines {
		t.Errorf("engine/ is %d non-test lines, over %d: policy belongs with its concern, the engine keeps thin adapters", total, maxEngineLines)
	}
}

// TestCLILineBudget fails when cli/ grows over maxCLILines or one of its
// files over maxCLIFileLines: what a verb does beyond flags and printing
// belongs to the package that does the work.
func TestCLILineBudget(t *testing.T) {
	by, total := nonTestLines(t, "cli")
	if total > maxCLILines {
		t.Errorf("cli/ is %d non-test lines, over %d: move what is not flags, help or printing to its package", total, maxCLILines)
	}
	for f, n := range by {
		if n > maxCLIFileLines {
			t.Errorf("%s is %d lines, over %d", f, n, maxCLIFileLines)
		}
	}
}
