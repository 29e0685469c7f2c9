package topics

import (
	"cmp"
	"fmt"
	"go/token"
	"go/types"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// A PackageFact carries the endpoints of a package and of every package it
// imports, transitively, to its importers: the analysis of a package sees
// only the facts of the packages it imports directly.
type PackageFact struct {
	Endpoints []Endpoint
	Types     []KeyedType // sorted by key: a fact's encoding must not vary
}

// A KeyedType is a TypeInfo with its key.
type KeyedType struct {
	Key string
	TypeInfo
}

// types returns f's types as a map.
func (f *PackageFact) types() map[string]TypeInfo {
	m := make(map[string]TypeInfo, len(f.Types))
	for _, t := range f.Types {
		m[t.Key] = t.TypeInfo
	}
	return m
}

func (*PackageFact) AFact() {}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (f *PackageFact) String() string { return fmt.Sprintf("topics(%d endpoints)", len(f.Endpoints)) }

// A HelperFact is attached to a generic function or method whose type
// parameters are topics: Publish[T] inside func Send[T any], for example.
type HelperFact struct{ Endpoints []HelperEndpoint }

func (*HelperFact) AFact() {}

func (f *HelperFact) String() string { return fmt.Sprintf("helper%v", f.Endpoints) }

// Gather collects the endpoints of pass's package, exports its facts, and
// returns the program in view: the package and what it imports.
func Gather(pass *analysis.Pass) *Program {
	c := Collect(Package{
		Fset: pass.Fset, Pkg: pass.Pkg, Info: pass.TypesInfo, Files: pass.Files,
		Helper: func(f *types.Func) []HelperEndpoint {
			var h HelperFact
			if pass.ImportObjectFact(f, &h) {
				return h.Endpoints
			}
			return nil
		},
	})
	for fn, hs := range c.Helpers {
		if fn.Pkg() == pass.Pkg && len(hs) > 0 {
			pass.ExportObjectFact(fn, &HelperFact{Endpoints: hs})
		}
	}
	prog := &Program{}
	prog.Add(c.Endpoints, c.Types)
	// The packages the package's own files import, not only its tests:
	// what the others hold is no part of the program. Those come first,
	// so that an endpoint reached both ways is the program's.
	own := map[string]bool{}
	for _, f := range pass.Files {
		if strings.HasSuffix(pass.Fset.File(f.Pos()).Name(), "_test.go") {
			continue
		}
		for _, is := range f.Imports {
			if path, err := strconv.Unquote(is.Path.Value); err == nil {
				own[path] = true
			}
		}
	}
	imports := slices.Clone(pass.Pkg.Imports())
	slices.SortStableFunc(imports, func(a, b *types.Package) int {
		return cmp.Compare(b2i(!own[a.Path()]), b2i(!own[b.Path()]))
	})
	for _, imp := range imports {
		var f PackageFact
		if pass.ImportPackageFact(imp, &f) {
			// Another package's: not in this one, whatever the driver kept
			// of the fact in memory.
			eps := slices.Clone(f.Endpoints)
			for i := range eps {
				eps[i].pos, eps[i].encl = token.NoPos, ""
				if !own[imp.Path()] {
					eps[i].TestOnly = true
				}
			}
			prog.Add(eps, f.types())
		}
	}
	if len(prog.Endpoints) > 0 {
		f := &PackageFact{Endpoints: prog.Endpoints}
		for _, k := range slices.Sorted(maps.Keys(prog.Types)) {
			f.Types = append(f.Types, KeyedType{k, prog.Types[k]})
		}
		pass.ExportPackageFact(f)
	}
	return prog
}
