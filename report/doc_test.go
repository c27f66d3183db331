package report_test

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/report"
)

const runReportDoc = "../docs/run-report.md"

// jsonFields returns the JSON names of the exported fields of t.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// section returns the lines of doc from the heading with exactly the given
// text up to the next heading of the same or a higher level.
func section(t *testing.T, doc, heading string) []string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		level := len(l) - len(strings.TrimLeft(l, "#"))
		if level == 0 || strings.TrimSpace(l[level:]) != heading {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if n := len(lines[j]) - len(strings.TrimLeft(lines[j], "#")); n > 0 && n <= level && strings.HasPrefix(lines[j][n:], " ") {
				return lines[i+1 : j]
			}
		}
		return lines[i+1:]
	}
	t.Fatalf("%s has no heading %q", runReportDoc, heading)
	return nil
}

var (
	// fieldRow is a table row whose first cell is one code span: `name`.
	fieldRow = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")
	// codeRow is a table row whose first cell is a number.
	codeRow = regexp.MustCompile(`^\|\s*(\d+)\s*\|`)
)

// documented returns the first-column code spans of the table rows in lines.
func documented(lines []string) []string {
	var out []string
	for _, l := range lines {
		if m := fieldRow.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// diff compares what the code has with what the document lists.
func diff(code, doc []string) (undocumented, stale []string) {
	for _, c := range code {
		if !slices.Contains(doc, c) {
			undocumented = append(undocumented, c)
		}
	}
	for _, d := range doc {
		if !slices.Contains(code, d) {
			stale = append(stale, d)
		}
	}
	return undocumented, stale
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(runReportDoc)
	if err != nil {
		t.Fatalf("read %s: %v", runReportDoc, err)
	}
	return string(b)
}

// TestRunReportFieldsDocumented keeps docs/run-report.md in step with the
// JSON of the report: every field of report.Run, report.Stage and
// changeset.Entry is in its table, and the tables list no other field.
func TestRunReportFieldsDocumented(t *testing.T) {
	doc := readDoc(t)
	for _, tc := range []struct {
		heading string
		typ     reflect.Type
	}{
		{"report.Run", reflect.TypeFor[report.Run]()},
		{"report.Stage", reflect.TypeFor[report.Stage]()},
		{"changeset.Entry", reflect.TypeFor[changeset.Entry]()},
	} {
		t.Run(tc.heading, func(t *testing.T) {
			fields := jsonFields(tc.typ)
			if len(fields) < 4 {
				t.Fatalf("%s has only the JSON fields %v: reflection went wrong", tc.heading, fields)
			}
			undocumented, stale := diff(fields, documented(section(t, doc, tc.heading)))
			for _, f := range undocumented {
				t.Errorf("field %q of %s is not in the table under %q in %s", f, tc.heading, tc.heading, runReportDoc)
			}
			for _, f := range stale {
				t.Errorf("%s documents field %q under %q, which %s does not have", runReportDoc, f, tc.heading, tc.heading)
			}
		})
	}
	t.Run("actions", func(t *testing.T) {
		var actions []string
		for _, a := range changeset.Actions {
			actions = append(actions, string(a))
		}
		undocumented, stale := diff(actions, documented(section(t, doc, "Actions")))
		if len(undocumented)+len(stale) > 0 {
			t.Errorf("actions in the code but not documented: %v; documented but not in the code: %v", undocumented, stale)
		}
	})
	if !strings.Contains(doc, "`"+report.Schema+"`") {
		t.Errorf("%s does not name the schema %s", runReportDoc, report.Schema)
	}
}

// TestDiffFindsDrift makes sure the comparison can fail both ways.
func TestDiffFindsDrift(t *testing.T) {
	lines := []string{"| field | type |", "|---|---|", "| `schema` | string |", "| `gone` | string |", "text `x` |"}
	undocumented, stale := diff([]string{"schema", "new"}, documented(lines))
	if !slices.Equal(undocumented, []string{"new"}) || !slices.Equal(stale, []string{"gone"}) {
		t.Errorf("diff = %v, %v; want [new], [gone]", undocumented, stale)
	}
}

// exitCodes reads the Exit* constants of failure/failure.go without importing
// the failure table into report's tests: name → value.
func exitCodes(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../failure/failure.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse failure/failure.go: %v", err)
	}
	codes := map[string]int{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Exit") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					t.Fatalf("failure/failure.go: %s is not an integer literal; teach this test to read it", n.Name)
				}
				v, ok := constant.Int64Val(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
				if !ok {
					t.Fatalf("failure/failure.go: %s = %s is not a small integer", n.Name, lit.Value)
				}
				codes[n.Name] = int(v)
			}
		}
	}
	if codes["ExitOK"] != 0 || len(codes) < 5 {
		t.Fatalf("read the exit codes %v from failure/failure.go: not what the CLI defines", codes)
	}
	return codes
}

// TestExitCodesDocumented checks that the exit code table of
// docs/run-report.md lists exactly the codes the CLI defines.
func TestExitCodesDocumented(t *testing.T) {
	codes := exitCodes(t)
	var want []string
	for _, v := range slices.Sorted(maps.Values(codes)) {
		want = append(want, strconv.Itoa(v))
	}
	var got []string
	for _, l := range section(t, readDoc(t), "Exit codes") {
		if m := codeRow.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			got = append(got, m[1])
		}
	}
	if !slices.Equal(got, slices.Compact(want)) {
		t.Errorf("the exit code table of %s lists %v; failure/failure.go defines %v (%v)", runReportDoc, got, want, codes)
	}
}
