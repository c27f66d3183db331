package backend_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// builtinNames are the built-in types and the constants that spell them.
var builtinNames = map[string]bool{
	"k8s-ut-namespace": true, "namespace": true, "okd": true, "rancher": true,
}

var builtinConsts = map[string]bool{
	"backend.K8sUTNamespace": true, "backend.Namespace": true, "backend.OKD": true, "backend.Rancher": true,
	"config.BackendK8sUTNamespace": true, "config.BackendNamespace": true, "config.BackendOKD": true, "config.BackendRancher": true,
	"BackendK8sUTNamespace": true, "BackendNamespace": true, "BackendOKD": true, "BackendRancher": true,
}

// settingsFields are the fields of config.Settings that hold a built-in
// profile's settings.
var settingsFields = map[string]bool{"K8sUT": true, "Namespace": true, "OKD": true, "Rancher": true}

// settingsBinders are the files that bind a profile to its settings field:
// config's and render's halves of the built-in profiles.
var settingsBinders = []string{"config/", "render/profiles.go"}

// typeNameComparisons returns, for one Go file, where it compares a value
// with a built-in backend type (==, !=, a switch case, strings.EqualFold) or
// reads a built-in's settings field (x.Settings.Rancher):
// what a backend's registration says instead. The literal "namespace", also
// a keycloak_groups key and a kind, counts only against an expression that
// names a type (BackendType, Type, Profile).
func typeNameComparisons(fset *token.FileSet, f *ast.File) []string {
	var out []string
	flag := func(n ast.Node, x, other ast.Expr, fold bool) {
		if isBuiltinName(x, other, fold) {
			out = append(out, fset.Position(n.Pos()).String()+": "+exprString(x))
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				flag(n, n.X, n.Y, false)
				flag(n, n.Y, n.X, false)
			}
		case *ast.SwitchStmt:
			if n.Tag == nil {
				return true
			}
			for _, s := range n.Body.List {
				for _, e := range s.(*ast.CaseClause).List {
					flag(e, e, n.Tag, false)
				}
			}
		case *ast.SelectorExpr:
			if settingsFields[n.Sel.Name] && strings.HasSuffix(exprString(n.X), "Settings") {
				out = append(out, fset.Position(n.Pos()).String()+": "+exprString(n))
			}
		case *ast.CallExpr:
			if exprString(n.Fun) == "strings.EqualFold" && len(n.Args) == 2 {
				flag(n, n.Args[0], n.Args[1], true)
				flag(n, n.Args[1], n.Args[0], true)
			}
		}
		return true
	})
	return out
}

// isBuiltinName tells whether x spells a built-in type, compared with other
// (in any case when fold is set).
func isBuiltinName(x, other ast.Expr, fold bool) bool {
	if builtinConsts[exprString(x)] {
		return true
	}
	lit, ok := x.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	v, err := strconv.Unquote(lit.Value)
	if fold {
		v = strings.ToLower(v)
	}
	if err != nil || !builtinNames[v] {
		return false
	}
	if v != "namespace" {
		return true
	}
	o := exprString(other)
	return strings.Contains(o, "BackendType") || strings.HasSuffix(o, "Type") || strings.Contains(o, "Profile")
}

// exprString spells identifiers and selectors; "" for anything else.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		if x := exprString(e.X); x != "" {
			return x + "." + e.Sel.Name
		}
	case *ast.CallExpr:
		return exprString(e.Fun) + "()"
	}
	return ""
}

func TestTypeNameComparisonsFound(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      int
	}{
		{"literal", `if o.BackendType == "rancher" {}`, 1},
		{"literal other side", `if "okd" != o.BackendType {}`, 1},
		{"constant", `if typ == backend.Rancher {}`, 1},
		{"config constant", `if b == config.BackendK8sUTNamespace || b == BackendNamespace {}`, 2},
		{"switch", `switch o.BackendType { case config.BackendOKD, "rancher": }`, 2},
		{"switch on profile", `switch b.Profile { case "namespace": }`, 1},
		{"fold", `if strings.EqualFold(o.BackendType, "OKD") {}`, 1},
		{"namespace as a key", `if f.key == "namespace" {}`, 0},
		{"namespace kind", `switch o.Kind() { case "namespace": }`, 0},
		{"Namespace kind", `if o.Kind() == "Namespace" {}`, 0},
		{"map key", `_ = map[string]int{backend.Rancher: 1}`, 0},
		{"other constant", `if k == backend.KindNamespace {}`, 0},
		{"settings field", `if r := o.Settings.Rancher; r != nil {}`, 1},
		{"common settings", `_ = o.Settings.Common().Keycloak`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() {\n"+tc.src+"\n}\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := typeNameComparisons(fset, f); len(got) != tc.want {
				t.Errorf("found %v, want %d", got, tc.want)
			}
		})
	}
}

// TestNoTypeNameComparisons holds the module to the registry: outside
// backend/, no Go file other than a test compares a value with a built-in
// backend type, and only config and render's profiles read a built-in's
// settings field; what differs between backends is read from their
// registration (backend.Lookup, TargetsOf, the settings' methods).
func TestNoTypeNameComparisons(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch {
			case rel == "backend", d.Name() == "testdata", d.Name() == "vendor", rel != "." && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		bindsSettings := slices.ContainsFunc(settingsBinders, func(b string) bool { return strings.HasPrefix(filepath.ToSlash(rel), b) })
		for _, c := range typeNameComparisons(fset, f) {
			if bindsSettings && strings.Contains(c, "Settings.") {
				continue
			}
			found = append(found, strings.TrimPrefix(c, root+string(filepath.Separator)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range found {
		t.Errorf("%s compares with a built-in backend type: read the backend's registration instead", c)
	}
}
