package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/localtree"
	"github.com/waldur/waldur-gitops/render"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/waldurtest"
)

// serveExample seeds a Waldur test server with the example snapshot and writes
// a copy of the example config that points every offering at it.
func serveExample(t *testing.T, opts ...waldurtest.Option) (*waldurtest.Server, string) {
	t.Helper()
	const token = "0123456789abcdef0123456789abcdef01234567"
	srv := waldurtest.New(t, append([]waldurtest.Option{waldurtest.WithToken(token)}, opts...)...)
	snap, err := waldur.LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	srv.Seed(&snap.State)
	cfg, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`waldur_api_url: .*`).ReplaceAllString(string(cfg), "waldur_api_url: "+srv.URL())
	text = regexp.MustCompile(`\n\s*waldur_api_token_file: .*`).ReplaceAllString(text, "")
	abs, err := filepath.Abs("../examples/site-templates")
	if err != nil {
		t.Fatal(err)
	}
	text = strings.ReplaceAll(text, "templates_dir: site-templates", "templates_dir: "+abs)
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, text)
	t.Setenv("WALDUR_API_TOKEN", token)
	return srv, path
}

// TestSnapshotRendersLikeTheAPI records a snapshot from the Waldur test server
// and checks that rendering from it, rendering from the API and rendering the
// example snapshot give byte-identical trees, and that the token is never logged.
func TestSnapshotRendersLikeTheAPI(t *testing.T) {
	srv, cfg := serveExample(t)
	dir := t.TempDir()
	snap := filepath.Join(dir, "state.json")
	var logs strings.Builder
	step := func(args ...string) {
		t.Helper()
		code, _, stderr := run(t, append(args, "--log-level", "debug")...)
		logs.WriteString(stderr)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	step("snapshot", "--config", cfg, "--out", snap)
	step("render", "--config", cfg, "--snapshot", snap, "--out", filepath.Join(dir, "from-snapshot"))
	step("render", "--config", cfg, "--out", filepath.Join(dir, "from-api"))
	step("render", "--config", cfg, "--snapshot", exampleSnapshot, "--out", filepath.Join(dir, "from-example"))

	want, err := localtree.Read(filepath.Join(dir, "from-api"))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 40 {
		t.Fatalf("only %d files rendered from the API", len(want))
	}
	for _, other := range []string{"from-snapshot", "from-example"} {
		got, err := localtree.Read(filepath.Join(dir, other))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d files, from-api %d", other, len(got), len(want))
		}
		for p, data := range want {
			if !bytes.Equal(got[p], data) {
				t.Errorf("%s: %s differs from the API render", other, p)
			}
		}
	}
	if strings.Contains(logs.String(), srv.Token()) {
		t.Error("the Waldur token appears in the logs")
	}
	if !strings.Contains(logs.String(), `"msg":"read Waldur offering"`) {
		t.Errorf("no JSON progress log per offering:\n%.500s", logs.String())
	}
	if srv.Requests("/api/marketplace-provider-resources/") == 0 {
		t.Error("the API was not read")
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Errorf("OpenAPI violations: %v", v)
	}
}

// TestWaldurFailureWritesNothing checks that a failing Waldur read fails the run
// with the Waldur exit code and leaves the output directory alone.
func TestWaldurFailureWritesNothing(t *testing.T) {
	srv, cfg := serveExample(t)
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := run(t, "render", "--config", cfg, "--out", out); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	before, _ := localtree.Read(out)
	srv.FailNext(1000, 403) // not retried, so the test stays fast
	code, _, stderr := run(t, "render", "--config", cfg, "--out", out)
	if code != ExitWaldur || !strings.Contains(stderr, "403") {
		t.Errorf("exit %d, want %d\n%s", code, ExitWaldur, stderr)
	}
	after, _ := localtree.Read(out)
	if len(after) != len(before) || !bytes.Equal(after[render.MarkerFile], before[render.MarkerFile]) {
		t.Error("the failed run changed the output directory")
	}
}
