package topics

import (
	"fmt"
	"go/types"
	"slices"
	"strings"
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
	Name  string // tmplNamed: the type's name in it; tmplKey: as a reader writes it
	// Pkg is, for tmplNamed, the name of the type's package; Iface says
	// the type is an interface.
	Pkg   string
	Iface bool
	Key   string // tmplKey: the key of a type without type parameters
	Args  []*Template
	// Methods are, for a tmplNamed interface, its methods, their
	// signatures as templates; nil if one cannot be held (the interface
	// then counts as receiving every type).
	Methods []TemplateMethod
}

// A TemplateMethod is a method of an interface a Template names.
type TemplateMethod struct {
	Name            string // as methodKey writes it: unexported with its package path
	Variadic        bool
	Params, Results []*Template
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
	tmplKey   = "key" // a type without type parameters, by its key
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
	if !hasTypeParam(t) {
		if b, ok := types.Unalias(t).(*types.Basic); ok {
			return &Template{Op: tmplBasic, Kind: int(b.Kind())}
		}
		if n, ok := types.Unalias(t).(*types.Named); ok {
			if o := n.Obj(); o.Pkg() != nil && o.Parent() != o.Pkg().Scope() {
				return nil // a type declared in a function
			}
		}
		return &Template{Op: tmplKey, Key: TypeKey(t), Name: readerName(t)}
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
		x := &Template{Op: tmplNamed, Path: o.Pkg().Path(), Name: o.Name(), Pkg: o.Pkg().Name(), Iface: types.IsInterface(t)}
		if t.TypeArgs().Len() > 0 {
			if x.Args = sub(slices.Collect(t.TypeArgs().Types())...); x.Args == nil {
				return nil
			}
		}
		if it, ok := t.Underlying().(*types.Interface); ok {
			x.Methods = methodTemplates(encl, it)
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

// readerName is t as a reader writes it: package names, not paths.
func readerName(t types.Type) string {
	return types.TypeString(canon(t), func(p *types.Package) string { return p.Name() })
}

// byName reports whether x names a type (a tmplNamed or tmplKey) at any
// depth: such a template is expanded by name (expand), the same way
// whatever packages a driver's export data holds.
func (x *Template) byName() bool {
	if x.Op == tmplNamed || x.Op == tmplKey {
		return true
	}
	return slices.ContainsFunc(x.Args, (*Template).byName)
}

// expand returns the key of the type of x with the type arguments args
// put in, and its TypeInfo, without looking a type up; ok is false if x
// needs an argument args lacks. The method set of a named type or a
// pointer to one is not known: Unsure says so.
func (x *Template) expand(args []types.Type) (key string, ti TypeInfo, ok bool) {
	var name string
	key, name, ok = x.expandName(args)
	if !ok {
		return "", TypeInfo{}, false
	}
	ti = TypeInfo{Name: name}
	top := x
	if top.Op == tmplPtr && len(top.Args) == 1 {
		top = top.Args[0]
	}
	switch top.Op {
	case tmplNamed:
		ti.Core = top.Path == CorePath
		ti.Iface = top.Iface && top == x
		ti.Unsure = !ti.Iface
		if ti.Iface && x.Methods != nil {
			// An interface's methods not known leave it none: it counts
			// as receiving every type.
			if ms, ok := methodKeys(x.Methods, args); ok {
				ti.Methods = ms
			}
		}
		if top == x && len(x.Args) > 0 {
			ti.Origin = x.Path + "." + x.Name
		}
	case tmplAny:
		ti.Iface = top == x
	}
	return key, ti, true
}

func (x *Template) expandName(args []types.Type) (key, name string, ok bool) {
	var keys, names []string
	for _, a := range x.Args {
		k, n, ok := a.expandName(args)
		if !ok {
			return "", "", false
		}
		keys, names = append(keys, k), append(names, n)
	}
	one := func(prefix string) (string, string, bool) {
		if len(keys) != 1 {
			return "", "", false
		}
		return prefix + keys[0], prefix + names[0], true
	}
	switch x.Op {
	case tmplParam:
		if x.Param >= 0 && x.Param < len(args) {
			return TypeKey(args[x.Param]), readerName(args[x.Param]), true
		}
	case tmplBasic:
		if x.Kind >= 0 && x.Kind < len(types.Typ) && types.Typ[x.Kind] != nil {
			n := types.Typ[x.Kind].Name()
			return n, n, true
		}
	case tmplAny:
		return "any", "any", true
	case tmplKey:
		return x.Key, x.Name, true
	case tmplPtr:
		return one("*")
	case tmplSlice:
		return one("[]")
	case tmplArray:
		return one(fmt.Sprintf("[%d]", x.Len))
	case tmplChan:
		switch types.ChanDir(x.Dir) {
		case types.SendOnly:
			return one("chan<- ")
		case types.RecvOnly:
			return one("<-chan ")
		}
		if len(keys) == 1 && strings.HasPrefix(keys[0], "<-chan") {
			return "chan (" + keys[0] + ")", "chan (" + names[0] + ")", true
		}
		return one("chan ")
	case tmplMap:
		if len(keys) == 2 {
			return "map[" + keys[0] + "]" + keys[1], "map[" + names[0] + "]" + names[1], true
		}
	case tmplNamed:
		key, name = x.Path+"."+x.Name, x.Pkg+"."+x.Name
		if len(keys) > 0 {
			key += "[" + strings.Join(keys, ", ") + "]"
			name += "[" + strings.Join(names, ", ") + "]"
		}
		return key, name, true
	}
	return "", "", false
}

// compose is x with its type parameters replaced by the templates args
// (the type arguments of an instantiation inside another generic
// function, as templates of that function's type parameters); nil if
// one is missing.
func (x *Template) compose(args []*Template) *Template {
	if x.Op == tmplParam {
		if x.Param >= 0 && x.Param < len(args) {
			return args[x.Param]
		}
		return nil
	}
	y := *x
	y.Args = nil
	for _, a := range x.Args {
		b := a.compose(args)
		if b == nil {
			return nil
		}
		y.Args = append(y.Args, b)
	}
	if x.Methods != nil {
		y.Methods = []TemplateMethod{}
		for _, m := range x.Methods {
			n := TemplateMethod{Name: m.Name, Variadic: m.Variadic}
			for _, p := range m.Params {
				if n.Params = append(n.Params, p.compose(args)); n.Params[len(n.Params)-1] == nil {
					y.Methods = nil
					return &y
				}
			}
			for _, r := range m.Results {
				if n.Results = append(n.Results, r.compose(args)); n.Results[len(n.Results)-1] == nil {
					y.Methods = nil
					return &y
				}
			}
			y.Methods = append(y.Methods, n)
		}
	}
	return &y
}

// methodTemplates are the methods of the interface it as templates; nil
// if one cannot be held.
func methodTemplates(encl *types.Func, it *types.Interface) []TemplateMethod {
	var out []TemplateMethod
	for m := range it.Methods() {
		sig := m.Signature()
		tm := TemplateMethod{Name: m.Name(), Variadic: sig.Variadic()}
		if !m.Exported() && m.Pkg() != nil {
			tm.Name = m.Pkg().Path() + "." + m.Name()
		}
		for v := range sig.Params().Variables() {
			x := templateOf(encl, v.Type())
			if x == nil {
				return nil
			}
			tm.Params = append(tm.Params, x)
		}
		for v := range sig.Results().Variables() {
			x := templateOf(encl, v.Type())
			if x == nil {
				return nil
			}
			tm.Results = append(tm.Results, x)
		}
		out = append(out, tm)
	}
	if len(out) == 0 {
		return []TemplateMethod{} // none: not the nil of not known
	}
	return out
}

// methodKeys are the keys (methodKey) of the methods ms with the type
// arguments args put in; ok is false if one cannot be made.
func methodKeys(ms []TemplateMethod, args []types.Type) (keys []string, ok bool) {
	for _, m := range ms {
		var b strings.Builder
		b.WriteString(m.Name)
		tuple := func(ts []*Template, variadic bool) bool {
			b.WriteByte('(')
			for i, t := range ts {
				if i > 0 {
					b.WriteByte(',')
				}
				if variadic && i == len(ts)-1 {
					b.WriteString("...")
				}
				k, _, ok := t.expandName(args)
				if !ok {
					return false
				}
				b.WriteString(k)
			}
			b.WriteByte(')')
			return true
		}
		if !tuple(m.Params, m.Variadic) || !tuple(m.Results, false) {
			return nil, false
		}
		keys = append(keys, b.String())
	}
	slices.Sort(keys)
	return keys, true
}
