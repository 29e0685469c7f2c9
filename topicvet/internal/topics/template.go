package topics

import (
	"go/types"
	"slices"
)

// A Template is a type built from the type parameters of a generic helper
// (*T, []T, Box[T], map[string]T), in a form a fact carries to other
// packages: each instantiation of the helper puts in its type arguments.
type Template struct {
	Op    string // one of the tmpl* constants
	Param int    // tmplParam: the index of the helper's type parameter
	Kind  int    // tmplBasic: the types.BasicKind
	Len   int64  // tmplArray: the length
	Dir   int    // tmplChan: the types.ChanDir
	Path  string // tmplNamed: the package path of the type
	Name  string // tmplNamed: the type's name in it
	Args  []*Template
}

const (
	tmplParam = "param"
	tmplBasic = "basic"
	tmplAny   = "any"
	tmplPtr   = "ptr"
	tmplSlice = "slice"
	tmplArray = "array"
	tmplMap   = "map"
	tmplChan  = "chan"
	tmplNamed = "named"
)

// templateOf encodes t, a type built from the type parameters of encl;
// nil if t is built in a way a Template does not hold (a struct or
// function type, a type declared inside a function).
func templateOf(encl *types.Func, t types.Type) *Template {
	sub := func(ts ...types.Type) []*Template {
		var out []*Template
		for _, t := range ts {
			x := templateOf(encl, t)
			if x == nil {
				return nil
			}
			out = append(out, x)
		}
		return out
	}
	switch t := types.Unalias(t).(type) {
	case *types.TypeParam:
		if i, ok := typeParamOf(encl, t); ok {
			return &Template{Op: tmplParam, Param: i}
		}
	case *types.Basic:
		return &Template{Op: tmplBasic, Kind: int(t.Kind())}
	case *types.Interface:
		if t.Empty() {
			return &Template{Op: tmplAny}
		}
	case *types.Pointer:
		if as := sub(t.Elem()); as != nil {
			return &Template{Op: tmplPtr, Args: as}
		}
	case *types.Slice:
		if as := sub(t.Elem()); as != nil {
			return &Template{Op: tmplSlice, Args: as}
		}
	case *types.Array:
		if as := sub(t.Elem()); as != nil {
			return &Template{Op: tmplArray, Len: t.Len(), Args: as}
		}
	case *types.Chan:
		if as := sub(t.Elem()); as != nil {
			return &Template{Op: tmplChan, Dir: int(t.Dir()), Args: as}
		}
	case *types.Map:
		if as := sub(t.Key(), t.Elem()); as != nil {
			return &Template{Op: tmplMap, Args: as}
		}
	case *types.Named:
		o := t.Origin().Obj()
		if o.Pkg() == nil || o.Parent() != o.Pkg().Scope() {
			return nil // error, or a type declared in a function
		}
		x := &Template{Op: tmplNamed, Path: o.Pkg().Path(), Name: o.Name()}
		if t.TypeArgs().Len() > 0 {
			if x.Args = sub(slices.Collect(t.TypeArgs().Types())...); x.Args == nil {
				return nil
			}
		}
		return x
	}
	return nil
}

// build makes the type of x with the type arguments args put in, the
// named types looked up among from and the packages it imports; nil if
// one is not found.
func (x *Template) build(args []types.Type, from *types.Package) types.Type {
	elems := func() []types.Type {
		var out []types.Type
		for _, a := range x.Args {
			t := a.build(args, from)
			if t == nil {
				return nil
			}
			out = append(out, t)
		}
		return out
	}
	switch x.Op {
	case tmplParam:
		if x.Param < len(args) {
			return args[x.Param]
		}
	case tmplBasic:
		if x.Kind >= 0 && x.Kind < len(types.Typ) && types.Typ[x.Kind] != nil {
			return types.Typ[x.Kind]
		}
	case tmplAny:
		return emptyInterface
	case tmplPtr, tmplSlice, tmplArray, tmplChan, tmplMap:
		es := elems()
		switch {
		case len(es) == 1 && x.Op == tmplPtr:
			return types.NewPointer(es[0])
		case len(es) == 1 && x.Op == tmplSlice:
			return types.NewSlice(es[0])
		case len(es) == 1 && x.Op == tmplArray:
			return types.NewArray(es[0], x.Len)
		case len(es) == 1 && x.Op == tmplChan:
			return types.NewChan(types.ChanDir(x.Dir), es[0])
		case len(es) == 2 && x.Op == tmplMap:
			return types.NewMap(es[0], es[1])
		}
	case tmplNamed:
		pkg := findPackage(from, x.Path, map[*types.Package]bool{})
		if pkg == nil {
			return nil
		}
		tn, ok := pkg.Scope().Lookup(x.Name).(*types.TypeName)
		if !ok {
			return nil
		}
		if len(x.Args) == 0 {
			return tn.Type()
		}
		es := elems()
		if es == nil {
			return nil
		}
		if t, err := types.Instantiate(nil, tn.Type(), es, false); err == nil {
			return t
		}
	}
	return nil
}

// findPackage finds the package of path among from and the packages it
// imports, transitively.
func findPackage(from *types.Package, path string, seen map[*types.Package]bool) *types.Package {
	if from == nil || seen[from] {
		return nil
	}
	seen[from] = true
	if from.Path() == path {
		return from
	}
	for _, imp := range from.Imports() {
		if p := findPackage(imp, path, seen); p != nil {
			return p
		}
	}
	return nil
}
