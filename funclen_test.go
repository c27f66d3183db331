package waldurgitops_test

import (
	"go/ast"
	"testing"
)

// maxFuncLines is the longest a function outside _test.go files may be,
// counted from its func keyword to its closing brace, both lines included.
const maxFuncLines = 100

// longFuncAllowed names the functions over maxFuncLines that are left as they
// are for now, as "path:function" or "path:Type.method". Each entry says why;
// remove it when that reason is gone.
var longFuncAllowed = map[string]string{}

// TestFunctionLength fails on every function outside _test.go files longer
// than maxFuncLines, listing each as file:line and its length, so that no
// function grows into a place where every new rule lands. Function literals
// count as part of the function they are in; one at package level counts on
// its own.
func TestFunctionLength(t *testing.T) {
	_, files, fset := moduleFiles(t, 0)
	seen := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			name := "func literal"
			switch n := n.(type) {
			case *ast.FuncDecl:
				name = funcName(n)
			case *ast.FuncLit:
			default:
				return true
			}
			start, end := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
			lines := end - start + 1
			key := f.rel + ":" + name
			if _, ok := longFuncAllowed[key]; ok {
				seen[key] = true
				if lines <= maxFuncLines {
					t.Errorf("%s:%d %s is %d lines, within the limit: remove it from longFuncAllowed", f.rel, start, name, lines)
				}
				return false
			}
			if lines > maxFuncLines {
				t.Errorf("%s:%d %s is %d lines, over %d: split it", f.rel, start, name, lines, maxFuncLines)
			}
			return false
		})
	}
	for key := range longFuncAllowed {
		if !seen[key] {
			t.Errorf("longFuncAllowed names %s, which no longer exists: remove it", key)
		}
	}
}

// funcName is a function's name, or Type.method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}
