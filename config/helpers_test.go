package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
)

// validUUID is a well-formed offering UUID for configs built in tests.
const validUUID = "41e0012c52dd79ad2bebfde833ef9fe7"

// writeConfig writes text to config.yaml in a fresh directory and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, p, text)
	return p
}

// writeFile writes content to path, creating its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// mustLoad loads a config that must be valid.
func mustLoad(t *testing.T, path string) *config.Loaded {
	t.Helper()
	l, err := config.Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return l
}

// mustParse loads config text that must be valid.
func mustParse(t *testing.T, text string) *config.Loaded {
	t.Helper()
	return mustLoad(t, writeConfig(t, text))
}

// mustFail loads config text that must be invalid and returns its problems.
func mustFail(t *testing.T, text string) (*config.ValidationError, []config.Problem) {
	t.Helper()
	_, err := config.Load(writeConfig(t, text))
	return validationError(t, err)
}

func validationError(t *testing.T, err error) (*config.ValidationError, []config.Problem) {
	t.Helper()
	if err == nil {
		t.Fatal("loaded without error, want a validation error")
	}
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error is %T, want *config.ValidationError: %v", err, err)
	}
	if !config.IsValidation(err) {
		t.Fatalf("IsValidation(%v) = false", err)
	}
	return ve, ve.Problems
}

// oneOffering is a valid config with a single offering of the given backend type;
// settings (indented by six spaces) become its backend_settings and extra (indented
// by four) further offering keys.
func oneOffering(backend, settings, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "offerings:\n  - name: Test offering\n    waldur_api_url: https://waldur.example.org/api/\n")
	fmt.Fprintf(&b, "    waldur_offering_uuid: %s\n    backend_type: %s\n", validUUID, backend)
	b.WriteString(extra)
	if settings != "" {
		b.WriteString("    backend_settings:\n")
		b.WriteString(settings)
	}
	return b.String()
}

// findProblem returns the problem at path, failing the test when there is none.
func findProblem(t *testing.T, problems []config.Problem, path string) config.Problem {
	t.Helper()
	for _, p := range problems {
		if p.Path == path {
			return p
		}
	}
	t.Fatalf("no problem at %s; got:\n%s", path, listProblems(problems))
	return config.Problem{}
}

func listProblems(problems []config.Problem) string {
	var s []string
	for _, p := range problems {
		s = append(s, "  "+p.String())
	}
	return strings.Join(s, "\n")
}

// warningPaths returns the key paths named by the warnings, sorted.
func warningPaths(ws []string) []string {
	var out []string
	for _, w := range ws {
		p, _, _ := strings.Cut(w, ": ")
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
