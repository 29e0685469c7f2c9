package topics

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// An Endpoint is one place of a program where a topic is published or
// received: a call of the core, an instantiation of a generic helper that
// makes one, or a method value.
type Endpoint struct {
	Kind Kind
	Type string // the topic, its packages named by path
	Pos  string // file:line:col
	// Via is the generic helper the endpoint was found through
	// (natsbridge.Bridge.Export), "" for a call of the core.
	Via string
	// Generic says the endpoint's type is some instance of the generic
	// type named Type (natsbridge.Imported): it was found where the type
	// arguments are not followed (a generic type instantiated outside a
	// function).
	Generic bool
	// Of is, for the endpoints of a From call written in the argument
	// list of a subscription, the Pos of that subscription, the only one
	// the From gives its type; "" if not known.
	Of string
	// Implicit says the endpoint was found where a generic type's name is
	// written in a function (var s Store[Config]), not at a call of its
	// method: the method may be called through an interface, so the
	// endpoint counts as a match, but it is never reported.
	Implicit bool
	// TestOnly says the endpoint is in a package that only the tests of
	// the package analysed import: no part of its program.
	TestOnly bool

	pos  token.Pos // in the package analysed, NoPos from a fact
	encl string    // the name of the function declaration holding it
}

// InExample reports whether the endpoint is in the package being analysed,
// inside an Example function.
func (e Endpoint) InExample() bool { return e.pos.IsValid() && strings.HasPrefix(e.encl, "Example") }

// TokenPos is the endpoint's position in the package being analysed,
// token.NoPos if it came from another package.
func (e Endpoint) TokenPos() token.Pos { return e.pos }

func (e Endpoint) key() string {
	return fmt.Sprint(e.Kind, "\x00", e.Type, "\x00", e.Pos, "\x00", e.Via, "\x00", e.Generic, "\x00", e.Implicit)
}

// Unknown is the Type of an endpoint whose type this analysis cannot know:
// a type parameter of a generic type's method, say. It may publish or
// receive any type, and the checks assume it does.
const Unknown = "?"

// A TypeInfo is what the checks need of a topic: whether it is an
// interface, and its method set (of an interface, the methods it needs).
type TypeInfo struct {
	Name    string // as a reader writes it: package names, not paths
	Iface   bool
	Core    bool     // a type of the core (Record, DeadLetter), which the core publishes
	Origin  string   // of an instance of a generic type, the key of the generic type
	Methods []string // see methodKey
	// Unsure says the method set is not known (a type a helper of another
	// package builds by name, Box[T]): it counts as implementing every
	// interface.
	Unsure bool
}

// A HelperEndpoint is an endpoint of a generic function whose topic is
// one of the function's type parameters: each instantiation of the
// function makes one, of the type argument at Param.
type HelperEndpoint struct {
	Kind  Kind
	Param int    // -1 for a template
	Pos   string // the call inside the helper
	// Template is, when Param is -1, the type built from the helper's type
	// parameters (Box[T], *T), as a fact carries it: each instantiation
	// makes an endpoint of it, the type arguments put in. Nil if a
	// Template cannot hold it (a struct or function type): each
	// instantiation is then an endpoint of a type not known (Unknown).
	Template *Template
	// Implicit says the endpoint comes from a generic type's name written
	// in the helper, not a call of its method (see Endpoint.Implicit).
	Implicit bool

	// tmpl is, for a helper of this package, the template as a type.
	tmpl types.Type
}

func (h HelperEndpoint) key() string {
	t := ""
	if h.tmpl != nil {
		t = TypeKey(h.tmpl)
	}
	return fmt.Sprint(h.Kind, "\x00", h.Param, "\x00", h.Pos, "\x00", t, "\x00", h.Implicit)
}

// Package is what Collect reads of one type-checked package.
type Package struct {
	Fset  *token.FileSet
	Pkg   *types.Package
	Info  *types.Info
	Files []*ast.File
	// Helper returns the endpoints of a generic function of another
	// package (its fact), nil if it has none.
	Helper func(*types.Func) []HelperEndpoint
}

// Collected is what one package holds.
type Collected struct {
	Endpoints []Endpoint
	Types     map[string]TypeInfo
	// Helpers are the package's generic functions with endpoints of a
	// type parameter.
	Helpers map[*types.Func][]HelperEndpoint
}

// site is an instantiation of the core or of a helper inside encl (nil at
// package level).
type site struct {
	encl   *types.Func
	callee *types.Func
	// targs are the type arguments of callee's type parameters, those of
	// its receiver first (see typeParams).
	targs []types.Type
	pos   token.Pos
	// deadLetter is, for a call of Broker.Handle with Retry, the
	// DeadLetter[T] the broker publishes for it; callee is nil then.
	deadLetter types.Type
	// implicit: a method of a generic type whose name is written here, not
	// a call of it (see Endpoint.Implicit).
	implicit bool
}

// deadLetterOf returns DeadLetter[T] if call is a call of Broker.Handle
// of T with a Retry option in its arguments: the broker publishes the
// values that fail every attempt as DeadLetter[T].
func deadLetterOf(info *types.Info, call *ast.CallExpr) types.Type {
	fn := Callee(info, call)
	if !CoreFunc(fn, "Broker", "Handle") {
		return nil
	}
	inst, ok := info.Instances[CalleeIdent(call.Fun)]
	if !ok || inst.TypeArgs.Len() != 1 {
		return nil
	}
	for _, a := range call.Args {
		c, ok := ast.Unparen(a).(*ast.CallExpr)
		if !ok || !CoreFunc(Callee(info, c), "", "Retry") {
			continue
		}
		tn, ok := fn.Pkg().Scope().Lookup("DeadLetter").(*types.TypeName)
		if !ok {
			return nil
		}
		t, err := types.Instantiate(nil, tn.Type(), []types.Type{inst.TypeArgs.At(0)}, false)
		if err != nil {
			return nil
		}
		return t
	}
	return nil
}

// Collect finds the endpoints of p. The core's own calls are not
// endpoints: it publishes for its users (dead letters) only as they ask.
func Collect(p Package) *Collected {
	c := &Collected{Types: map[string]TypeInfo{}, Helpers: map[*types.Func][]HelperEndpoint{}}
	if p.Pkg.Path() == CorePath {
		return c
	}
	var sites []site
	// The subscription each From call is written in the argument list of.
	fromOf := map[token.Pos]token.Pos{}
	for _, f := range p.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if fn := Callee(p.Info, call); fn == nil || !CoreFunc(fn, "Broker", fn.Name()) {
				return true
			}
			for _, a := range call.Args {
				if c, ok := ast.Unparen(a).(*ast.CallExpr); ok && CoreFunc(Callee(p.Info, c), "", "From") {
					if id := CalleeIdent(c.Fun); id != nil {
						fromOf[id.Pos()] = CalleeIdent(call.Fun).Pos()
					}
				}
			}
			return true
		})
	}
	for _, f := range p.Files {
		for _, d := range f.Decls {
			var encl *types.Func
			// Type expressions that instantiate nothing: the receiver of a
			// method (Store[T] in func (s *Store[T]) Get()) and the right
			// side of an alias declaration.
			skip := map[ast.Node]bool{}
			switch d := d.(type) {
			case *ast.FuncDecl:
				encl, _ = p.Info.Defs[d.Name].(*types.Func)
				if d.Recv != nil {
					skip[d.Recv] = true
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if ts, ok := sp.(*ast.TypeSpec); ok && ts.Assign.IsValid() {
						skip[ts.Type] = true
					}
				}
			}
			// Whether the spec being inspected at package level declares
			// a variable (not only _, an assertion): its value may be put in
			// an interface.
			pkgVar := false
			// Whether it declares a type: an instance without type
			// parameters in it (a field, embedded or not) may be put in an
			// interface too, but for the type itself: a defined type
			// (type X Store[C]) has none of its methods.
			inType, defined := false, map[*ast.Ident]bool{}
			ast.Inspect(d, func(n ast.Node) bool {
				if skip[n] {
					return false
				}
				switch sp := n.(type) {
				case *ast.ValueSpec:
					pkgVar = slices.ContainsFunc(sp.Names, func(id *ast.Ident) bool { return id.Name != "_" })
					inType = false
				case *ast.TypeSpec:
					pkgVar, inType = false, true
					t := sp.Type
					if st, ok := t.(*ast.StarExpr); ok {
						t = st.X
					}
					if id := CalleeIdent(t); id != nil {
						defined[id] = true
					}
				}
				if call, ok := n.(*ast.CallExpr); ok {
					if t := deadLetterOf(p.Info, call); t != nil {
						sites = append(sites, site{encl: encl, deadLetter: t, pos: call.Pos()})
					}
				}
				id, ok := n.(*ast.Ident)
				if !ok {
					return true
				}
				inst, ok := p.Info.Instances[id]
				if !ok {
					// A method of an instance of a generic type, called or
					// taken as a value (s.Watch(b), (*Store[C]).Watch).
					if obj, ok := p.Info.Uses[id].(*types.Func); ok && obj.Signature().Recv() != nil {
						if targs := recvTypeArgs(obj.Signature().Recv().Type()); len(targs) > 0 {
							sites = append(sites, site{encl: encl, callee: obj.Origin(), targs: targs, pos: id.Pos()})
						}
					}
					return true
				}
				switch obj := p.Info.Uses[id].(type) {
				case *types.Func:
					targs := slices.Collect(inst.TypeArgs.Types())
					if recv := obj.Signature().Recv(); recv != nil {
						targs = append(recvTypeArgs(recv.Type()), targs...)
					}
					sites = append(sites, site{encl: encl, callee: obj.Origin(), targs: targs, pos: id.Pos()})
				case *types.TypeName:
					// An instance of a generic type written in a function, a
					// package variable or a field of a type: its methods are followed where they
					// are called, but one may be called through an interface
					// the value is put in, so each counts here, implicitly.
					// Elsewhere (a defined type, a field of a generic type
					// with its type parameter, var _ I = …) nothing counts: the methods are followed at their
					// calls. A method with type parameters of its own is an
					// instance where called.
					if encl == nil && !pkgVar && (!inType || defined[id] || hasTypeParam(inst.Type)) {
						break
					}
					if n, ok := types.Unalias(inst.Type).(*types.Named); ok && n.TypeArgs().Len() > 0 {
						targs := slices.Collect(n.TypeArgs().Types())
						for m := range n.Origin().Methods() {
							if m.Signature().TypeParams().Len() == 0 {
								sites = append(sites, site{encl: encl, callee: m, targs: targs, pos: id.Pos(), implicit: true})
							}
						}
					}
				}
				return true
			})
		}
	}
	// The helpers of this package, to a fixed point: a helper may call
	// another, declared after it. A recursive helper that instantiates
	// itself with a larger type (F[T] calling F[Box[T]]) would grow its
	// templates for ever: the rounds are bounded.
	have := map[string]bool{}
	for round, changed := 0, true; changed && round < maxHelperRounds; round++ {
		changed = false
		for _, s := range sites {
			for _, e := range c.endpointsOf(p, s) {
				h := HelperEndpoint{Kind: e.kind, Param: -1, Pos: e.pos, Implicit: e.implicit}
				if e.tmpl != nil {
					h.Template = e.tmpl
				} else if param, ok := typeParamOf(s.encl, e.typ); ok {
					h.Param = param
				} else if ownTypeParams(s.encl, e.typ) {
					h.tmpl, h.Template = e.typ, templateOf(s.encl, e.typ)
				} else {
					continue
				}
				if k := fmt.Sprint(s.encl.FullName(), h.key()); !have[k] {
					have[k] = true
					c.Helpers[s.encl] = append(c.Helpers[s.encl], h)
					changed = true
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range sites {
		for _, e := range c.endpointsOf(p, s) {
			ep := Endpoint{Kind: e.kind, Type: Unknown, Pos: p.Fset.Position(s.pos).String(), Via: e.via, Implicit: e.implicit, pos: s.pos}
			if e.typ != nil {
				ep.Type = TypeKey(e.typ)
			} else if e.key != "" {
				ep.Type = e.key
			}
			if s.encl != nil {
				ep.encl = s.encl.Name()
			}
			if of, ok := fromOf[s.pos]; ok && (e.kind == Produce || e.kind == Source) && e.via == "" {
				ep.Of = p.Fset.Position(of).String()
			}
			if e.tmpl != nil {
				continue // a helper's: its instantiations make the endpoints
			}
			if e.typ != nil && hasTypeParam(e.typ) {
				if _, ok := typeParamOf(s.encl, e.typ); ok || ownTypeParams(s.encl, e.typ) {
					continue // a helper's: its instantiations make the endpoints
				}
				// Unresolved: some instance of a generic type, or any type.
				ep.Type = Unknown
				if n, ok := types.Unalias(e.typ).(*types.Named); ok && n.TypeArgs().Len() > 0 {
					ep.Type, ep.Generic = originKey(n), true
				}
			}
			if seen[ep.key()] {
				continue
			}
			seen[ep.key()] = true
			c.Endpoints = append(c.Endpoints, ep)
			switch {
			case ep.Generic || ep.Type == Unknown:
			case e.typ != nil:
				c.addType(e.typ)
			case e.key != "":
				if _, ok := c.Types[e.key]; !ok {
					c.Types[e.key] = e.info
				}
			}
		}
	}
	return c
}

// found is an endpoint of a site before its type is known to be concrete.
type found struct {
	kind Kind
	typ  types.Type // nil if not known: a template a fact could not carry
	pos  string     // the call in a helper, for a HelperEndpoint
	via  string
	// implicit: found through a generic type's name, not a call
	implicit bool
	// key and info are, when typ is nil, the type as a Template of
	// another package's helper expands it by name ("" if not known).
	key  string
	info TypeInfo
	// tmpl is, for a template of another package's helper instantiated
	// with this function's type parameters, the template composed: the
	// endpoint is this function's, as a helper.
	tmpl *Template
}

// endpointsOf returns the endpoints site s makes: a call of the core, or
// an instantiation of a helper.
func (c *Collected) endpointsOf(p Package, s site) []found {
	pos := p.Fset.Position(s.pos).String()
	if s.deadLetter != nil {
		return []found{{kind: Publish, typ: s.deadLetter, pos: pos, via: "the dead letters of Handle with Retry"}}
	}
	fn := s.callee
	if fn.Pkg() != nil && fn.Pkg().Path() == CorePath {
		switch recv := RecvName(fn); {
		case recv == "Broker":
			k, ok := brokerMethods[fn.Name()]
			if !ok || len(s.targs) < 1 {
				return nil
			}
			t := s.targs[0]
			if k.Receives() {
				if elem, ok := recordElem(t); ok {
					t = elem
				}
			}
			return []found{{kind: k, typ: t, pos: pos}}
		case recv == "" && fn.Name() == "From" && len(s.targs) == 2:
			return []found{{kind: Produce, typ: s.targs[0], pos: pos}, {kind: Source, typ: s.targs[1], pos: pos}}
		}
		return nil
	}
	hs := c.Helpers[fn]
	if fn.Pkg() != p.Pkg && p.Helper != nil {
		// Another package's, as its fact carries it: without the
		// template as a type, which only a driver keeping facts in memory
		// would have.
		hs = slices.Clone(p.Helper(fn))
		for i := range hs {
			hs[i].tmpl = nil
		}
	}
	var out []found
	for _, h := range hs {
		f := found{kind: h.Kind, pos: pos, via: FuncName(fn), implicit: s.implicit || h.Implicit}
		switch {
		case h.tmpl != nil:
			if f.typ = subst(h.tmpl, typeParams(fn), s.targs); f.typ != nil {
				out = append(out, f)
			}
		case h.Param < 0: // a template of another package's helper
			if h.Template == nil {
				out = append(out, f) // a type not known
				continue
			}
			if slices.ContainsFunc(s.targs, hasTypeParam) {
				// Instantiated with type parameters of s.encl: a
				// template of s.encl, if they are all its own.
				var as []*Template
				for _, a := range s.targs {
					as = append(as, templateOf(s.encl, a))
				}
				if !slices.Contains(as, nil) {
					f.tmpl = h.Template.compose(as)
				}
				out = append(out, f)
				continue
			}
			if h.Template.byName() {
				var ok bool
				if f.key, f.info, ok = h.Template.expand(s.targs); !ok {
					continue // too few type arguments: dropped
				}
			} else if f.typ = h.Template.build(s.targs, fn.Pkg()); f.typ == nil {
				continue
			}
			out = append(out, f)
		case h.Param < len(s.targs):
			f.typ = s.targs[h.Param]
			out = append(out, f)
		}
	}
	return out
}

// maxHelperRounds bounds the rounds that find the helpers of a package.
const maxHelperRounds = 8

// ownTypeParams reports whether t mentions type parameters, all of them
// encl's own.
func ownTypeParams(encl *types.Func, t types.Type) bool {
	if encl == nil || !hasTypeParam(t) {
		return false
	}
	own := true
	walkTypeParams(t, func(tp *types.TypeParam) {
		if tp == nil {
			own = false
		} else if _, ok := typeParamOf(encl, tp); !ok {
			own = false
		}
	})
	return own
}

// walkTypeParams calls f with each type parameter t mentions, in the
// types subst rebuilds.
func walkTypeParams(t types.Type, f func(*types.TypeParam)) {
	switch t := types.Unalias(t).(type) {
	case *types.TypeParam:
		f(t)
	case *types.Pointer:
		walkTypeParams(t.Elem(), f)
	case *types.Slice:
		walkTypeParams(t.Elem(), f)
	case *types.Array:
		walkTypeParams(t.Elem(), f)
	case *types.Chan:
		walkTypeParams(t.Elem(), f)
	case *types.Map:
		walkTypeParams(t.Key(), f)
		walkTypeParams(t.Elem(), f)
	case *types.Named:
		for a := range t.TypeArgs().Types() {
			walkTypeParams(a, f)
		}
	default:
		if hasTypeParam(t) {
			f(nil) // a function or struct type: not rebuilt
		}
	}
}

// subst is t with the type parameters tps replaced by the type arguments
// args; nil if t is built in a way it does not rebuild.
func subst(t types.Type, tps []*types.TypeParam, args []types.Type) types.Type {
	switch t := types.Unalias(t).(type) {
	case *types.TypeParam:
		if i := slices.Index(tps, t); i >= 0 && i < len(args) {
			return args[i]
		}
		return nil
	case *types.Pointer:
		if e := subst(t.Elem(), tps, args); e != nil {
			return types.NewPointer(e)
		}
	case *types.Slice:
		if e := subst(t.Elem(), tps, args); e != nil {
			return types.NewSlice(e)
		}
	case *types.Array:
		if e := subst(t.Elem(), tps, args); e != nil {
			return types.NewArray(e, t.Len())
		}
	case *types.Chan:
		if e := subst(t.Elem(), tps, args); e != nil {
			return types.NewChan(t.Dir(), e)
		}
	case *types.Map:
		k, e := subst(t.Key(), tps, args), subst(t.Elem(), tps, args)
		if k != nil && e != nil {
			return types.NewMap(k, e)
		}
	case *types.Named:
		if t.TypeArgs().Len() == 0 {
			return t
		}
		var as []types.Type
		for a := range t.TypeArgs().Types() {
			s := subst(a, tps, args)
			if s == nil {
				return nil
			}
			as = append(as, s)
		}
		if inst, err := types.Instantiate(nil, t.Origin(), as, false); err == nil {
			return inst
		}
	default:
		if !hasTypeParam(t) {
			return t
		}
	}
	return nil
}

// typeParamOf reports whether t is a type parameter of the generic
// function or method encl itself, and its index.
func typeParamOf(encl *types.Func, t types.Type) (int, bool) {
	tp, ok := t.(*types.TypeParam)
	if !ok || encl == nil {
		return 0, false
	}
	if i := slices.Index(typeParams(encl), tp); i >= 0 {
		return i, true
	}
	return 0, false
}

// typeParams are the type parameters of f: those of its receiver, for a
// method of a generic type, then its own. An instantiation of f gives
// their type arguments in this order.
func typeParams(f *types.Func) []*types.TypeParam {
	sig := f.Signature()
	var out []*types.TypeParam
	for i := range sig.RecvTypeParams().Len() {
		out = append(out, sig.RecvTypeParams().At(i))
	}
	for i := range sig.TypeParams().Len() {
		out = append(out, sig.TypeParams().At(i))
	}
	return out
}

// recvTypeArgs are the type arguments of the receiver type t (T or *T),
// none if it is not an instance of a generic type.
func recvTypeArgs(t types.Type) []types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return slices.Collect(n.TypeArgs().Types())
	}
	return nil
}

// HasTypeParam reports whether t mentions a type parameter: its size, for
// one, is not known.
func HasTypeParam(t types.Type) bool { return hasTypeParam(t) }

// hasTypeParam reports whether t mentions a type parameter.
func hasTypeParam(t types.Type) bool {
	switch t := types.Unalias(t).(type) {
	case *types.TypeParam:
		return true
	case *types.Pointer:
		return hasTypeParam(t.Elem())
	case *types.Slice:
		return hasTypeParam(t.Elem())
	case *types.Array:
		return hasTypeParam(t.Elem())
	case *types.Chan:
		return hasTypeParam(t.Elem())
	case *types.Map:
		return hasTypeParam(t.Key()) || hasTypeParam(t.Elem())
	case *types.Named:
		for a := range t.TypeArgs().Types() {
			if hasTypeParam(a) {
				return true
			}
		}
	case *types.Signature:
		return hasTypeParam(t.Params()) || hasTypeParam(t.Results())
	case *types.Tuple:
		for v := range t.Variables() {
			if hasTypeParam(v.Type()) {
				return true
			}
		}
	case *types.Struct:
		for v := range t.Fields() {
			if hasTypeParam(v.Type()) {
				return true
			}
		}
	case *types.Interface:
		for m := range t.ExplicitMethods() {
			if hasTypeParam(m.Type()) {
				return true
			}
		}
		for e := range t.EmbeddedTypes() {
			if hasTypeParam(e) {
				return true
			}
		}
	}
	return false
}

// FuncName names f as a reader writes it: pkg.Func or pkg.Type.Method.
func FuncName(f *types.Func) string {
	name := f.Name()
	if r := RecvName(f); r != "" {
		name = r + "." + name
	}
	if f.Pkg() != nil {
		name = f.Pkg().Name() + "." + name
	}
	return name
}

// TypeKey names t by the paths of its packages, through its aliases: two
// topics are one if their keys are equal.
func TypeKey(t types.Type) string { return types.TypeString(canon(t), nil) }

func (c *Collected) addType(t types.Type) {
	k := TypeKey(t)
	if old, ok := c.Types[k]; ok && !old.Unsure {
		return
	}
	ti := TypeInfo{
		Name:  types.TypeString(canon(t), func(p *types.Package) string { return p.Name() }),
		Iface: types.IsInterface(t),
		Core:  IsCore(t),
	}
	if n, ok := types.Unalias(t).(*types.Named); ok && n.TypeArgs().Len() > 0 {
		ti.Origin = originKey(n)
	}
	ms := types.NewMethodSet(t)
	for sel := range ms.Methods() {
		// A method with type parameters of its own implements no
		// interface method.
		if f := sel.Obj().(*types.Func); f.Signature().TypeParams().Len() == 0 {
			ti.Methods = append(ti.Methods, methodKey(f))
		}
	}
	slices.Sort(ti.Methods)
	c.Types[k] = ti
}

// methodKey names a method and its signature without parameter names:
// a type implements an interface if its method set holds every key of the
// interface's.
func methodKey(f *types.Func) string {
	var b strings.Builder
	if !f.Exported() && f.Pkg() != nil {
		b.WriteString(f.Pkg().Path() + ".")
	}
	b.WriteString(f.Name())
	sig := f.Signature()
	tuple := func(t *types.Tuple, variadic bool) {
		b.WriteByte('(')
		for i := range t.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if variadic && i == t.Len()-1 {
				b.WriteString("...")
			}
			b.WriteString(TypeKey(t.At(i).Type()))
		}
		b.WriteByte(')')
	}
	tuple(sig.Params(), sig.Variadic())
	tuple(sig.Results(), false)
	return b.String()
}

// originKey names the generic type n is an instance of.
func originKey(n *types.Named) string {
	o := n.Origin().Obj()
	if o.Pkg() == nil {
		return o.Name()
	}
	return o.Pkg().Path() + "." + o.Name()
}
