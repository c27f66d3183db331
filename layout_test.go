// Package waldurgitops_test checks rules about the module's layout that no
// single package can see: which packages may import the test environments,
// and how long a function may be.
package waldurgitops_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goFile is one non-test Go file of the module.
type goFile struct {
	rel  string // slash-separated path from the module root
	file *ast.File
}

// moduleFiles parses every Go file of the module that is not a _test.go file,
// skipping what the go command skips (testdata, and directories whose names
// start with "." or "_"). mode is passed to the parser.
func moduleFiles(t *testing.T, mode parser.Mode) (string, []goFile, *token.FileSet) {
	t.Helper()
	module := modulePath(t)
	fset := token.NewFileSet()
	var files []goFile
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != "." && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, mode|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, goFile{rel: filepath.ToSlash(p), file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found: the test must run from the module root")
	}
	return module, files, fset
}

// modulePath reads the module path from go.mod in the working directory,
// which go test sets to the module root for this package.
func modulePath(t *testing.T) string {
	t.Helper()
	f, err := os.Open("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// TestTestenvImports fails when a package outside internal/testenv imports a
// test environment from a file that ships: the test environments sit above
// every production package, never below one. _test.go files may import them,
// and so may the stand-in packages whose directory ends in "test"
// (waldur/waldurtest, forge/forgetest, …), which exist only for tests.
func TestTestenvImports(t *testing.T) {
	module, files, _ := moduleFiles(t, parser.ImportsOnly)
	testenv := module + "/internal/testenv"
	for _, f := range files {
		dir := path.Dir(f.rel)
		if dir == "internal/testenv" || strings.HasPrefix(dir, "internal/testenv/") || strings.HasSuffix(path.Base(dir), "test") {
			continue
		}
		for _, imp := range f.file.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if p == testenv || strings.HasPrefix(p, testenv+"/") {
				t.Errorf("%s imports %s: only _test.go files, internal/testenv and the …test stand-ins may", f.rel, p)
			}
		}
	}
}
