// Package examplecheck checks that every exported name of a package has an
// example that go doc shows beside it. The example tests of the modules of
// this repository call it (internal packages are importable by every
// package below the root's path, whatever its module).
package examplecheck

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Check fails t unless every exported function, type and method of an
// exported type of the package in dir has an example that go doc shows
// beside it (ExampleF, ExampleT, ExampleT_M, each with an optional
// _suffix), but those exempt names with the reason why not (a method is
// named T.M). It also fails if exempt names something that is not an
// exported function, type or method. Constants and variables are exempt as
// a class: go doc attaches no examples to them.
func Check(t *testing.T, dir string, exempt map[string]string) {
	t.Helper()
	missing, known := namesWithoutExamples(t, dir)
	for name := range exempt {
		if !slices.Contains(known, name) {
			t.Errorf("%s: the exemption of %s names no exported function, type or method", dir, name)
		}
	}
	missing = slices.DeleteFunc(missing, func(name string) bool { _, ok := exempt[name]; return ok })
	if len(missing) > 0 {
		t.Errorf("%s: %d exported names have no example:\n\t%s", dir, len(missing), strings.Join(missing, "\n\t"))
	}
}

// namesWithoutExamples parses the package in dir with its test files, as go
// doc does, and returns the exported functions, types and methods that have
// no example attached, and all the names it checked. A method is named
// T.M.
func namesWithoutExamples(t *testing.T, dir string) (missing, known []string) {
	t.Helper()
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range slices.Concat(bp.GoFiles, bp.TestGoFiles, bp.XTestGoFiles) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, bp.ImportPath)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, examples []*doc.Example) {
		known = append(known, name)
		if len(examples) == 0 {
			missing = append(missing, name)
		}
	}
	for _, f := range pkg.Funcs {
		check(f.Name, f.Examples)
	}
	for _, typ := range pkg.Types {
		check(typ.Name, typ.Examples)
		for _, f := range typ.Funcs {
			check(f.Name, f.Examples)
		}
		for _, m := range typ.Methods {
			check(typ.Name+"."+m.Name, m.Examples)
		}
	}
	return missing, known
}
