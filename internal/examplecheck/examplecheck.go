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
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
)

// Check fails t unless every exported function, type and method of an
// exported type of the package whose folder is fsys has an example that go doc shows
// beside it (ExampleF, ExampleT, ExampleT_M, each with an optional
// _suffix), but those exempt names with the reason why not (a method is
// named T.M). It also fails if exempt names something that is not an
// exported function, type or method. Constants and variables are exempt as
// a class: go doc attaches no examples to them.
//
// fsys is read, not the folder on the disk, so that a caller can embed its
// Go files (//go:embed *.go): the go command then caches the caller's
// results, where reading the folder would make it hash the folder's entries
// (a dist/ written by every run among them) and run the tests again.
func Check(t *testing.T, fsys fs.FS, exempt map[string]string) {
	t.Helper()
	missing, known := namesWithoutExamples(t, fsys)
	for name := range exempt {
		if !slices.Contains(known, name) {
			t.Errorf("the exemption of %s names no exported function, type or method", name)
		}
	}
	missing = slices.DeleteFunc(missing, func(name string) bool { _, ok := exempt[name]; return ok })
	if len(missing) > 0 {
		t.Errorf("%d exported names have no example:\n\t%s", len(missing), strings.Join(missing, "\n\t"))
	}
}

// namesWithoutExamples parses the package in fsys with its test files (the
// Go files the default build context matches), as go doc does, and returns
// the exported functions, types and methods that have no example attached,
// and all the names it checked. A method is named T.M.
func namesWithoutExamples(t *testing.T, fsys fs.FS) (missing, known []string) {
	t.Helper()
	ctx := build.Default
	ctx.JoinPath = path.Join
	ctx.OpenFile = func(name string) (io.ReadCloser, error) { return fsys.Open(name) }
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		if ok, err := ctx.MatchFile(".", e.Name()); err != nil {
			t.Fatal(err)
		} else if !ok {
			continue
		}
		src, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, e.Name(), src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no Go files in the package's folder")
	}
	pkg, err := doc.NewFromFiles(fset, files, ".")
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
