package topicvet

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"

	"github.com/seedaa7df82c/topic/topicvet/internal/topics"
)

// Options reports the options and arguments the core panics on.
var Options = &analysis.Analyzer{
	Name: "topicoptions",
	Doc: `report an option or argument that makes package topic panic, as far as constants tell

The core panics on misuse when the call runs: a handler's option (Retry,
AttemptTimeout, DiscardOnStop) given to Subscribe or Broker.Follow; From
or Overflow given to a follower; Buffer given to Broker.Follow; AckWait
without Follow, or on a follower without a Name; a RetryPolicy literal
with fewer than one attempt, a negative delay or a Jitter outside [0, 1];
a constant Buffer above MaxBuffer or MaxBufferBytes; a Retention literal
whose Count is not positive or whose Age is negative, or with an Age and
NoTime; Retain of an interface or Record type; Follow of a Record type;
an unknown Overflow policy; Watch with an interval that is not positive;
nil for a function or a context. The check reports what is certain at
compile time: options written as calls in the argument list, constant
values, literals. An option list spread from a slice (opts...) hides which
options are missing, so the checks that need one absent (AckWait without
Name) say nothing then.

In a test file, a misuse inside a function literal without parameters
(wantPanic("...", func() { ... })), or in a function that defers a call of
recover, is taken as a test of the panic and not reported.`,
	URL:      "https://pkg.go.dev/github.com/seedaa7df82c/topic/topicvet",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runOptions,
}

// handlerOnly are the options only Broker.Handle takes.
var handlerOnly = map[string]bool{"Retry": true, "AttemptTimeout": true, "DiscardOnStop": true}

func runOptions(pass *analysis.Pass) (any, error) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	r := topics.NewReporter(pass, "topicoptions")
	info := pass.TypesInfo
	ins.WithStack([]ast.Node{(*ast.CallExpr)(nil)}, func(n ast.Node, push bool, stack []ast.Node) bool {
		if !push {
			return true
		}
		call := n.(*ast.CallExpr)
		if testsPanic(pass, call, stack) {
			return true
		}
		fn := topics.Callee(info, call)
		if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != topics.CorePath {
			return true
		}
		if isMethodExpr(info, call.Fun) && len(call.Args) > 0 {
			// (*topic.Broker).Handle[T](b, f, …): the receiver is the
			// first argument.
			c := *call
			c.Args = call.Args[1:]
			call = &c
		}
		core := fn.Pkg().Scope()
		targ := func(i int) types.Type {
			if inst, ok := info.Instances[topics.CalleeIdent(call.Fun)]; ok && i < inst.TypeArgs.Len() {
				return inst.TypeArgs.At(i)
			}
			return nil
		}
		nilArg := func(i int) bool { return i < len(call.Args) && info.Types[call.Args[i]].IsNil() }
		switch recv := topics.RecvName(fn); {
		case recv == "Broker":
			switch fn.Name() {
			case "Subscribe", "Follow":
				checkOptionList(pass, r, call, fn.Name(), call.Args)
				if t := targ(0); fn.Name() == "Follow" && isRecord(t) {
					r.Report(call.Pos(), "Broker.Follow of a Record type panics: a Follower reads records of the type it follows")
				}
			case "Handle":
				if nilArg(0) {
					r.Report(call.Args[0].Pos(), "Handle panics on a nil function")
				}
				if len(call.Args) > 0 {
					checkOptionList(pass, r, call, "Handle", call.Args[1:])
				}
			case "Retain", "RetainLatest":
				if fn.Name() == "RetainLatest" && nilArg(0) {
					r.Report(call.Args[0].Pos(), "RetainLatest panics on a nil key function")
				}
				if t := targ(0); t != nil && !hasTypeParamT(t) && types.IsInterface(t) {
					r.Report(call.Pos(), fn.Name()+" of an interface type panics: its publications have no one type")
				} else if isRecord(t) {
					r.Report(call.Pos(), fn.Name()+" of a Record type panics: retain its value type")
				}
				if len(call.Args) > 0 {
					checkRetention(pass, r, call.Args[len(call.Args)-1])
				}
			case "Watch":
				if len(call.Args) == 2 {
					if v := info.Types[call.Args[0]].Value; v != nil && constant.Sign(v) <= 0 {
						r.Report(call.Args[0].Pos(), "Watch panics: its interval must be positive")
					}
					if nilArg(1) {
						r.Report(call.Args[1].Pos(), "Watch panics on a nil function")
					}
				}
			case "TimeCalls":
				if nilArg(0) {
					r.Report(call.Args[0].Pos(), "TimeCalls panics on a nil function")
				}
			}
		case recv == "":
			switch fn.Name() {
			case "From":
				if nilArg(0) {
					r.Report(call.Args[0].Pos(), "From with a nil function makes Subscribe panic")
				}
			case "Context":
				if nilArg(0) {
					r.Report(call.Args[0].Pos(), "Context with a nil context makes Subscribe panic")
				}
			case "Retry":
				if len(call.Args) == 1 {
					checkRetry(pass, r, call.Args[0])
				}
			case "Buffer":
				if len(call.Args) == 1 {
					checkBuffer(pass, r, core, call.Args[0], targ(0))
				}
			case "Overflow":
				if len(call.Args) == 1 {
					v := info.Types[call.Args[0]].Value
					dn, do := constValue(core, "DropNewest"), constValue(core, "DropOldest")
					if v != nil && dn != nil && do != nil && !constant.Compare(v, token.EQL, dn) && !constant.Compare(v, token.EQL, do) {
						r.Report(call.Args[0].Pos(), "Overflow panics on an unknown policy: use DropNewest or DropOldest")
					}
				}
			}
		}
		return true
	})
	return nil, nil
}

// testsPanic reports whether n, in a test file, is or is inside (stack) a
// function literal without parameters or a function that defers a
// recover: a test of the panic.
func testsPanic(pass *analysis.Pass, n ast.Node, stack []ast.Node) bool {
	if !strings.HasSuffix(pass.Fset.Position(n.Pos()).Filename, "_test.go") {
		return false
	}
	for i := len(stack); i >= 0; i-- {
		m := n
		if i < len(stack) {
			m = stack[i]
		}
		var body *ast.BlockStmt
		switch f := m.(type) {
		case *ast.FuncLit:
			if f.Type.Params.NumFields() == 0 {
				return true
			}
			body = f.Body
		case *ast.FuncDecl:
			body = f.Body
		default:
			continue
		}
		if body != nil && defersRecover(body) {
			return true
		}
	}
	return false
}

// defersRecover reports whether body defers a function literal that calls
// recover.
func defersRecover(body *ast.BlockStmt) bool {
	found := false
	for _, st := range body.List {
		d, ok := st.(*ast.DeferStmt)
		if !ok {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "recover" {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// checkOptionList reports the options of call (to Subscribe, Follow or
// Handle) that make it panic.
func checkOptionList(pass *analysis.Pass, r *topics.Reporter, call *ast.CallExpr, method string, args []ast.Expr) {
	opaque := call.Ellipsis.IsValid()
	given := map[string]ast.Expr{}
	for _, a := range args {
		c, ok := ast.Unparen(a).(*ast.CallExpr)
		fn := (*types.Func)(nil)
		if ok {
			fn = topics.Callee(pass.TypesInfo, c)
		}
		if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != topics.CorePath || topics.RecvName(fn) != "" {
			opaque = true // an option this check cannot see into
			continue
		}
		given[fn.Name()] = a
	}
	_, follows := given["Follow"]
	follower := method == "Follow" || follows
	name := map[string]string{"Subscribe": "Subscribe", "Follow": "Broker.Follow", "Handle": "Handle"}[method]
	for opt, a := range given {
		switch {
		case handlerOnly[opt] && method != "Handle":
			r.Report(a.Pos(), fmt.Sprintf("%s is an option of Broker.Handle: %s panics", opt, name))
		case (opt == "From" || opt == "Overflow") && follower:
			r.Report(a.Pos(), fmt.Sprintf("%s is not an option of a follower: %s panics", opt, name))
		case opt == "Buffer" && method == "Follow":
			r.Report(a.Pos(), "Buffer is not an option of Broker.Follow: it panics")
		case opt == "AckWait" && !follower && !opaque:
			r.Report(a.Pos(), fmt.Sprintf("AckWait is an option of a follower (the Follow option, or Broker.Follow): %s panics", name))
		case opt == "AckWait" && follower && given["Name"] == nil && !opaque:
			r.Report(a.Pos(), fmt.Sprintf("AckWait needs a Name: only a durable follower commits; %s panics", name))
		}
	}
}

// checkRetry reports a RetryPolicy literal Retry panics on.
func checkRetry(pass *analysis.Pass, r *topics.Reporter, arg ast.Expr) {
	fields, ok := literalFields(pass, arg, "RetryPolicy")
	if !ok {
		return
	}
	attempts, given := fields["Attempts"]
	if !given {
		r.Report(arg.Pos(), "Retry makes Handle panic: RetryPolicy.Attempts must be at least 1 (the literal leaves it zero)")
	} else if v := pass.TypesInfo.Types[attempts].Value; v != nil && constant.Compare(v, token.LSS, constant.MakeInt64(1)) {
		r.Report(attempts.Pos(), "Retry makes Handle panic: RetryPolicy.Attempts must be at least 1")
	}
	for _, f := range []string{"Base", "Max"} {
		if e, ok := fields[f]; ok {
			if v := pass.TypesInfo.Types[e].Value; v != nil && constant.Sign(v) < 0 {
				r.Report(e.Pos(), "Retry makes Handle panic: RetryPolicy delays must not be negative")
			}
		}
	}
	if e, ok := fields["Jitter"]; ok {
		if v := pass.TypesInfo.Types[e].Value; v != nil && (constant.Sign(v) < 0 || constant.Compare(v, token.GTR, constant.MakeInt64(1))) {
			r.Report(e.Pos(), "Retry makes Handle panic: RetryPolicy.Jitter must be in [0, 1]")
		}
	}
}

// checkRetention reports a Retention literal Retain panics on.
func checkRetention(pass *analysis.Pass, r *topics.Reporter, arg ast.Expr) {
	fields, ok := literalFields(pass, arg, "Retention")
	if !ok {
		return
	}
	value := func(f string) constant.Value {
		if e, ok := fields[f]; ok {
			return pass.TypesInfo.Types[e].Value
		}
		return nil
	}
	if _, given := fields["Count"]; !given {
		r.Report(arg.Pos(), "Retention.Count must be positive (the literal leaves it zero): Retain panics")
	} else if v := value("Count"); v != nil && constant.Sign(v) <= 0 {
		r.Report(fields["Count"].Pos(), "Retention.Count must be positive: Retain panics")
	}
	age := value("Age")
	if age != nil && constant.Sign(age) < 0 {
		r.Report(fields["Age"].Pos(), "Retention.Age must not be negative: Retain panics")
	}
	if nt := value("NoTime"); nt != nil && constant.BoolVal(nt) && age != nil && constant.Sign(age) > 0 {
		r.Report(fields["Age"].Pos(), "Retention.Age needs times: with NoTime set, Retain panics")
	}
}

// checkBuffer reports a constant Buffer the core refuses.
func checkBuffer(pass *analysis.Pass, r *topics.Reporter, core *types.Scope, arg ast.Expr, t types.Type) {
	v := pass.TypesInfo.Types[arg].Value
	maxN, maxBytes := constValue(core, "MaxBuffer"), constValue(core, "MaxBufferBytes")
	if v == nil || maxN == nil || maxBytes == nil {
		return
	}
	if constant.Compare(v, token.GTR, maxN) {
		r.Report(arg.Pos(), fmt.Sprintf("Buffer(%s) is above MaxBuffer (%s values): Subscribe panics", v, maxN))
		return
	}
	if t == nil || hasTypeParamT(t) || constant.Sign(v) <= 0 {
		return
	}
	size := sizeof(pass.TypesSizes, t)
	if size > 0 && constant.Compare(constant.BinaryOp(v, token.MUL, constant.MakeInt64(size)), token.GTR, maxBytes) {
		r.Report(arg.Pos(), fmt.Sprintf("Buffer(%s) of %s takes more than MaxBufferBytes (%s): Subscribe panics", v, types.TypeString(t, types.RelativeTo(pass.Pkg)), maxBytes))
	}
}

// literalFields returns the fields of e, a composite literal of the
// core's struct type name, by field name.
func literalFields(pass *analysis.Pass, e ast.Expr, name string) (map[string]ast.Expr, bool) {
	lit, ok := ast.Unparen(e).(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	n, ok := types.Unalias(pass.TypesInfo.TypeOf(lit)).(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != topics.CorePath || n.Obj().Name() != name {
		return nil, false
	}
	st, ok := n.Underlying().(*types.Struct)
	if !ok {
		return nil, false
	}
	fields := map[string]ast.Expr{}
	for i, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok {
				fields[id.Name] = kv.Value
			}
		} else if i < st.NumFields() {
			fields[st.Field(i).Name()] = el
		}
	}
	return fields, true
}

// constValue is the value of the core's constant name, nil if it has none.
func constValue(core *types.Scope, name string) constant.Value {
	if c, ok := core.Lookup(name).(*types.Const); ok {
		return c.Val()
	}
	return nil
}

// isRecord reports whether t is an instance of the core's Record.
func isRecord(t types.Type) bool {
	if t == nil {
		return false
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == topics.CorePath && n.Obj().Name() == "Record"
}

// hasTypeParamT reports whether t mentions a type parameter, whose type
// argument is not known here.
func hasTypeParamT(t types.Type) bool { return topics.HasTypeParam(t) }

// sizeof is the size of t, 0 if go/types cannot tell: a type declared in a
// generic function may hold its type parameters, for which go/types
// panics.
func sizeof(sizes types.Sizes, t types.Type) (size int64) {
	defer func() {
		if recover() != nil {
			size = 0
		}
	}()
	return sizes.Sizeof(t)
}

// isMethodExpr reports whether fun is a method expression, (*T).M, through
// parentheses and an explicit instantiation.
func isMethodExpr(info *types.Info, fun ast.Expr) bool {
	f, ok := topics.CalleeExpr(fun).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	sel, ok := info.Selections[f]
	return ok && sel.Kind() == types.MethodExpr
}
