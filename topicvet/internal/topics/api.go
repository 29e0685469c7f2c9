// Package topics finds the publications and receptions of a program that
// uses package topic (github.com/seedaa7df82c/topic) in its type
// information, follows them through generic helpers, and decides what the
// checks of topicvet report. The analyzers and topicvet graph share it.
//
// The API is matched by package path and name through go/types: nothing
// here imports the core.
package topics

import (
	"go/ast"
	"go/types"
)

// CorePath is the import path of the core package.
const CorePath = "github.com/seedaa7df82c/topic"

// Kind says what an endpoint does with its type.
type Kind uint8

const (
	Publish   Kind = iota // Broker.Publish, Broker.Append
	Subscribe             // Broker.Subscribe
	Handle                // Broker.Handle
	Follow                // Broker.Follow
	Read                  // Broker.Read
	Retain                // Broker.Retain, Broker.RetainLatest
	Source                // the Sub of From[Pub, Sub]: a subscription receives it
	Produce               // the Pub of From[Pub, Sub]: a subscription is given it
)

var (
	kindNames = [...]string{"publish", "subscribe", "handle", "follow", "read", "retain", "from-source", "from-produce"}
	kindDone  = [...]string{"published", "subscribed", "handled", "followed", "read", "retained", "received by From", "made by From"}
)

// Done is the past participle of k, for a list of what is done to a topic.
func (k Kind) Done() string { return kindDone[k] }

func (k Kind) String() string { return kindNames[k] }

// Receives reports whether an endpoint of kind k takes publications of its
// type from the broker.
func (k Kind) Receives() bool { return k >= Subscribe && k <= Source }

// Subscribes reports whether k is a subscription a user waits on, the kind
// the check "received, never published" looks at.
func (k Kind) Subscribes() bool { return k >= Subscribe && k <= Read }

// brokerMethods are the methods of *topic.Broker whose first type
// argument is a topic, with what they do with it.
var brokerMethods = map[string]Kind{
	"Publish":      Publish,
	"Append":       Publish,
	"Subscribe":    Subscribe,
	"Handle":       Handle,
	"Follow":       Follow,
	"Read":         Read,
	"Retain":       Retain,
	"RetainLatest": Retain,
}

// BrokerMethods lists the names matched on *topic.Broker, for the test
// that keeps them true to the core.
func BrokerMethods() []string {
	var names []string
	for n := range brokerMethods {
		names = append(names, n)
	}
	return names
}

// CoreFunc reports whether obj is the function or method name of the core
// (a method of Broker when recv is "Broker", of Follower[T] when
// "Follower", a package function when "").
func CoreFunc(f *types.Func, recv, name string) bool {
	if f == nil || f.Pkg() == nil || f.Pkg().Path() != CorePath || f.Name() != name {
		return false
	}
	return RecvName(f) == recv
}

// RecvName is the name of the type whose method f is, "" for a function.
func RecvName(f *types.Func) string {
	sig, ok := f.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return ""
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

// CalleeExpr is the expression that names the function of call, fun,
// through parentheses and explicit instantiation: a selector, an
// identifier, or another expression for a function value.
func CalleeExpr(fun ast.Expr) ast.Expr {
	for {
		switch f := fun.(type) {
		case *ast.ParenExpr:
			fun = f.X
		case *ast.IndexExpr:
			fun = f.X
		case *ast.IndexListExpr:
			fun = f.X
		default:
			return fun
		}
	}
}

// CalleeIdent is the identifier that names the function of call, through
// parentheses, explicit instantiation and a selector: the key of its
// instance in types.Info.Instances. It is nil for a function value.
func CalleeIdent(fun ast.Expr) *ast.Ident {
	switch f := CalleeExpr(fun).(type) {
	case *ast.SelectorExpr:
		return f.Sel
	case *ast.Ident:
		return f
	}
	return nil
}

// Callee is the generic origin of the function or method call names, nil if
// it names none.
func Callee(info *types.Info, call *ast.CallExpr) *types.Func {
	id := CalleeIdent(call.Fun)
	if id == nil {
		return nil
	}
	f, _ := info.Uses[id].(*types.Func)
	if f != nil {
		f = f.Origin()
	}
	return f
}

// IsCore reports whether t is a named type of the core (Record,
// DeadLetter, Incident...), or a pointer to one.
func IsCore(t types.Type) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == CorePath
}

// recordElem is T if t is topic.Record[T]: a subscription to it receives
// the publications of T.
func recordElem(t types.Type) (types.Type, bool) {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != CorePath || n.Obj().Name() != "Record" || n.TypeArgs().Len() != 1 {
		return nil, false
	}
	return n.TypeArgs().At(0), true
}
