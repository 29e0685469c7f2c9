package topicvet_test

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/seedaa7df82c/topic/topicvet/internal/topics"
)

// TestStubMatchesTheCore checks that every name of the stub of the core
// the tests analyse (testdata/src/github.com/seedaa7df82c/topic) is in the
// core, of the same kind and signature, and that the core has every method
// of Broker the analyzers match. It needs the core beside the module, as
// in the repository; elsewhere it is skipped.
func TestStubMatchesTheCore(t *testing.T) {
	if b, err := os.ReadFile("../go.mod"); err != nil || !strings.Contains(string(b), "module "+topics.CorePath+"\n") {
		t.Skip("the core is not beside the module")
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedTypes | packages.NeedName, Dir: ".."}, topics.CorePath)
	if err != nil || len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("loading the core: %v %v", err, pkgs)
	}
	core := pkgs[0].Types
	stub := loadStub(t)

	for _, name := range stub.Scope().Names() {
		s := stub.Scope().Lookup(name)
		c := core.Scope().Lookup(name)
		if c == nil {
			t.Errorf("the stub has %s, the core does not", name)
			continue
		}
		if kind(s) != kind(c) {
			t.Errorf("%s is a %s in the stub, a %s in the core", name, kind(s), kind(c))
			continue
		}
		if f, ok := s.(*types.Func); ok {
			compareSig(t, name, f.Signature(), c.(*types.Func).Signature())
		}
		if tn, ok := s.(*types.TypeName); ok {
			compareType(t, name, tn.Type(), c.Type())
		}
	}
	broker := core.Scope().Lookup("Broker").Type()
	for _, m := range append(topics.BrokerMethods(), "Watch", "TimeCalls") {
		if obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(broker), true, core, m); obj == nil {
			t.Errorf("the analyzers match Broker.%s, which the core does not have", m)
		}
	}
}

func loadStub(t *testing.T) *types.Package {
	dir := filepath.Join("testdata", "src", filepath.FromSlash(topics.CorePath))
	fset := token.NewFileSet()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var files []*ast.File
	for _, m := range matches {
		f, err := parser.ParseFile(fset, m, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check(topics.CorePath, fset, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func kind(o types.Object) string {
	switch o.(type) {
	case *types.Func:
		return "func"
	case *types.TypeName:
		return "type"
	case *types.Const:
		return "const"
	case *types.Var:
		return "var"
	}
	return "?"
}

// sigString is sig without parameter names, types named within the core
// by their names alone.
func sigString(sig *types.Signature) string {
	var b strings.Builder
	q := func(p *types.Package) string {
		if p.Path() == topics.CorePath {
			return ""
		}
		return p.Path()
	}
	tps := sig.TypeParams()
	b.WriteString("[")
	for i := range tps.Len() {
		b.WriteString(types.TypeString(tps.At(i).Constraint(), q) + ";")
	}
	b.WriteString("](")
	for v := range sig.Params().Variables() {
		b.WriteString(types.TypeString(v.Type(), q) + ";")
	}
	b.WriteString(")(")
	for v := range sig.Results().Variables() {
		b.WriteString(types.TypeString(v.Type(), q) + ";")
	}
	b.WriteString(")")
	return b.String()
}

func compareSig(t *testing.T, name string, s, c *types.Signature) {
	t.Helper()
	if a, b := sigString(s), sigString(c); a != b {
		t.Errorf("%s: the stub's signature %s, the core's %s", name, a, b)
	}
}

// compareType compares the methods of the stub's type and the fields of a
// struct with the core's.
func compareType(t *testing.T, name string, s, c types.Type) {
	t.Helper()
	ms := types.NewMethodSet(types.NewPointer(s))
	for sel := range ms.Methods() {
		m := sel.Obj().(*types.Func)
		obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(c), true, m.Pkg(), m.Name())
		cm, ok := obj.(*types.Func)
		if !ok {
			t.Errorf("%s.%s is in the stub, not in the core", name, m.Name())
			continue
		}
		compareSig(t, name+"."+m.Name(), m.Signature(), cm.Signature())
	}
	if st, ok := s.Underlying().(*types.Struct); ok && !strings.HasPrefix(name, "Broker") {
		for f := range st.Fields() {
			if obj, _, _ := types.LookupFieldOrMethod(c, true, nil, f.Name()); obj == nil {
				t.Errorf("%s.%s is in the stub, not in the core", name, f.Name())
			}
		}
	}
}
