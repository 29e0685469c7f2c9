package topicvet

// The search for a path that does not call the cancel function is the one
// of golang.org/x/tools/go/analysis/passes/lostcancel (BSD, The Go
// Authors), applied to the cancel functions of package topic.

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/ctrlflow"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/cfg"

	"github.com/seedaa7df82c/topic/topicvet/internal/topics"
)

// Cancel reports a cancel function of package topic discarded or not
// called on every path.
var Cancel = &analysis.Analyzer{
	Name: "topiccancel",
	Doc: `report a cancel or stop function of package topic discarded or not called on every path

Subscribe returns a cancel function; Handle, Watch and TimeCalls a stop
function; Broker.Follow a Follower to Close. Until it is called the broker
keeps the subscription: its buffer, its goroutine for a handler or a
follower, and every publication of its type still offered to it. Like
lostcancel for contexts, the check reports the function assigned to the
blank identifier or left unused, and a path from the call to a return of
the function that does not use it (any use counts: a call, a defer,
passing it on, storing it, a use in a function literal the function
defers, which runs on every return; for a Follower, a call of its Close or
any use but a call of its other methods). A function whose variable
outlives the function (a field, a package variable) is not followed.
Nothing in the body of main.main is reported, discarded or not: its return
ends the program (a function literal in it is a function of its own).
Three more cases are not reported, as no subscription outlives its need
there: a function that calls Shutdown on the same broker (a variable or a
field named the same way), which ends every subscription; a subscription
or handler given the Context option (written in its argument list), which
the broker cancels when the context ends; and a channel subscription
(Subscribe without the Follow option) or a pull follower of a broker the
function makes (a local topic.Broker, or a pointer set to &topic.Broker{}
or new(topic.Broker)), which lives no longer than the broker. In a test
file, a subscription of a broker in a local variable or a parameter is
taken to end with the test's broker, and one in a function literal without
parameters or in a function that defers a recover is taken as a test of a
panic: neither is reported (one of a package-level broker is). Generated
files are not reported.

A subscription meant to live as long as the program says so:

	//topicvet:ignore topiccancel -- lives as long as the program`,
	URL:      "https://pkg.go.dev/github.com/seedaa7df82c/topic/topicvet",
	Requires: []*analysis.Analyzer{inspect.Analyzer, ctrlflow.Analyzer},
	Run:      runCancel,
}

// cancelOf says which result of a method of Broker is to be called, and
// what it is called in a message; ok false for other calls.
func cancelOf(info *types.Info, call *ast.CallExpr) (index int, what string, follower, ok bool) {
	fn := topics.Callee(info, call)
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != topics.CorePath || topics.RecvName(fn) != "Broker" {
		return 0, "", false, false
	}
	switch fn.Name() {
	case "Subscribe":
		return 1, "the cancel function of Subscribe", false, true
	case "Handle", "Watch", "TimeCalls":
		return 0, "the stop function of " + fn.Name(), false, true
	case "Follow":
		return 0, "the Close of the Follower of Broker.Follow", true, true
	}
	return 0, "", false, false
}

func runCancel(pass *analysis.Pass) (any, error) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	r := topics.NewReporter(pass, "topiccancel")
	ins.Preorder([]ast.Node{(*ast.FuncLit)(nil), (*ast.FuncDecl)(nil)}, func(n ast.Node) {
		cancelFunc(pass, r, n)
	})
	return nil, nil
}

// A cancelVar is a local variable holding a cancel function.
type cancelVar struct {
	stmt     ast.Node
	what     string
	follower bool
}

func cancelFunc(pass *analysis.Pass, r *topics.Reporter, node ast.Node) {
	var funcScope *types.Scope
	var body *ast.BlockStmt
	switch v := node.(type) {
	case *ast.FuncLit:
		funcScope, body = pass.TypesInfo.Scopes[v.Type], v.Body
	case *ast.FuncDecl:
		funcScope, body = pass.TypesInfo.Scopes[v.Type], v.Body
	}
	if body == nil || isMainMain(pass, node) {
		return // returning from main.main ends the program
	}
	inTest := strings.HasSuffix(pass.Fset.Position(node.Pos()).Filename, "_test.go")
	if inTest && testsPanic(pass, node, nil) {
		return
	}
	shutdown := shutdowns(pass.TypesInfo, body)
	vars := map[*types.Var]cancelVar{}
	ast.PreorderStack(body, nil, func(n ast.Node, stack []ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false // its own function
		}
		call, ok := n.(*ast.CallExpr)
		if !ok || len(stack) == 0 {
			return true
		}
		index, what, follower, ok := cancelOf(pass.TypesInfo, call)
		if !ok || boundToContext(pass.TypesInfo, call) {
			return true
		}
		if recv := receiverOf(call); recv != nil {
			key := brokerKey(pass.TypesInfo, recv)
			if shutdown[key] || diesWithBroker(pass.TypesInfo, call, key, body) {
				return true
			}
			if v, ok := key.(*types.Var); ok && inTest && v.Parent() != v.Pkg().Scope() {
				return true // the test's own broker
			}
		}
		var id *ast.Ident
		stmt := stack[len(stack)-1]
		switch s := stmt.(type) {
		case *ast.ExprStmt:
			r.Report(call.Pos(), what+" is discarded: the subscription is never cancelled")
			return true
		case *ast.ValueSpec:
			if index < len(s.Names) && len(s.Values) == 1 {
				id = s.Names[index]
			}
		case *ast.AssignStmt:
			if index < len(s.Lhs) && len(s.Rhs) == 1 {
				id, _ = s.Lhs[index].(*ast.Ident)
			}
		}
		if id == nil {
			return true // stored, passed or returned: used elsewhere
		}
		if id.Name == "_" {
			r.Report(id.Pos(), what+" is assigned to _: the subscription is never cancelled")
		} else if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok {
			if funcScope != nil && funcScope.Contains(v.Pos()) {
				vars[v] = cancelVar{stmt, what, follower}
			}
		} else if v, ok := pass.TypesInfo.Defs[id].(*types.Var); ok {
			vars[v] = cancelVar{stmt, what, follower}
		}
		return true
	})
	if len(vars) == 0 {
		return
	}
	cfgs := pass.ResultOf[ctrlflow.Analyzer].(*ctrlflow.CFGs)
	var g *cfg.CFG
	var sig *types.Signature
	switch node := node.(type) {
	case *ast.FuncDecl:
		sig, _ = pass.TypesInfo.Defs[node.Name].Type().(*types.Signature)
		g = cfgs.FuncDecl(node)
	case *ast.FuncLit:
		sig, _ = pass.TypesInfo.Types[node.Type].Type.(*types.Signature)
		g = cfgs.FuncLit(node)
	}
	if sig == nil || g == nil {
		return
	}
	deferred := deferredUses(pass.TypesInfo, body)
	for v, cv := range vars {
		if deferred[v] {
			continue // a deferred function literal uses it, on every path
		}
		if ret := lostPath(pass, g, v, cv, sig); ret != nil {
			r.Report(cv.stmt.Pos(), fmt.Sprintf("%s (%s) is not used on every path: the return at line %d may be reached without it",
				cv.what, v.Name(), pass.Fset.Position(ret.Pos()).Line))
		}
	}
}

// isMainMain reports whether node is the function main of package main.
func isMainMain(pass *analysis.Pass, node ast.Node) bool {
	fd, ok := node.(*ast.FuncDecl)
	return ok && fd.Recv == nil && fd.Name.Name == "main" && pass.Pkg.Name() == "main"
}

// lostPath finds a path through g from the statement that defines v to a
// return that does not use v, and returns that return (nil if none).
func lostPath(pass *analysis.Pass, g *cfg.CFG, v *types.Var, cv cancelVar, sig *types.Signature) *ast.ReturnStmt {
	namedResult := false
	for r := range sig.Results().Variables() {
		namedResult = namedResult || r == v
	}
	uses := func(stmts []ast.Node) bool {
		found := false
		for _, stmt := range stmts {
			ast.PreorderStack(stmt, nil, func(n ast.Node, stack []ast.Node) bool {
				switch n := n.(type) {
				case *ast.Ident:
					if pass.TypesInfo.Uses[n] != v {
						break
					}
					if len(stack) == 0 {
						found = true // a node of its own: a switch's tag, say
						break
					}
					// A Follower's other methods read it; only Close ends it.
					if sel, ok := stack[len(stack)-1].(*ast.SelectorExpr); cv.follower && ok && sel.X == n && sel.Sel.Name != "Close" {
						break
					}
					found = true
				case *ast.ReturnStmt:
					if n.Results == nil && namedResult {
						found = true
					}
				}
				return !found
			})
		}
		return found
	}
	memo := map[*cfg.Block]bool{}
	blockUses := func(b *cfg.Block) bool {
		res, ok := memo[b]
		if !ok {
			res = uses(b.Nodes)
			memo[b] = res
		}
		return res
	}
	var defblock *cfg.Block
	var rest []ast.Node
outer:
	for _, b := range g.Blocks {
		for i, n := range b.Nodes {
			if n == cv.stmt {
				defblock, rest = b, b.Nodes[i+1:]
				break outer
			}
		}
	}
	if defblock == nil || uses(rest) {
		return nil
	}
	if ret := defblock.Return(); ret != nil {
		return ret
	}
	seen := map[*cfg.Block]bool{}
	var search func([]*cfg.Block) *ast.ReturnStmt
	search = func(blocks []*cfg.Block) *ast.ReturnStmt {
		for _, b := range blocks {
			if seen[b] {
				continue
			}
			seen[b] = true
			if blockUses(b) {
				continue
			}
			if ret := b.Return(); ret != nil {
				return ret
			}
			if ret := search(b.Succs); ret != nil {
				return ret
			}
		}
		return nil
	}
	return search(defblock.Succs)
}

// boundToContext reports whether call has a Context option in its argument
// list: the subscription is cancelled when the context ends.
func boundToContext(info *types.Info, call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if c, ok := ast.Unparen(a).(*ast.CallExpr); ok && topics.CoreFunc(topics.Callee(info, c), "", "Context") {
			return true
		}
	}
	return false
}

// deferredUses returns the variables used inside the function literals
// body defers (defer func() { if stop != nil { stop() } }()), which run on
// every return however the variable was assigned after the defer.
func deferredUses(info *types.Info, body *ast.BlockStmt) map[types.Object]bool {
	used := map[types.Object]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its own function, with its own defers
		case *ast.DeferStmt:
			if lit, ok := ast.Unparen(n.Call.Fun).(*ast.FuncLit); ok {
				ast.Inspect(lit.Body, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && info.Uses[id] != nil {
						used[info.Uses[id]] = true
					}
					return true
				})
			}
		}
		return true
	})
	return used
}

// ownBroker reports whether v is a broker body makes: a local variable of
// type topic.Broker, or a pointer initialised with &topic.Broker{},
// new(topic.Broker) or the address of such a variable. A local copy of a
// pointer to a broker made elsewhere (b := s.broker) is not.
func ownBroker(info *types.Info, v *types.Var, body *ast.BlockStmt) bool {
	if v.Pos() < body.Pos() || v.Pos() >= body.End() {
		return false
	}
	if isBroker(v.Type()) {
		return true
	}
	p, ok := types.Unalias(v.Type()).(*types.Pointer)
	if !ok || !isBroker(p.Elem()) {
		return false
	}
	var init ast.Expr
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if info.Defs[id] == v && len(n.Values) == len(n.Names) {
					init = n.Values[i]
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && info.Defs[id] == v && len(n.Rhs) == len(n.Lhs) {
					init = n.Rhs[i]
				}
			}
		}
		return init == nil
	})
	switch e := ast.Unparen(init).(type) {
	case *ast.UnaryExpr: // &topic.Broker{}, &b
		if e.Op != token.AND {
			return false
		}
		switch x := ast.Unparen(e.X).(type) {
		case *ast.CompositeLit:
			return true
		case *ast.Ident:
			w, ok := info.Uses[x].(*types.Var)
			return ok && w != v && isBroker(w.Type()) && ownBroker(info, w, body)
		}
	case *ast.CallExpr: // new(topic.Broker)
		if id, ok := ast.Unparen(e.Fun).(*ast.Ident); ok && len(e.Args) == 1 {
			_, builtin := info.Uses[id].(*types.Builtin)
			return builtin && id.Name == "new"
		}
	}
	return false
}

// isBroker reports whether t is topic.Broker.
func isBroker(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == topics.CorePath && n.Obj().Name() == "Broker"
}

// receiverOf is the broker expression of a call of a Broker method.
func receiverOf(call *ast.CallExpr) ast.Expr {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	if sel, ok := ast.Unparen(fun).(*ast.SelectorExpr); ok {
		return sel.X
	}
	return nil
}

// brokerKey names the broker e denotes: its variable, or the text of a
// longer expression (s.b), through & and parentheses.
func brokerKey(info *types.Info, e ast.Expr) any {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = ast.Unparen(u.X)
	}
	if id, ok := e.(*ast.Ident); ok {
		if obj := info.Uses[id]; obj != nil {
			return obj
		}
	}
	return types.ExprString(e)
}

// shutdowns returns the brokers body calls Shutdown on, in nested
// function literals too (defer func() { b.Shutdown(ctx) }()).
func shutdowns(info *types.Info, body *ast.BlockStmt) map[any]bool {
	keys := map[any]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && topics.CoreFunc(topics.Callee(info, call), "Broker", "Shutdown") {
			if recv := receiverOf(call); recv != nil {
				keys[brokerKey(info, recv)] = true
			}
		}
		return true
	})
	return keys
}

// diesWithBroker reports whether call makes a subscription without a
// goroutine of its own (Subscribe without the Follow option, or
// Broker.Follow) on a broker body makes (see ownBroker), which the
// subscription does not outlive.
func diesWithBroker(info *types.Info, call *ast.CallExpr, key any, body *ast.BlockStmt) bool {
	v, ok := key.(*types.Var)
	if !ok || !ownBroker(info, v, body) {
		return false
	}
	fn := topics.Callee(info, call)
	switch fn.Name() {
	case "Follow":
		return true
	case "Subscribe":
		for _, a := range call.Args {
			if c, ok := ast.Unparen(a).(*ast.CallExpr); ok && topics.CoreFunc(topics.Callee(info, c), "", "Follow") {
				return false
			}
		}
		return !call.Ellipsis.IsValid()
	}
	return false
}
