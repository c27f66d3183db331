package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
	"github.com/waldur/waldur-gitops/report"
	"github.com/waldur/waldur-gitops/show"
)

// TestLogLevelFlag: --log-level takes what log_level takes, and anything
// else is a usage error naming the flag and the values, before any work.
func TestLogLevelFlag(t *testing.T) {
	for _, tc := range []struct {
		level string
		code  int
	}{
		{"verbose", ExitUsage},
		{"inf", ExitUsage},
		{"debug", ExitOK},
		{"WARN", ExitOK},
		{"critical", ExitOK},
	} {
		t.Run(tc.level, func(t *testing.T) {
			code, _, stderr := run(t, "render", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--out", t.TempDir(), "--log-level", tc.level)
			want := fmt.Sprintf(`--log-level must be one of debug, info, warning, error; got %q`, tc.level)
			if code != tc.code || (tc.code == ExitUsage) != strings.Contains(stderr, want) {
				t.Errorf("exit %d, want %d (saying %q when refused)\n%s", code, tc.code, want, stderr)
			}
		})
	}
}

// TestVersionCommand: version prints the version, commit, Go version and
// platform, as text, JSON or YAML with the same fields.
func TestVersionCommand(t *testing.T) {
	code, text, _ := run(t, "version")
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, want := range []string{"waldur-gitops ", "\ncommit:   ", "\ngo:       " + runtime.Version(), "\nplatform: " + platform} {
		if code != ExitOK || !strings.Contains(text, want) {
			t.Errorf("exit %d, text lacks %q:\n%s", code, want, text)
		}
	}
	fields := map[string]map[string]any{}
	for _, f := range []string{"json", "yaml"} {
		code, out, stderr := run(t, "version", "-o", f)
		var v map[string]any
		if err := yaml.Unmarshal([]byte(out), &v); code != ExitOK || err != nil {
			t.Fatalf("-o %s: exit %d, %v\n%s%s", f, code, err, out, stderr)
		}
		if v["platform"] != platform || v["go_version"] != runtime.Version() || v["commit"] == "" || v["version"] == "" {
			t.Errorf("-o %s: %v", f, v)
		}
		fields[f] = v
	}
	if fmt.Sprint(fields["json"]) != fmt.Sprint(fields["yaml"]) {
		t.Errorf("json and yaml differ: %v, %v", fields["json"], fields["yaml"])
	}
	if code, _, stderr := run(t, "version", "-o", "xml"); code != ExitUsage || !strings.Contains(stderr, "-o/--output must be text, json or yaml") {
		t.Errorf("-o xml: exit %d\n%s", code, stderr)
	}
}

// TestYAMLOutputMatchesJSON: -o yaml is -o json's document in YAML, field
// for field.
func TestYAMLOutputMatchesJSON(t *testing.T) {
	out := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"render stream", []string{"render", "--config", exampleConfig, "--snapshot", exampleSnapshot}},
		{"render to a directory", []string{"render", "--config", exampleConfig, "--snapshot", exampleSnapshot, "--out", out}},
		{"version", []string{"version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(out) // each run creates the same tenants
			code, js, stderr := run(t, append(tc.args, "-o", "json")...)
			if code != ExitOK {
				t.Fatalf("json: exit %d\n%s", code, stderr)
			}
			os.RemoveAll(out)
			code, ym, stderr := run(t, append(tc.args, "-o", "yaml")...)
			if code != ExitOK || strings.HasPrefix(ym, "{") {
				t.Fatalf("yaml: exit %d, starts %.20q\n%s", code, ym, stderr)
			}
			fromYAML, err := yaml.YAMLToJSON([]byte(ym))
			if err != nil {
				t.Fatalf("not YAML: %v", err)
			}
			var a, b any
			if json.Unmarshal([]byte(js), &a) != nil || json.Unmarshal(fromYAML, &b) != nil {
				t.Fatal("not JSON")
			}
			if !equalJSON(a, b) {
				t.Errorf("-o yaml differs from -o json:\n%.500s\n%.500s", js, fromYAML)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestOutputCompletion: shell completion offers the values of -o on every
// command that has it (and wide on diagnose), and no file names; every
// command takes each of them.
func TestOutputCompletion(t *testing.T) {
	root := (&app{}).rootCommand()
	for _, c := range root.Commands() {
		if c.Flags().Lookup("output") == nil {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			code, stdout, stderr := run(t, "__complete", c.Name(), "-o", "")
			want := []string{"text", "json", "yaml"}
			if c.Name() == "diagnose" {
				want = append(want, "wide")
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if code != ExitOK || len(lines) != len(want)+1 || lines[len(lines)-1] != ":4" {
				t.Fatalf("exit %d, completions %q, want %q and :4 (no files)\n%s", code, lines, want, stderr)
			}
			for i, w := range want {
				if lines[i] != w {
					t.Errorf("completion %d: %q, want %q", i, lines[i], w)
				}
				// Every value offered is taken: the command goes on to
				// its config, which is missing.
				_, _, stderr := run(t, c.Name(), "--config", filepath.Join(t.TempDir(), "none.yaml"), "-o", w)
				if strings.Contains(stderr, "-o/--output must be") {
					t.Errorf("-o %s refused:\n%s", w, stderr)
				}
			}
		})
	}
	code, stdout, _ := run(t, "__complete", "render", "--log-level", "")
	if code != ExitOK || !strings.HasPrefix(stdout, "debug\ninfo\nwarning\nerror\n:4") {
		t.Errorf("--log-level completion: exit %d\n%s", code, stdout)
	}
}

var (
	ansi         = regexp.MustCompile("\x1b\\[[0-9;]*m")
	progressLine = regexp.MustCompile(`^(✔|✗|ok|FAILED) +(\S+) +[0-9.]+s  (.*)$`)
	summaryLine  = regexp.MustCompile(`^  (\S+) +[0-9.]+s  (.*)$`)
	logLine      = regexp.MustCompile(`^time=\S+ level=[A-Z]+ msg=`)
)

// TestProgressOnATerminal runs sync with stderr on a pseudo-terminal: a
// line per stage with the counts the summary ends with, ✔ and ✗ in colour
// unless NO_COLOR is set, and every line of stderr whole (a progress line, a
// log line or the error line). Off a terminal there is no progress, no mark
// and no escape.
func TestProgressOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name            string
		terminal        bool
		noColor         string
		marks, progress bool
	}{
		{"terminal", true, "", true, true},
		{"terminal with NO_COLOR", true, "1", false, true},
		{"not a terminal", false, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tc.noColor)
			_, waldurCfg := serveExample(t)
			down := kctest.NewServer()
			down.Close() // Keycloak down: the keycloak stage fails, the others go on
			gsrv, _, url := gitRepo(t)
			cfg := withGit(t, keycloakConfigFrom(t, waldurCfg, down.URL, "max_retries: 0", true), gsrv, url)
			var stdout, errBuf bytes.Buffer
			stderr := func() string { return errBuf.String() }
			code := 0
			if tc.terminal {
				tty, read := openPTY(t)
				code = Main([]string{"sync", "--config", cfg}, &stdout, tty)
				stderr = read
			} else {
				code = Main([]string{"sync", "--config", cfg}, &stdout, &errBuf)
			}
			errText := stderr()
			if code != ExitKeycloak {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitKeycloak, stdout.String(), errText)
			}
			if got := strings.ContainsAny(errText+stdout.String(), "✔✗"); got != tc.marks {
				t.Errorf("marks shown: %v, want %v\n%s", got, tc.marks, errText)
			}
			if got := ansi.MatchString(errText + stdout.String()); got != tc.marks {
				t.Errorf("colour escapes: %v, want %v\n%q", got, tc.marks, errText)
			}
			last, marks := progressCounts(t, ansi.ReplaceAllString(errText, ""))
			if (len(marks) > 0) != tc.progress {
				t.Fatalf("progress lines: %d, want some: %v\n%s", len(marks), tc.progress, errText)
			}
			if !tc.progress {
				return
			}
			stages := 0
			for _, l := range strings.Split(stdout.String(), "\n") {
				m := summaryLine.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				stages++
				failed := strings.HasPrefix(m[2], "FAILED")
				if failed != (marks[m[1]] == "✗" || marks[m[1]] == "FAILED") {
					t.Errorf("%s: summary %q, progress mark %q", m[1], m[2], marks[m[1]])
				}
				if !failed && last[m[1]] != m[2] {
					t.Errorf("%s: progress ends at %q, the summary says %q\n%s", m[1], last[m[1]], m[2], errText)
				}
			}
			if stages < 5 || stages != len(marks) {
				t.Errorf("%d stages in the summary, %d in the progress\n%s\n%s", stages, len(marks), stdout.String(), errText)
			}
		})
	}
}

// progressCounts reads the progress lines: the last counts shown of each
// stage and its mark. Every other line must be a whole log or error line.
func progressCounts(t *testing.T, s string) (last, marks map[string]string) {
	t.Helper()
	last, marks = map[string]string{}, map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		m := progressLine.FindStringSubmatch(l)
		switch {
		case m != nil:
			marks[m[2]] = m[1]
			parts := strings.Split(m[3], "; ")
			last[m[2]] = parts[0]
			for _, p := range parts[1:] {
				name, counts, _ := strings.Cut(p, " now ")
				last[name] = counts
			}
		case l == "", logLine.MatchString(l), strings.HasPrefix(l, "error: "), strings.HasPrefix(l, "{"):
		default:
			t.Errorf("a line that is neither progress nor a whole log line: %q", l)
		}
	}
	return last, marks
}

// TestProgressCountsEachRun: an engine serve runs again and again starts
// its counts again at each run, and a stage's line gives the counts a later
// stage added under an earlier stage's name.
func TestProgressCountsEachRun(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, false)
	tenant := changeset.Entry{Stage: "render", Kind: "Tenant", Subject: "t", Action: changeset.Create}
	commit := changeset.Entry{Stage: "git", Kind: "Commit", Subject: "main", Action: changeset.Create}
	for range 2 {
		p.stage(report.Stage{Name: "render"}, changeset.Set{})
		p.stage(report.Stage{Name: "git", DurationSeconds: 1.5}, changeset.Set{Entries: []changeset.Entry{tenant, commit}})
		p.stage(report.Stage{Name: "keycloak", Error: "refused"}, changeset.Set{})
	}
	want := "ok     render      0.00s  no changes\nok     git         1.50s  +1; render now +1\nFAILED keycloak    0.00s  failed\n"
	if out.String() != want+want {
		t.Errorf("progress:\n%s\nwant twice:\n%s", out.String(), want)
	}
}

// TestLineWriterKeepsLinesWhole: writers into one sink that send their
// lines in pieces, at once, never cut into each other's lines.
func TestLineWriterKeepsLinesWhole(t *testing.T) {
	var out bytes.Buffer
	sink := show.NewLineSink(&out)
	var wg sync.WaitGroup
	for _, word := range []string{"progress", "log"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lw := sink.Writer()
			for range 200 {
				fmt.Fprint(lw, word, " ")
				fmt.Fprint(lw, word)
				fmt.Fprint(lw, "\n")
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		if l != "progress progress" && l != "log log" {
			t.Fatalf("a line was cut into: %q", l)
		}
	}
}

// TestDiagnoseFitsAHundredColumns: the table of diagnose fits 100 columns,
// long values wrapped, and still names every target and credential; -o wide
// is one line per check.
func TestDiagnoseFitsAHundredColumns(t *testing.T) {
	cfg := diagnoseSetup(t, "wrong-password")
	_, stdout, _ := run(t, "diagnose", "--config", cfg, "--kubeconfig", "/a/kubeconfig/in/a/directory/with/a/rather/long/name/that/goes/on/site.yaml")
	for _, l := range strings.Split(stdout, "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("line of %d columns:\n%s", n, l)
		}
	}
	for _, want := range []string{"credential: git.username", "$" + gitPasswordEnv, "target: http://", "FAIL", "5 check(s), 2 failed, 1 skipped"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, stdout)
		}
	}
	_, wide, _ := run(t, "diagnose", "--config", cfg, "--kubeconfig", "/a/kubeconfig/in/a/directory/with/a/rather/long/name/that/goes/on/site.yaml", "-o", "wide")
	if lines := strings.Split(strings.TrimSpace(wide), "\n"); len(lines) != 7 || !strings.HasPrefix(lines[0], "CHECK") || !strings.Contains(wide, "kubeconfig /a/kubeconfig/in/a/directory/with/a/rather/long/name/that/goes/on/site.yaml") {
		t.Errorf("-o wide: %d lines\n%s", len(lines), wide)
	}
}

// TestCredentialErrorsNameTheirSource: a refused credential names the key and
// the file or variable it was read from, and a cause the realms share is
// said once in the summary and once in the error line.
func TestCredentialErrorsNameTheirSource(t *testing.T) {
	kc := kctest.NewServer()
	defer kc.Close()
	pwFile := filepath.Join(t.TempDir(), "keycloak-password")
	writeFile(t, pwFile, "not-the-password\n")
	_, waldurCfg := serveExample(t)
	tokenFile := filepath.Join(t.TempDir(), "waldur-token")
	writeFile(t, tokenFile, "0000000000000000000000000000000000000000\n")
	b, err := os.ReadFile(waldurCfg)
	if err != nil {
		t.Fatal(err)
	}
	fileCfg := filepath.Join(t.TempDir(), "file.yaml")
	writeFile(t, fileCfg, regexp.MustCompile(`(?m)^(\s*)(waldur_api_url: .*)$`).ReplaceAllString(string(b), "$1$2\n${1}waldur_api_token_file: "+tokenFile))
	for _, tc := range []struct {
		name, env string
		args      []string
		code      int
		want      string
	}{
		{"keycloak password file", "", []string{"keycloak", "--snapshot", exampleSnapshot, "--config",
			keycloakConfig(t, kc.URL, "keycloak_username: admin\n        keycloak_password_file: "+pwFile, false)},
			ExitKeycloak, "(keycloak_password_file " + pwFile + "): 401 Unauthorized"},
		{"waldur token variable", "0000000000000000000000000000000000000000", []string{"render", "--config", waldurCfg}, ExitWaldur,
			"401 Unauthorized: Invalid token. (authentication failed: check the token from $WALDUR_API_TOKEN)"},
		{"waldur token file", "", []string{"render", "--config", fileCfg}, ExitWaldur,
			"(authentication failed: check the token from waldur_api_token_file " + tokenFile + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("WALDUR_API_TOKEN", tc.env)
			}
			code, stdout, stderr := run(t, tc.args...)
			var errLine string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, "error: ") {
					errLine = l
				}
			}
			if code != tc.code || strings.Count(errLine, tc.want) != 1 {
				t.Fatalf("exit %d, want %d and an error line saying %q once\n%s\n%s", code, tc.code, tc.want, stdout, stderr)
			}
			if n := strings.Count(stdout, "401 Unauthorized"); n > 1 {
				t.Errorf("the summary says the cause %d times:\n%s", n, stdout)
			}
			if strings.Contains(stdout+stderr, "not-the-password") || strings.Contains(stdout+stderr, "0000000000000000000000000000000000000000") {
				t.Error("a secret was printed")
			}
		})
	}
}

// TestGitCredentialErrorNamesItsSource: a Git server refusing the password
// makes the error name git.username and the variable the password came from.
func TestGitCredentialErrorNamesItsSource(t *testing.T) {
	_, waldurCfg := serveExample(t)
	gsrv, _, url := gitRepo(t)
	cfg := withGit(t, waldurCfg, gsrv, url)
	t.Setenv(gitPasswordEnv, "not-the-git-password")
	code, _, stderr := run(t, "sync", "--config", cfg, "--snapshot", exampleSnapshot)
	want := "check the credential, git.username " + gsrv.User() + " with git.password_env $" + gitPasswordEnv
	if code != ExitGit || !strings.Contains(stderr, want) || strings.Contains(stderr, "not-the-git-password") {
		t.Errorf("exit %d, want %d saying %q\n%s", code, ExitGit, want, stderr)
	}
}
