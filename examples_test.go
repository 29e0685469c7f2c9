package topic_test

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

// exampleExempt names the exported names that need no example, each with the
// reason. Constants and variables are exempt as a class: go doc attaches no
// examples to them.
var exampleExempt = map[string]string{
	"Cause.String":          "satisfies fmt.Stringer",
	"Policy.String":         "satisfies fmt.Stringer",
	"PanicError.Error":      "satisfies error",
	"PermanentError.Error":  "satisfies error",
	"PermanentError.Unwrap": "satisfies errors.Unwrap",
}

// Every exported function, type and method of an exported type has an
// example that go doc shows beside it (ExampleF, ExampleT, ExampleT_M, each
// with an optional _suffix), unless exampleExempt says why not.
func TestEveryExportedNameHasAnExample(t *testing.T) {
	missing, known := namesWithoutExamples(t, ".")
	for name := range exampleExempt {
		if !slices.Contains(known, name) {
			t.Errorf("exampleExempt names %s, which is not an exported function, type or method", name)
		}
	}
	missing = slices.DeleteFunc(missing, func(name string) bool { _, ok := exampleExempt[name]; return ok })
	if len(missing) > 0 {
		t.Errorf("%d exported names have no example:\n\t%s", len(missing), strings.Join(missing, "\n\t"))
	}
}

// The same holds in package topicdebug, which has no exemptions (topictest
// and natsbridge check themselves).
func TestEveryExportedNameOfTopicdebugHasAnExample(t *testing.T) {
	if missing, _ := namesWithoutExamples(t, "topicdebug"); len(missing) > 0 {
		t.Errorf("%d exported names of topicdebug have no example:\n\t%s", len(missing), strings.Join(missing, "\n\t"))
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
