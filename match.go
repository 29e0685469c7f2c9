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
// It is slow, so it is called outside the guard. The only source of a
// route is given pub, the count of the publications of the route's entry,
// to count the publication on, in the guard section it enters anyway if
// it enters one; the others are given nil.
type typedSource[T any] interface {
	source
	deliver(g *guard, v T, pub *tally)
}

// A funcSource is a typedSource whose deliver is a closure of its own, which
// a route of that one source calls directly (see route.soloFn).
type funcSource[T any] interface {
	deliverFunc() func(g *guard, v T, pub *tally)
}

// A boxedSource takes publications matched by its interface source type, as
// an interface value: a slow one through deliverBoxed, outside the guard;
// one that is not slow through its outlet, inside the guard (see
// boxedOut.send).
type boxedSource interface {
	source
	// deliverBoxed takes x, whose dynamic type the route matched against
	// the source's type; tab, if not nil, is what tabFor returned for that
	// type, to convert x without the runtime's assertion (see asSource).
	deliverBoxed(g *guard, x any, tab unsafe.Pointer)
	tabFor(t reflect.Type) unsafe.Pointer
	// outlet returns, for a source that is not slow (a plain subscription
	// of an interface type, sent to inside the guard), its channel, its
	// loss counter and its count of values sent; nil for the others.
	outlet() (ch unsafe.Pointer, lost *lossCounter, sent *tally)
}

// A boxedOut is an interface source on a route, with its tabFor the type of
// the values the route's entry routes, and, if it is not slow, its outlet.
type boxedOut struct {
	boxedSource
	tab unsafe.Pointer
	// ch is the source's channel, a chan I of its interface type I, lost
	// its loss counter and sent its count of values sent: send's, without
	// a call through boxedSource.
	ch   unsafe.Pointer
	lost *lossCounter
	sent *tally
}

// newBoxedOut returns src on the route of e.
func newBoxedOut(src boxedSource, e *entry) boxedOut {
	o := boxedOut{boxedSource: src, tab: src.tabFor(e.typ)}
	o.ch, o.lost, o.sent = src.outlet()
	if o.ch != nil && e.typ != nil && o.tab == nil {
		// send relies on it: see there.
		panic("topic: internal error: an interface subscription routed a type it has no itab for")
	}
	return o
}

// ifaceWords are the two words of an interface value: its itab, or for an
// empty interface its type, and its data word.
type ifaceWords struct{ tab, data unsafe.Pointer }

// send offers x to o, a source that is not slow, inside section c of the
// guard: a
// non-blocking send of x as a value of o's interface type I, made of o.tab
// and x's data word as asSource makes it, without the runtime's assertion.
// The route matched x's dynamic type against I, so that x is nil, or has
// the entry's type, of which o.tab is the itab for I (or, for any, the type
// itself; newBoxedOut checked it is not nil).
func (o *boxedOut) send(x any, c section) {
	// Safety: an interface value is two words, the first its itab or type
	// and the second its data word, for I as for any; a nil one is two nil
	// words. The channel is a chan I, whose element the runtime copies by
	// its own element type (two pointer words), so that sending the words
	// through a chan ifaceWords sends the value of I they make. (A struct,
	// not a [2]unsafe.Pointer: the compiler keeps its words apart, where
	// it copied the array's as one 16-byte load of two 8-byte stores, a
	// store-forwarding stall that took a quarter of the publication.)
	w := *(*ifaceWords)(unsafe.Pointer(&x))
	if w.tab != nil {
		w.tab = o.tab
	}
	ch := *(*chan ifaceWords)(unsafe.Pointer(&o.ch))
	select {
	case ch <- w:
		o.sent.addIn(c)
	default:
		o.lost.addFull()
	}
}

// tabOf returns the first word of a value of type t converted to T, an
// interface type t implements: its itab, or for an empty interface its
// type; nil if t is nil or T is not an interface type. It is the same for
// every value of type t, so the routes compute it once (see asSource).
func tabOf[T any](t reflect.Type) unsafe.Pointer {
	if t == nil || !isInterface(reflect.TypeFor[T]()) {
		return nil
	}
	v, ok := reflect.Zero(t).Interface().(T)
	if !ok {
		return nil
	}
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[0]
}

// asSource returns x as a T, an interface type that x's dynamic type
// implements, and whether it could. With tab, tabOf[T] of x's dynamic type,
// it builds the interface value from tab and x's data word, the two words
// of an interface value, where x.(T) would look the itab up (a third of a
// publication to an interface subscription). Without, it asserts.
func asSource[T any](x any, tab unsafe.Pointer) (T, bool) {
	if tab == nil || x == nil {
		v, ok := x.(T)
		return v, ok || x == nil
	}
	var v T
	// Safety: T is an interface type (tabOf returned tab), whose values
	// are two words, the first being tab for every value of x's dynamic
	// type, the second x's data word, shared as conversions share it.
	w := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))
	w[0], w[1] = tab, (*[2]unsafe.Pointer)(unsafe.Pointer(&x))[1]
	return v, true
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
