package topic

import (
	"reflect"
	"unsafe"
)

// A source is one type a subscription accepts publications of: a From
// source, or the subscription's own type, which is always its last source.
type source interface {
	key() unsafe.Pointer // keyOf the source type
	typ() reflect.Type   // the source type
	owner() subscriber   // the subscription the source belongs to
	// slow reports whether delivery must run outside a publication's guard
	// section: it calls a function of the user's, or takes several steps.
	slow() bool
	// newEntry returns an entry for publications of the source type, which
	// must be concrete.
	newEntry() *entry
}

// A typedSource takes publications whose static type is its source type T.
// It is slow, so it is called outside the guard.
type typedSource[T any] interface {
	source
	deliver(g *guard, v T)
}

// A boxedSource takes publications matched by its interface source type, as
// an interface value. It is called inside the guard unless it is slow.
type boxedSource interface {
	source
	deliverBoxed(g *guard, x any)
}

// isInterface reports whether t is an interface type.
func isInterface(t reflect.Type) bool { return t.Kind() == reflect.Interface }

// anyType is the type any, which matches every publication, nil interface
// values included.
var anyType = reflect.TypeFor[any]()

// decide returns the source of srcs that decides the fate of publications
// routed by e, and whether it takes them boxed; nil if no source matches.
//
// The first source that matches decides: one identical to the static type
// takes the value as it is; an interface source the value's type implements,
// or any, takes it as an interface value. Concrete sources never match a
// publication made through an interface type (e.static is then the
// interface's key), and a nil interface value (e.typ nil) only matches a
// source identical to its static type, or any.
func decide(srcs []source, e *entry) (src source, boxed bool) {
	for _, s := range srcs {
		if s.key() == e.static {
			return s, false
		}
		t := s.typ()
		if t == anyType || isInterface(t) && e.typ != nil && e.typ.Implements(t) {
			return s, true
		}
	}
	return nil, false
}
