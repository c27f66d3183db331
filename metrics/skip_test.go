package metrics_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/metrics"
)

// TestCausesDocumented: every cause declared in package changeset is a row of
// the causes table in docs/run-report.md, with the class the metrics give it.
func TestCausesDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../changeset/cause.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/run-report.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		ast.Inspect(d, func(x ast.Node) bool {
			vs, ok := x.(*ast.ValueSpec)
			if !ok || len(vs.Values) != 1 {
				return true
			}
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Cause" {
				return true
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok {
				return true
			}
			c, _ := strconv.Unquote(lit.Value)
			n++
			row := "| `" + c + "` | `" + metrics.SkipClassOf(changeset.Cause(c)) + "` |"
			if !strings.Contains(string(doc), row) {
				t.Errorf("cause %s: no row %q in docs/run-report.md", c, row)
			}
			return true
		})
	}
	if n < 10 {
		t.Fatalf("found %d causes in changeset/cause.go", n)
	}
}
