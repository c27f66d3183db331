// Package docs_test checks the operator documentation against the repository:
// relative links and heading anchors resolve, every error message quoted in
// troubleshooting.md still exists in the code, and every `make <target>` the
// documents mention is a target of the Makefile.
package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// markdownFiles lists README.md and every docs/*.md, as paths from root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatalf("list docs: %v", err)
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatalf("docs file %s: %v", d, err)
		}
		files = append(files, rel)
	}
	if len(files) < 5 {
		t.Fatalf("found only %v: the docs directory is not where the test expects it", files)
	}
	return files
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

// doc is a Markdown file split into the prose outside code and the code.
type doc struct {
	// prose holds each line outside fenced and indented code blocks, with
	// inline code spans cut out; line numbers are kept by index.
	prose []string
	// code holds the text of code blocks and inline code spans.
	code []string
	// headings are the heading lines (without the leading #s), in order.
	headings []string
}

var codeSpan = regexp.MustCompile("`+[^`]*`+")

func parseDoc(text string) doc {
	var d doc
	inFence := false
	fence := ""
	prevBlank := true
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if inFence {
			if strings.HasPrefix(trimmed, fence) {
				inFence = false
			} else {
				d.code = append(d.code, line)
			}
			d.prose = append(d.prose, "")
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence, fence = true, trimmed[:3]
			d.prose = append(d.prose, "")
			continue
		}
		// An indented code block starts after a blank line (or continues one).
		if strings.HasPrefix(line, "    ") && prevBlank {
			d.code = append(d.code, line)
			d.prose = append(d.prose, "")
			continue
		}
		prevBlank = trimmed == ""
		if strings.HasPrefix(line, "#") {
			if h := strings.TrimLeft(line, "#"); strings.HasPrefix(h, " ") {
				d.headings = append(d.headings, strings.TrimSpace(h))
			}
		}
		for _, span := range codeSpan.FindAllString(line, -1) {
			d.code = append(d.code, strings.Trim(span, "`"))
		}
		d.prose = append(d.prose, codeSpan.ReplaceAllString(line, "code"))
	}
	return d
}

var (
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\(([^)]*)\)`)
	emphasis   = regexp.MustCompile(`\*+`)
)

// slug is GitHub's anchor for a heading: the rendered text lower-cased, every
// character that is not a letter, a digit, a space, '-' or '_' removed, and
// every space turned into '-'. Repeats get -1, -2, … (see anchors).
func slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = strings.ReplaceAll(text, "`", "")
	text = emphasis.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-', r == '_', unicode.IsLetter(r), unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every anchor the headings of a document get.
func anchors(headings []string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, h := range headings {
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Site-agent keys that are ignored", "site-agent-keys-that-are-ignored"},
		{"Reviewing before it happens: `render --dry-run`", "reviewing-before-it-happens-render---dry-run"},
		{"The GitOps repository: `sync`, `render --dry-run`, Argo CD and Flux", "the-gitops-repository-sync-render---dry-run-argo-cd-and-flux"},
		{"keycloak_groups", "keycloak_groups"},
		{"`invalid config …: … problem(s)`", "invalid-config---problems"},
		{"Tests: a real API server", "tests-a-real-api-server"},
		{"See [the guide](x.md) **now**", "see-the-guide-now"},
	} {
		t.Run(tc.heading, func(t *testing.T) {
			if got := slug(tc.heading); got != tc.want {
				t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
			}
		})
	}
	got := anchors([]string{"Flux", "Flux", "Flux"})
	for _, want := range []string{"flux", "flux-1", "flux-2"} {
		if !got[want] {
			t.Errorf("anchors of three equal headings lack %q: %v", want, got)
		}
	}
}

// brokenLinks returns a description of every relative link in file that does
// not resolve; parsed caches the parsed documents by path from root.
func brokenLinks(t *testing.T, file string, parsed map[string]doc) []string {
	t.Helper()
	get := func(rel string) doc {
		if d, ok := parsed[rel]; ok {
			return d
		}
		d := parseDoc(readFile(t, rel))
		parsed[rel] = d
		return d
	}
	var broken []string
	for i, line := range get(file).prose {
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			target := strings.TrimSpace(m[2])
			if j := strings.IndexAny(target, " \t"); j >= 0 {
				target = target[:j] // a link title follows
			}
			if target == "" || strings.HasPrefix(target, "//") || regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			at := file + ":" + strconv.Itoa(i+1) + ": " + target
			rel := file
			if path != "" {
				rel = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
					broken = append(broken, at+": no such file")
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			if !anchors(get(rel).headings)[anchor] {
				broken = append(broken, at+": no heading with that anchor")
			}
		}
	}
	return broken
}

func TestLinks(t *testing.T) {
	parsed := map[string]doc{}
	for _, f := range markdownFiles(t) {
		t.Run(f, func(t *testing.T) {
			for _, b := range brokenLinks(t, f, parsed) {
				t.Error(b)
			}
		})
	}
}

// TestLinkCheckerFindsBrokenLinks makes sure the checker is not blind: a
// document with a missing file and a missing anchor yields both.
func TestLinkCheckerFindsBrokenLinks(t *testing.T) {
	parsed := map[string]doc{
		"docs/probe.md": parseDoc("# Probe\n\nSee [a](missing-file.md), [b](run-report.md#no-such-heading),\n" +
			"[c](run-report.md#exit-codes), [d](#probe) and `[e](in-code.md)`.\n\n    [f](indented-code.md)\n"),
	}
	got := brokenLinks(t, "docs/probe.md", parsed)
	if len(got) != 2 || !strings.Contains(got[0], "missing-file.md") || !strings.Contains(got[1], "no-such-heading") {
		t.Errorf("broken links = %q, want exactly missing-file.md and #no-such-heading", got)
	}
}

// goStrings returns the value of every string literal in the non-test Go
// source of the module: no _test.go files, no test helper packages (directory
// names ending in "test"), no vendored or generated dependency copies.
func goStrings(t *testing.T) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "zz_deps" ||
				name == "vendor" || name == "docs" || strings.HasSuffix(name, "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out = append(out, strings.ReplaceAll(s, "%%", "%"))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatalf("read the Go source: %v", err)
	}
	if len(out) < 1000 {
		t.Fatalf("found only %d string literals: the module root is not where the test expects it", len(out))
	}
	return out
}

// messagePattern matches a quoted message inside one string literal: its
// fixed parts in order, anything (a %-verb, or text added by the format)
// where the quote has "…".
func messagePattern(quote string) *regexp.Regexp {
	var parts []string
	for _, p := range strings.Split(quote, "…") {
		if strings.TrimSpace(p) != "" {
			parts = append(parts, regexp.QuoteMeta(p))
		}
	}
	return regexp.MustCompile("(?s)" + strings.Join(parts, ".*"))
}

func inSource(lits []string, quote string) bool {
	re := messagePattern(quote)
	return slices.ContainsFunc(lits, re.MatchString)
}

var messageHeading = regexp.MustCompile("^### `([^`]+)`$")

func TestTroubleshootingMessagesExist(t *testing.T) {
	lits := goStrings(t)
	var quotes []string
	for _, line := range strings.Split(readFile(t, "docs/troubleshooting.md"), "\n") {
		if m := messageHeading.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			quotes = append(quotes, m[1])
		}
	}
	if len(quotes) < 20 {
		t.Fatalf("troubleshooting.md quotes %d messages as ### `…` headings, want at least 20", len(quotes))
	}
	for _, q := range quotes {
		t.Run(q, func(t *testing.T) {
			if !inSource(lits, q) {
				t.Errorf("message %q is quoted in troubleshooting.md but is no string literal of the non-test Go source any more", q)
			}
		})
	}
	// The check must be able to fail: a message that was never in the code,
	// and a real one with its words changed, are not found.
	for _, q := range []string{
		"the flux capacitor … is not charged",
		"refusing to remove … of … tenants that have a Terminate order in Waldur",
	} {
		if inSource(lits, q) {
			t.Errorf("invented message %q was found in the source: the matcher is too lax", q)
		}
	}
}

var (
	makeCommand = regexp.MustCompile(`(?:^|[\s;&(])make ([a-z][a-z0-9_-]*)`)
	makeTarget  = regexp.MustCompile(`(?m)^([a-zA-Z0-9_.-]+):`)
)

func TestMakeTargetsExist(t *testing.T) {
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(readFile(t, "Makefile"), -1) {
		targets[m[1]] = true
	}
	if !targets["build"] || !targets["test"] {
		t.Fatalf("the Makefile's targets %v lack build and test: the parser is wrong", targets)
	}
	mentioned := 0
	for _, f := range markdownFiles(t) {
		for _, code := range parseDoc(readFile(t, f)).code {
			for _, m := range makeCommand.FindAllStringSubmatch(code, -1) {
				mentioned++
				if !targets[m[1]] {
					t.Errorf("%s mentions `make %s`, which is not a target of the Makefile", f, m[1])
				}
			}
		}
	}
	if mentioned == 0 {
		t.Error("no `make <target>` found in any document: the scanner is wrong")
	}
}
