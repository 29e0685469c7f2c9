package reference_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// The universe of types the fuzz target publishes and subscribes to. The u
// prefix keeps these names apart from the types of other test files.
//
//	type     error  fmt.Stringer  uKinded
//	int
//	uPoint
//	uCount          yes
//	uName           yes           yes
//	*uNode   yes                  yes
//	uCode    yes    yes                     (and so uBoth)
//	uEmpty                        yes
type (
	uPoint struct{ X, Y int }
	uCount int
	uName  string
	uNode  struct{ ID int }
	uCode  int
	uEmpty struct{}

	uKinded interface{ Kind() int }
	uBoth   interface {
		error
		fmt.Stringer
	}
)

func (c uCount) String() string { return "#" + strconv.Itoa(int(c)) }
func (n uName) String() string  { return string(n) }
func (n uName) Kind() int       { return len(n) }
func (c uCode) Error() string   { return "code " + strconv.Itoa(int(c)) }
func (c uCode) String() string  { return strconv.Itoa(int(c)) }
func (uEmpty) Kind() int        { return 0 }

// The methods of *uNode accept a nil receiver, because a nil *uNode is a value
// the fuzz target publishes.
func (n *uNode) Error() string {
	if n == nil {
		return "nil node"
	}
	return "node " + strconv.Itoa(n.ID)
}

func (n *uNode) Kind() int {
	if n == nil {
		return -1
	}
	return n.ID
}

// uNodes interns the *uNode values, so that values delivered by the broker and
// by the model compare equal with ==.
var uNodes = [4]*uNode{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}}

// A fuzzType describes one type T of the universe, with closures that call the
// generic API instantiated with T.
type fuzzType struct {
	name   string
	typ    reflect.Type
	values []any       // values published with static type T; nil stands for a nil interface value
	froms  []*fuzzFrom // the From menu for subscriptions of type T

	publish   func(b *topic.Broker, v any)               // b.Publish[T](v)
	subscribe func(b *topic.Broker, opts []any) fuzzChan // b.Subscribe[T](opts...), opts holding Option[T]
	buffer    func(n int) any                            // topic.Buffer[T](n)
	overflow  func(p topic.Policy) any                   // topic.Overflow[T](p)
	named     func(name string) any                      // topic.Name[T](name)
	onLoss    func(f func(refLoss)) any                  // topic.OnLoss[T] of a function calling f, or of nil if f is
	zero      any                                        // topic.Option[T]{}
	// handle registers b.Handle[T] of a function calling fn, with a
	// queue of fuzzHandlerBuffer values, named name.
	handle func(b *topic.Broker, name string, fn func(v any))
}

// fuzzChan is the real side of one subscription, with the type erased.
type fuzzChan struct {
	tryRecv  func() (v any, ok, ready bool) // a non-blocking receive
	capacity int
	cancel   func()
}

func newFuzzType[T any](name string, values ...T) *fuzzType {
	d := &fuzzType{name: name, typ: reflect.TypeFor[T](), zero: topic.Option[T]{}}
	for _, v := range values {
		d.values = append(d.values, v)
	}
	d.publish = func(b *topic.Broker, v any) { b.Publish[T](fuzzAs[T](v)) }
	d.subscribe = func(b *topic.Broker, opts []any) fuzzChan {
		typed := make([]topic.Option[T], len(opts))
		for i, o := range opts {
			typed[i] = o.(topic.Option[T]) // Safety: the harness only builds options of the subscription's type.
		}
		ch, cancel := b.Subscribe[T](typed...)
		return fuzzChan{
			tryRecv: func() (any, bool, bool) {
				select {
				case v, ok := <-ch:
					return v, ok, true
				default:
					return nil, false, false
				}
			},
			capacity: cap(ch),
			cancel:   cancel,
		}
	}
	d.handle = func(b *topic.Broker, name string, fn func(any)) {
		b.Handle(func(_ context.Context, v T) error {
			fn(v)
			return nil
		}, topic.Buffer[T](fuzzHandlerBuffer), topic.Name[T](name))
	}
	d.buffer = func(n int) any { return topic.Buffer[T](n) }
	d.overflow = func(p topic.Policy) any { return topic.Overflow[T](p) }
	d.named = func(name string) any { return topic.Name[T](name) }
	d.onLoss = func(f func(refLoss)) any {
		if f == nil {
			return topic.OnLoss[T](nil)
		}
		return topic.OnLoss(func(l topic.Loss[T]) {
			f(refLoss{Cause: l.Cause, Value: l.Value, Source: l.Source, Panic: l.Panic, Err: l.Err})
		})
	}
	return d
}

// fuzzAs converts v to T; nil becomes the zero T, a nil interface value.
func fuzzAs[T any](v any) T {
	if v == nil {
		var zero T
		return zero
	}
	return v.(T)
}

// A fuzzFrom is one entry of the From menu: a pure function f from Sub to Pub,
// which may panic.
type fuzzFrom struct {
	name     string
	pub, sub reflect.Type
	call     func(v any) (any, bool) // f, for the model
	option   func(called func()) any // topic.From(f), calling called first each time the broker calls f
}

func newFuzzFrom[Pub, Sub any](name string, f func(Sub) (Pub, bool)) *fuzzFrom {
	return &fuzzFrom{
		name: name,
		pub:  reflect.TypeFor[Pub](),
		sub:  reflect.TypeFor[Sub](),
		call: func(v any) (any, bool) { return f(fuzzAs[Sub](v)) },
		option: func(called func()) any {
			return topic.From(func(s Sub) (Pub, bool) {
				called()
				return f(s)
			})
		},
	}
}

// fuzzMenu holds transforms and filters for every type of the universe, some
// from interface types, some from the subscription's own type, and a few that
// panic on some values, with values of several kinds, nil and runtime errors
// included; every panic value is comparable. Functions of an interface type
// must accept nil, if only by panicking: a nil interface value reaches them
// when it is published with that very type, or when they take any.
var fuzzMenu = []*fuzzFrom{
	newFuzzFrom("int<-uCount", func(c uCount) (int, bool) { return int(c), true }),
	newFuzzFrom("int<-uPoint if X>0", func(p uPoint) (int, bool) { return p.X + p.Y, p.X > 0 }),
	newFuzzFrom("int<-any if int", func(a any) (int, bool) { n, ok := a.(int); return -n, ok }),

	newFuzzFrom("uPoint<-uPoint if X even", func(p uPoint) (uPoint, bool) { return p, p.X%2 == 0 }),
	newFuzzFrom("uPoint<-int", func(n int) (uPoint, bool) { return uPoint{X: n}, true }),
	newFuzzFrom("uPoint<-uKinded if non-nil", func(k uKinded) (uPoint, bool) {
		if k == nil {
			return uPoint{}, false
		}
		return uPoint{Y: k.Kind()}, true
	}),

	newFuzzFrom("uCount<-int if n>=0", func(n int) (uCount, bool) { return uCount(n), n >= 0 }),
	newFuzzFrom("uCount<-uCode", func(c uCode) (uCount, bool) { return uCount(c), true }),
	newFuzzFrom("uCount<-Stringer if non-nil", func(s fmt.Stringer) (uCount, bool) {
		if s == nil {
			return 0, false
		}
		return uCount(len(s.String())), true
	}),
	newFuzzFrom("uCount<-uCount+1 if odd", func(c uCount) (uCount, bool) { return c + 1, c%2 != 0 }),

	newFuzzFrom("uName<-Stringer if non-nil", func(s fmt.Stringer) (uName, bool) {
		if s == nil {
			return "", false
		}
		return uName(s.String()), true
	}),
	newFuzzFrom("uName<-error", func(e error) (uName, bool) {
		if e == nil {
			return "nil error", true
		}
		return uName(e.Error()), true
	}),
	newFuzzFrom("uName<-uName if non-empty", func(n uName) (uName, bool) { return n, n != "" }),

	newFuzzFrom("*uNode<-int if n>0", func(n int) (*uNode, bool) { return uNodes[n&3], n > 0 }),
	newFuzzFrom("*uNode<-uKinded", func(k uKinded) (*uNode, bool) {
		if k == nil {
			return nil, true
		}
		return uNodes[k.Kind()&3], true
	}),
	newFuzzFrom("*uNode<-*uNode if non-nil", func(n *uNode) (*uNode, bool) { return n, n != nil }),

	newFuzzFrom("uCode<-error if non-nil", func(e error) (uCode, bool) {
		if e == nil {
			return 0, false
		}
		return uCode(len(e.Error())), true
	}),
	newFuzzFrom("uCode<-int if even", func(n int) (uCode, bool) { return uCode(n), n%2 == 0 }),
	newFuzzFrom("uCode<-uBoth if uCode", func(b uBoth) (uCode, bool) { c, ok := b.(uCode); return c, ok }),

	newFuzzFrom("uEmpty<-uPoint if X=0", func(p uPoint) (uEmpty, bool) { return uEmpty{}, p.X == 0 }),
	newFuzzFrom("uEmpty<-any if nil", func(a any) (uEmpty, bool) { return uEmpty{}, a == nil }),

	newFuzzFrom("any<-int+1", func(n int) (any, bool) { return n + 1, true }),
	newFuzzFrom("any<-error", func(e error) (any, bool) { return e, true }),
	newFuzzFrom("any<-Stringer as string", func(s fmt.Stringer) (any, bool) {
		if s == nil {
			return nil, false
		}
		return s.String(), true
	}),

	newFuzzFrom("error<-int if n!=0", func(n int) (error, bool) { return uCode(n), n != 0 }),
	newFuzzFrom("error<-error if non-nil", func(e error) (error, bool) { return e, e != nil }),
	newFuzzFrom("error<-uName", func(n uName) (error, bool) { return uCode(len(n)), true }),
	newFuzzFrom("error<-uKinded as nil *uNode", func(uKinded) (error, bool) { return (*uNode)(nil), true }),

	newFuzzFrom("Stringer<-uPoint", func(p uPoint) (fmt.Stringer, bool) { return uCount(p.X), true }),
	newFuzzFrom("Stringer<-uKinded if non-nil", func(k uKinded) (fmt.Stringer, bool) {
		if k == nil {
			return nil, false
		}
		return uName(strconv.Itoa(k.Kind())), true
	}),
	newFuzzFrom("Stringer<-Stringer if non-nil", func(s fmt.Stringer) (fmt.Stringer, bool) { return s, s != nil }),

	newFuzzFrom("uKinded<-error if uKinded", func(e error) (uKinded, bool) { k, ok := e.(uKinded); return k, ok }),
	newFuzzFrom("uKinded<-uCount", func(c uCount) (uKinded, bool) { return uName(c.String()), true }),
	newFuzzFrom("uKinded<-any as nil", func(any) (uKinded, bool) { return nil, true }),

	newFuzzFrom("uBoth<-uCode", func(c uCode) (uBoth, bool) { return c, true }),
	newFuzzFrom("uBoth<-int if n>0", func(n int) (uBoth, bool) { return uCode(n), n > 0 }),
	newFuzzFrom("uBoth<-error if uBoth", func(e error) (uBoth, bool) { b, ok := e.(uBoth); return b, ok }),

	// Panicking functions.
	newFuzzFrom("int<-uCode panics if 0", func(c uCode) (int, bool) {
		if c == 0 {
			panic("uCode 0")
		}
		return int(c), true
	}),
	newFuzzFrom("uCode<-int 1000/n", func(n int) (uCode, bool) { return uCode(1000 / n), n != 1 }),
	newFuzzFrom("uPoint<-uCount panics with it if odd", func(c uCount) (uPoint, bool) {
		if c%2 != 0 {
			panic(c)
		}
		return uPoint{X: int(c)}, true
	}),
	newFuzzFrom("uName<-uKinded panics with nil if nil", func(k uKinded) (uName, bool) {
		if k == nil {
			panic(nil)
		}
		return uName(strconv.Itoa(k.Kind())), k.Kind()%2 == 0
	}),
	newFuzzFrom("error<-any panics with *uNode", func(a any) (error, bool) {
		if n, ok := a.(*uNode); ok {
			panic(n)
		}
		e, ok := a.(error)
		return e, ok
	}),
	newFuzzFrom("uBoth<-uPoint indexes by X", func(p uPoint) (uBoth, bool) { return uCode(fuzzCodes[p.X]), true }),
	newFuzzFrom("uCount<-Stringer panics if nil", func(s fmt.Stringer) (uCount, bool) { return uCount(len(s.String())), true }),
}

// fuzzCodes is indexed out of range by a From function of the menu.
var fuzzCodes = []int{10, 20}

// fuzzUniverse lists the concrete types with the values published with them,
// then the interface types, whose values are nil and every concrete value that
// implements them.
var fuzzUniverse = func() []*fuzzType {
	concrete := []*fuzzType{
		newFuzzType("int", 0, 1, -1, 300),
		newFuzzType("uPoint", uPoint{}, uPoint{1, 2}, uPoint{2, 0}),
		newFuzzType[uCount]("uCount", 0, 1, 7),
		newFuzzType[uName]("uName", "", "a", "bob"),
		newFuzzType[*uNode]("*uNode", uNodes[0], uNodes[1], nil),
		newFuzzType[uCode]("uCode", 0, 404, 500),
		newFuzzType("uEmpty", uEmpty{}),
	}
	interfaces := []*fuzzType{
		newFuzzType[any]("any"),
		newFuzzType[error]("error"),
		newFuzzType[fmt.Stringer]("Stringer"),
		newFuzzType[uKinded]("uKinded"),
		newFuzzType[uBoth]("uBoth"),
	}
	for _, i := range interfaces {
		i.values = []any{nil}
		for _, c := range concrete {
			if c.typ.Implements(i.typ) {
				i.values = append(i.values, c.values...)
			}
		}
	}
	universe := slices.Concat(concrete, interfaces)
	for _, d := range universe {
		for _, f := range fuzzMenu {
			if f.pub == d.typ {
				d.froms = append(d.froms, f)
			}
		}
	}
	return universe
}()

// fuzzHandlers is the menu of handlers: the From functions of the menu from a
// concrete type to a concrete type later in the universe, so that handlers
// publishing to each other always come to an end. A handler of type Sub
// publishes f(v) with static type Pub when f reports true; a panic of f is
// the handler's failure.
var fuzzHandlers = func() []*fuzzFrom {
	index := func(t reflect.Type) int {
		for i, d := range fuzzUniverse {
			if d.typ == t && !isInterfaceType(t) {
				return i
			}
		}
		return -1
	}
	var hs []*fuzzFrom
	for _, f := range fuzzMenu {
		if i, j := index(f.sub), index(f.pub); i >= 0 && j > i {
			hs = append(hs, f)
		}
	}
	return hs
}()

func isInterfaceType(t reflect.Type) bool { return t.Kind() == reflect.Interface }

// fuzzTypeOf returns the universe's description of t.
func fuzzTypeOf(t reflect.Type) *fuzzType {
	for _, d := range fuzzUniverse {
		if d.typ == t {
			return d
		}
	}
	panic("no type " + t.String())
}

// The encoding of an operation sequence, one byte at a time; a missing byte
// reads as zero, and every index is taken modulo the length it indexes.
//
//	op     := subscribe | publish | handle | cancel | drain
//	subscribe: b%8 in {0, 1}, then type, n (n%8 options), then n times one of
//	    b%8 in {0, 7}: Buffer, then c, capacity c%6-1 (so -1..4)
//	    b%8 == 1: the zero Option
//	    b%8 in {2, 3}: From, then an index into the type's menu; a fourth From is the zero Option
//	    b%8 == 4: Overflow, then p, DropNewest if p%2 == 0 else DropOldest
//	    b%8 == 5: OnLoss, then k: k%4 in {0, 1} records, 2 records and panics, 3 is OnLoss(nil)
//	    b%8 == 6: Name, then k: "x" if k%2 == 0 else ""
//	  A subscribe byte b%8 == 0 then adds a last option Name("s<id>"), which
//	  names the subscription uniquely; b%8 == 1 leaves it with the name its
//	  options give, "" by default, shared with others.
//	publish:   b%8 in {2, 3}, then type, value (an index into its values)
//	handle:    b%8 == 4, then k: Shutdown if k%16 == 15, else the handler
//	    fuzzHandlers[k%len]; at most fuzzMaxHandlers handlers are made, the
//	    rest of the handle operations do nothing. A handler's function waits
//	    until Shutdown: until then, it is a subscription no one receives
//	    from. Shutdown happens once, here or at the end of the sequence.
//	cancel:    b%8 == 5, then subscription (any ever made, cancelled ones
//	    included; a handler is not stopped)
//	drain:     b%8 in {6, 7}, then subscription; the whole state is compared first
//
// Shutdown compares and drains every subscription first, then lets the
// handlers go and drains the broker; the operations after it find every
// subscription closed.
const (
	fuzzOpSubscribe     = 0
	fuzzOpSubscribeAnon = 1
	fuzzOpPublish       = 2
	fuzzOpHandle        = 4
	fuzzOpCancel        = 5
	fuzzOpDrain         = 6

	fuzzOptBuffer   = 0
	fuzzOptZero     = 1
	fuzzOptFrom     = 2
	fuzzOptOverflow = 4
	fuzzOptOnLoss   = 5
	fuzzOptName     = 6

	fuzzHookRecord = 0
	fuzzHookPanic  = 2
	fuzzHookNil    = 3

	fuzzMaxOps     = 400
	fuzzMaxFroms   = 3
	fuzzMaxOptions = 7

	fuzzMaxHandlers   = 4
	fuzzHandlerBuffer = 2048 // more than the values that can reach a handler: none is lost
	fuzzShutdown      = 15
)

// fuzzInput reads the encoding.
type fuzzInput []byte

func (in *fuzzInput) next() int {
	if len(*in) == 0 {
		return 0
	}
	b := (*in)[0]
	*in = (*in)[1:]
	return int(b)
}

// fuzzHarness applies the same operations to a real broker and to the model
// and compares them.
type fuzzHarness struct {
	t     testing.TB
	b     topic.Broker
	ref   refBroker
	subs  []*fuzzSub // every subscription made, in order; its index is its id
	byRef map[*refSub]*fuzzSub
	log   []string      // the operations so far, to make a failure reproducible by reading
	gate  chan struct{} // closed at Shutdown: the handlers' functions wait for it
	// handlers counts the handlers made.
	handlers int
	shut     bool // Shutdown was called

	// Guarded by mu: while Shutdown drains, the handlers' goroutines call
	// From and OnLoss functions.
	mu    sync.Mutex
	calls []fuzzCall // From functions the real broker called during the current operation
	hooks int        // OnLoss calls the real broker made during the current operation
}

type fuzzSub struct {
	id      int
	typ     *fuzzType
	froms   int  // number of From sources
	handler bool // a handler: real has no channel
	real    fuzzChan
	ref     *refSub
	// The losses each OnLoss option of the subscription was given, in
	// order, since the last comparison: by the real broker and by the model.
	// Only the last OnLoss option given takes effect.
	realLosses, refLosses [][]refLoss
}

type fuzzCall struct{ sub, source int }

func fuzzRun(t testing.TB, data []byte) {
	h := &fuzzHarness{t: t, byRef: map[*refSub]*fuzzSub{}, gate: make(chan struct{})}
	defer h.open() // a failure must not leave the handlers waiting
	in := fuzzInput(data)
	for n := 0; len(in) > 0 && n < fuzzMaxOps; n++ {
		h.calls, h.hooks = h.calls[:0], 0
		switch op := in.next() % 8; {
		case op < fuzzOpPublish:
			h.subscribe(&in, op == fuzzOpSubscribe)
		case op < fuzzOpHandle:
			h.publish(&in)
			continue
		case op == fuzzOpHandle:
			h.handle(&in)
		case op == fuzzOpCancel:
			if s := h.pick(&in); s != nil && !s.handler {
				h.logf("cancel s%d", s.id)
				s.real.cancel()
				h.ref.Cancel(s.ref)
			}
		default:
			if s := h.pick(&in); s != nil {
				h.check()
				h.drain(s)
			}
		}
		if len(h.calls) > 0 {
			h.failf("the broker called From functions %v outside Publish", h.calls)
		}
		if h.hooks > 0 {
			h.failf("the broker called OnLoss functions %d times outside Publish", h.hooks)
		}
	}

	// At the end every subscription holds exactly what the model holds, and
	// has lost the same values. Then Shutdown drains the handlers, and
	// closes every subscription, which then hold nothing more.
	h.calls, h.hooks = h.calls[:0], 0
	h.shutdown()
	h.logf("check, drain all")
	h.check()
	for _, s := range h.subs {
		h.drain(s)
	}
	if len(h.calls) > 0 || h.hooks > 0 {
		h.failf("the broker called From functions %v and OnLoss functions %d times outside Publish", h.calls, h.hooks)
	}
}

// open lets the handlers' functions go on.
func (h *fuzzHarness) open() {
	select {
	case <-h.gate:
	default:
		close(h.gate)
	}
}

// handle registers a handler from the menu, on both sides.
func (h *fuzzHarness) handle(in *fuzzInput) {
	k := in.next()
	if k%16 == fuzzShutdown {
		h.shutdown()
		return
	}
	f := fuzzHandlers[k%len(fuzzHandlers)]
	if h.handlers == fuzzMaxHandlers {
		h.logf("(no more handlers)")
		return
	}
	h.handlers++
	d, pub := fuzzTypeOf(f.sub), fuzzTypeOf(f.pub)
	s := &fuzzSub{id: len(h.subs), typ: d, handler: true}
	name := fmt.Sprintf("s%d", s.id)
	h.logf("%s := Handle[%s](%s)", name, d.name, f.name)
	d.handle(&h.b, name, func(v any) {
		<-h.gate
		if out, ok := f.call(v); ok { // a panic is the handler's failure
			pub.publish(&h.b, out)
		}
	})
	s.ref = h.ref.Handle(d.typ, fuzzHandlerBuffer, name, pub.typ, f.call)
	s.real = fuzzChan{capacity: fuzzHandlerBuffer, cancel: func() {}}
	h.subs = append(h.subs, s)
	h.byRef[s.ref] = s
}

// shutdown lets the handlers go, shuts both brokers down and compares them.
// The real handlers run concurrently, so the order in which their
// publications reach a subscription is not the model's: the comparison is of
// what does not depend on it. Each subscription holds as many values as the
// model's, each of them one the model offered it; its losses are the same
// in number, and by cause, but for a drop-oldest subscription, which may drop
// a new value instead of evicting under contention.
func (h *fuzzHarness) shutdown() {
	if h.shut {
		h.logf("(shut down already)")
		return
	}
	h.shut = true
	h.logf("check, drain all")
	h.check()
	for _, s := range h.subs {
		h.drain(s)
	}
	h.logf("Shutdown")
	h.check()
	h.open()
	if err := h.b.Shutdown(context.Background()); err != nil {
		h.failf("Shutdown = %v", err)
	}
	h.ref.Shutdown()

	// The OnLoss functions were called the same number of times. (From
	// and OnLoss functions ran on the handlers' goroutines meanwhile.)
	h.mu.Lock()
	h.calls, h.hooks = h.calls[:0], 0
	for _, s := range h.subs {
		for k := range s.realLosses {
			got, want := fuzzLossCounts(s.realLosses[k], s.ref.policy), fuzzLossCounts(s.refLosses[k], s.ref.policy)
			if !maps.Equal(got, want) {
				h.failf("s%d (Subscribe[%s]): OnLoss h%d during the drain got %v, want %v",
					s.id, s.typ.name, k, got, want)
			}
			s.realLosses[k], s.refLosses[k] = nil, nil
		}
	}
	h.mu.Unlock()

	got, want := fuzzLoose(h.b.Subscriptions()), fuzzLoose(h.ref.Subscriptions())
	if !slices.Equal(got, want) {
		h.failf("Subscriptions after Shutdown:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	for _, s := range h.subs {
		if s.handler {
			continue
		}
		var vs []any
		closed := false
		for range s.real.capacity + 2 {
			v, ok, ready := s.real.tryRecv()
			if !ready || !ok {
				closed = !ok && ready
				break
			}
			vs = append(vs, v)
		}
		queue, _ := h.ref.Drain(s.ref)
		if !closed || len(vs) != len(queue) {
			h.failf("s%d after Shutdown: received %s, want %d values and closed", s.id, fuzzShowAll(vs, closed), len(queue))
		}
		offered := slices.Clone(s.ref.offered)
		for _, v := range vs {
			i := slices.Index(offered, v)
			if i < 0 {
				h.failf("s%d after Shutdown: received %s, which the drain did not offer it (%s)",
					s.id, fuzzShow(v), fuzzShowAll(s.ref.offered, false))
			}
			offered = slices.Delete(offered, i, i+1)
		}
	}
}

// fuzzLossCounts counts losses by cause, a drop-oldest subscription's Full
// and Evicted together.
func fuzzLossCounts(ls []refLoss, p topic.Policy) map[topic.Cause]int {
	n := map[topic.Cause]int{}
	for _, l := range ls {
		c := l.Cause
		if c == topic.Full && p == topic.DropOldest {
			c = topic.Evicted
		}
		n[c]++
	}
	return n
}

// fuzzLoose shows stats without what depends on the order of concurrent
// handlers, sorted.
func fuzzLoose(stats []topic.SubscriptionStats) []string {
	var s []string
	for _, st := range stats {
		if st.Policy == topic.DropOldest {
			st.Lost.Evicted += st.Lost.Full
			st.Lost.Full = 0
		}
		s = append(s, fuzzShowStats([]topic.SubscriptionStats{st})...)
	}
	slices.Sort(s)
	return s
}

func (h *fuzzHarness) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

func (h *fuzzHarness) failf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("%s\noperations:\n\t%s", fmt.Sprintf(format, args...), strings.Join(h.log, "\n\t"))
}

func (h *fuzzHarness) pick(in *fuzzInput) *fuzzSub {
	i := in.next()
	if len(h.subs) == 0 {
		h.logf("(no subscription)")
		return nil
	}
	return h.subs[i%len(h.subs)]
}

func (h *fuzzHarness) subscribe(in *fuzzInput, named bool) {
	d := fuzzUniverse[in.next()%len(fuzzUniverse)]
	s := &fuzzSub{id: len(h.subs), typ: d}
	var (
		real  []any
		model []refOption
		desc  []string
	)
	for range in.next() % (fuzzMaxOptions + 1) {
		switch in.next() % 8 {
		case fuzzOptBuffer, 7: // twice as likely: capacities above one matter for DropOldest
			n := in.next()%6 - 1
			real = append(real, d.buffer(n))
			model = append(model, refBuffer(n))
			desc = append(desc, fmt.Sprintf("Buffer(%d)", n))
		case fuzzOptZero:
			real = append(real, d.zero)
			model = append(model, refOption{})
			desc = append(desc, "Option{}")
		case fuzzOptFrom, fuzzOptFrom + 1:
			f := d.froms[in.next()%len(d.froms)]
			if s.froms == fuzzMaxFroms {
				real = append(real, d.zero)
				model = append(model, refOption{})
				desc = append(desc, "Option{}")
			} else {
				call := fuzzCall{sub: s.id, source: s.froms}
				s.froms++
				real = append(real, f.option(func() {
					h.mu.Lock()
					defer h.mu.Unlock()
					h.calls = append(h.calls, call)
				}))
				model = append(model, refFrom(f.sub, f.call))
				desc = append(desc, fmt.Sprintf("From(%s)", f.name))
			}
		case fuzzOptOverflow:
			p := topic.Policy(in.next() % 2)
			real = append(real, d.overflow(p))
			model = append(model, refOverflow(p))
			desc = append(desc, fmt.Sprintf("Overflow(%v)", p))
		case fuzzOptOnLoss:
			kind := in.next() % 4
			if kind == fuzzHookNil {
				real = append(real, d.onLoss(nil))
				model = append(model, refOnLoss(nil))
				desc = append(desc, "OnLoss(nil)")
				break
			}
			k := len(s.realLosses)
			s.realLosses = append(s.realLosses, nil)
			s.refLosses = append(s.refLosses, nil)
			real = append(real, d.onLoss(func(l refLoss) {
				h.mu.Lock()
				h.hooks++
				s.realLosses[k] = append(s.realLosses[k], l)
				h.mu.Unlock()
				if kind == fuzzHookPanic {
					panic("fuzz: OnLoss panics")
				}
			}))
			model = append(model, refOnLoss(func(l refLoss) { s.refLosses[k] = append(s.refLosses[k], l) }))
			if kind == fuzzHookPanic {
				desc = append(desc, fmt.Sprintf("OnLoss(h%d, panicking)", k))
			} else {
				desc = append(desc, fmt.Sprintf("OnLoss(h%d)", k))
			}
		case fuzzOptName:
			name := [2]string{"x", ""}[in.next()%2]
			real = append(real, d.named(name))
			model = append(model, refName(name))
			desc = append(desc, fmt.Sprintf("Name(%q)", name))
		}
	}
	if named {
		name := fmt.Sprintf("s%d", s.id)
		real = append(real, d.named(name))
		model = append(model, refName(name))
		desc = append(desc, fmt.Sprintf("Name(%q)", name))
	}
	h.logf("s%d := Subscribe[%s](%s)", s.id, d.name, strings.Join(desc, ", "))
	s.real = d.subscribe(&h.b, real)
	s.ref = h.ref.Subscribe(d.typ, model...)
	h.subs = append(h.subs, s)
	h.byRef[s.ref] = s
	if s.real.capacity != s.ref.capacity {
		h.failf("s%d: channel capacity %d, want %d", s.id, s.real.capacity, s.ref.capacity)
	}
}

func (h *fuzzHarness) publish(in *fuzzInput) {
	d := fuzzUniverse[in.next()%len(fuzzUniverse)]
	v := d.values[in.next()%len(d.values)]
	h.logf("Publish[%s](%s)", d.name, fuzzShow(v))
	func() {
		defer func() {
			if p := recover(); p != nil {
				h.failf("Publish[%s](%s) panicked: %v", d.name, fuzzShow(v), p)
			}
		}()
		d.publish(&h.b, v)
	}()
	decisions := h.ref.Publish(d.typ, v)

	// A From function runs only when its source is the first to match, and
	// then exactly once: whether the value is filtered, lost or delivered
	// depends on it, even when the subscription has no room for its result.
	decided := map[int]refDecision{}
	for _, dec := range decisions {
		decided[h.byRef[dec.sub].id] = dec
	}
	called := map[int]bool{}
	for _, c := range h.calls {
		if called[c.sub] {
			h.failf("s%d: more than one From function call for one publication: %v", c.sub, h.calls)
		}
		called[c.sub] = true
		if dec, ok := decided[c.sub]; !ok || dec.source != c.source {
			h.failf("s%d: the broker called From source %d, but the first matching source is %s",
				c.sub, c.source, fuzzSource(dec, ok))
		}
	}
	for id, dec := range decided {
		if s := h.subs[id]; dec.source < s.froms && !called[id] {
			h.failf("s%d: the broker did not call From source %d, which matched first", id, dec.source)
		}
	}
}

func fuzzSource(dec refDecision, ok bool) string {
	if !ok {
		return "none"
	}
	if dec.source == len(dec.sub.sources)-1 {
		return "the own type"
	}
	return strconv.Itoa(dec.source)
}

// drain receives everything s currently holds from both sides and compares.
func (h *fuzzHarness) drain(s *fuzzSub) {
	if s.handler {
		return // no one receives from it: Shutdown drains it
	}
	var got []any
	closed := false
	for range s.real.capacity + 2 { // more than the channel can hold; a closed channel ends it
		v, ok, ready := s.real.tryRecv()
		if !ready {
			break
		}
		if !ok {
			closed = true
			break
		}
		got = append(got, v)
	}
	want, wantClosed := h.ref.Drain(s.ref)
	h.logf("drain s%d: %s", s.id, fuzzShowAll(got, closed))
	// == compares dynamic types and values; every type delivered is comparable.
	if !slices.Equal(got, want) || closed != wantClosed {
		h.failf("s%d (Subscribe[%s]): received %s, want %s",
			s.id, s.typ.name, fuzzShowAll(got, closed), fuzzShowAll(want, wantClosed))
	}
}

// check compares the losses every OnLoss function was given since the last
// check, then the broker's snapshot of its live subscriptions with the model's.
func (h *fuzzHarness) check() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		for k := range s.realLosses {
			got, want := s.realLosses[k], s.refLosses[k]
			if !slices.EqualFunc(got, want, fuzzSameLoss) {
				h.failf("s%d (Subscribe[%s]): OnLoss h%d got %s, want %s",
					s.id, s.typ.name, k, fuzzShowLosses(got), fuzzShowLosses(want))
			}
			s.realLosses[k], s.refLosses[k] = got[:0], want[:0]
		}
	}

	// Every publication some subscription matched counts once for its
	// static type; a type routed once lists none since.
	wantPub := h.ref.Published()
	for _, tp := range h.b.Topics() {
		if tp.Published != wantPub[tp.Type] {
			h.failf("Topics: %s published %d, want %d", tp.Type, tp.Published, wantPub[tp.Type])
		}
		delete(wantPub, tp.Type)
	}
	for typ, n := range wantPub {
		h.failf("Topics: %s (published %d) is missing", typ, n)
	}

	got := h.b.Subscriptions()
	if !slices.IsSortedFunc(got, refCompareStats) {
		h.failf("Subscriptions are not ordered by type, then name:\n\t%s", strings.Join(fuzzShowStats(got), "\n\t"))
	}
	// Entries are told apart by type and name, unique for subscriptions
	// named s<id>. Entries with the same type and name may come in any
	// order, so both sides are sorted on every field before comparing.
	want := h.ref.Subscriptions()
	got = slices.Clone(got)
	// Where a subscription was made is the harness's line, which the model
	// does not know: every one must say it, and the rest is compared.
	for i := range got {
		if got[i].Made == "" {
			h.failf("subscription %s %q says nowhere it was made", got[i].Type, got[i].Name)
		}
		got[i].Made = ""
	}
	// A handler's worker may have taken a value from its queue, and
	// publishes its counts when it likes: a handler shows its losses alone.
	for _, stats := range [][]topic.SubscriptionStats{got, want} {
		for i := range stats {
			if stats[i].Handler != nil {
				stats[i].Handler, stats[i].Queued = nil, 0
			}
		}
	}
	slices.SortFunc(got, fuzzCompareStats)
	slices.SortFunc(want, fuzzCompareStats)
	if !slices.Equal(got, want) {
		h.failf("Subscriptions:\n\t%s\nwant:\n\t%s",
			strings.Join(fuzzShowStats(got), "\n\t"), strings.Join(fuzzShowStats(want), "\n\t"))
	}
}

// fuzzCompareStats orders snapshot entries as documented, then by the fields
// that tell apart subscriptions of the same type and name.
func fuzzCompareStats(x, y topic.SubscriptionStats) int {
	if c := refCompareStats(x, y); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(x.Policy, y.Policy),
		cmp.Compare(x.Capacity, y.Capacity),
		cmp.Compare(x.Queued, y.Queued),
		cmp.Compare(x.Lost.Full, y.Lost.Full),
		cmp.Compare(x.Lost.Evicted, y.Lost.Evicted),
		cmp.Compare(x.Lost.Failed, y.Lost.Failed),
		cmp.Compare(x.Lost.Errored, y.Lost.Errored),
		cmp.Compare(x.Lost.Discarded, y.Lost.Discarded),
		cmp.Compare(x.Lost.Closed, y.Lost.Closed),
		cmp.Compare(x.Sent, y.Sent),
		cmp.Compare(x.Rejected, y.Rejected),
		cmp.Compare(x.Matched, y.Matched),
	)
}

// fuzzSameLoss reports whether two losses are the same. The values are
// comparable, but for a panic with nil, whose value is a new
// *runtime.PanicNilError each time.
func fuzzSameLoss(x, y refLoss) bool {
	if x.Cause != y.Cause || x.Value != y.Value || x.Source != y.Source || x.Err != y.Err {
		return false
	}
	_, xNil := x.Panic.(*runtime.PanicNilError)
	_, yNil := y.Panic.(*runtime.PanicNilError)
	if xNil || yNil {
		return xNil && yNil
	}
	return x.Panic == y.Panic
}

func fuzzShowLosses(ls []refLoss) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmt.Sprintf("{%v %s", l.Cause, fuzzShow(l.Value))
		if l.Cause == topic.Failed {
			s[i] += fmt.Sprintf(" source %s panic %s", fuzzShow(l.Source), fuzzShow(l.Panic))
		}
		if l.Err != nil {
			s[i] += fmt.Sprintf(" error %v", l.Err)
		}
		s[i] += "}"
	}
	return "[" + strings.Join(s, " ") + "]"
}

func fuzzShowStats(stats []topic.SubscriptionStats) []string {
	s := make([]string, len(stats))
	for i, st := range stats {
		s[i] = fmt.Sprintf("%v %q %v capacity %d queued %d lost %+v sent %d rejected %d matched %d",
			st.Type, st.Name, st.Policy, st.Capacity, st.Queued, st.Lost, st.Sent, st.Rejected, st.Matched)
		if st.Handler != nil {
			s[i] += fmt.Sprintf(" handler %+v", *st.Handler) // never for a channel subscription
		}
	}
	return s
}

func fuzzShow(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case *uNode:
		if v == nil {
			return "(*uNode)(nil)"
		}
		return fmt.Sprintf("&uNode{%d}", v.ID)
	default:
		return strings.ReplaceAll(fmt.Sprintf("%T(%#v)", v, v), "topic_test.", "")
	}
}

func fuzzShowAll(vs []any, closed bool) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fuzzShow(v)
	}
	if closed {
		s = append(s, "closed")
	}
	return "[" + strings.Join(s, " ") + "]"
}

// Seed encoders, mirroring the decoding above by name rather than by index.

func seedOps(ops ...[]byte) []byte { return slices.Concat(ops...) }

func seedType(name string) byte {
	i := slices.IndexFunc(fuzzUniverse, func(d *fuzzType) bool { return d.name == name })
	if i < 0 {
		panic("no type " + name)
	}
	return byte(i)
}

type seedOption func(own *fuzzType) []byte

func seedBuffer(n int) seedOption {
	return func(*fuzzType) []byte { return []byte{fuzzOptBuffer, byte(n + 1)} }
}
func seedZero() seedOption { return func(*fuzzType) []byte { return []byte{fuzzOptZero} } }

func seedOverflow(p topic.Policy) seedOption {
	return func(*fuzzType) []byte { return []byte{fuzzOptOverflow, byte(p)} }
}

// seedOnLoss adds an OnLoss option: fuzzHookRecord, fuzzHookPanic or fuzzHookNil.
func seedOnLoss(kind byte) seedOption {
	return func(*fuzzType) []byte { return []byte{fuzzOptOnLoss, kind} }
}

// seedName adds a Name option, with a name shared by others: "x", or "" if empty.
func seedName(empty bool) seedOption {
	return func(*fuzzType) []byte {
		if empty {
			return []byte{fuzzOptName, 1}
		}
		return []byte{fuzzOptName, 0}
	}
}

func seedFrom(name string) seedOption {
	return func(own *fuzzType) []byte {
		i := slices.IndexFunc(own.froms, func(f *fuzzFrom) bool { return f.name == name })
		if i < 0 {
			panic("no From " + name + " for " + own.name)
		}
		return []byte{fuzzOptFrom, byte(i)}
	}
}

// seedSubscribe subscribes with the options given, then a unique name.
func seedSubscribe(typ string, opts ...seedOption) []byte {
	return seedSubscribeOp(fuzzOpSubscribe, typ, opts)
}

// seedSubscribeAnon subscribes with the options given and no unique name.
func seedSubscribeAnon(typ string, opts ...seedOption) []byte {
	return seedSubscribeOp(fuzzOpSubscribeAnon, typ, opts)
}

func seedSubscribeOp(op byte, typ string, opts []seedOption) []byte {
	if len(opts) > fuzzMaxOptions {
		panic("too many options")
	}
	b := []byte{op, seedType(typ), byte(len(opts))}
	for _, o := range opts {
		b = append(b, o(fuzzUniverse[seedType(typ)])...)
	}
	return b
}

func seedPublish(typ string, v any) []byte {
	d := fuzzUniverse[seedType(typ)]
	i := slices.Index(d.values, v)
	if i < 0 {
		panic(fmt.Sprintf("no value %v for %s", v, typ))
	}
	return []byte{fuzzOpPublish, seedType(typ), byte(i)}
}

// seedHandle registers the handler of fuzzHandlers named name.
func seedHandle(name string) []byte {
	i := slices.IndexFunc(fuzzHandlers, func(f *fuzzFrom) bool { return f.name == name })
	if i < 0 {
		panic("no handler " + name)
	}
	return []byte{fuzzOpHandle, byte(i)}
}

func seedCancel(sub int) []byte { return []byte{fuzzOpCancel, byte(sub)} }
func seedDrain(sub int) []byte  { return []byte{fuzzOpDrain, byte(sub)} }

// fuzzSeeds covers every operation and the rules most likely to be got wrong.
var fuzzSeeds = [][]byte{
	// Identity, default capacity one, drain, drop when full.
	seedOps(
		seedSubscribe("uPoint"),
		seedPublish("uPoint", uPoint{1, 2}),
		seedPublish("uPoint", uPoint{2, 0}),
		seedDrain(0),
		seedPublish("uPoint", uPoint{}),
	),
	// Named types are not their underlying type; unbuffered always drops here.
	seedOps(
		seedSubscribe("int", seedBuffer(4)),
		seedSubscribe("uCount", seedBuffer(4)),
		seedSubscribe("uCode", seedBuffer(0)),
		seedPublish("int", 1),
		seedPublish("uCount", uCount(1)),
		seedPublish("uCode", uCode(404)),
		seedDrain(0), seedDrain(1), seedDrain(2),
	),
	// A nil error reaches error and any only; a nil any reaches any only.
	seedOps(
		seedSubscribe("error", seedBuffer(4)),
		seedSubscribe("any", seedBuffer(4)),
		seedSubscribe("uBoth", seedBuffer(4)),
		seedSubscribe("Stringer", seedBuffer(4)),
		seedPublish("error", nil),
		seedPublish("any", nil),
		seedPublish("uBoth", nil),
		seedDrain(0), seedDrain(1), seedDrain(2), seedDrain(3),
	),
	// Publishing through an interface: concrete subscriptions do not see it,
	// other interfaces do by the dynamic type.
	seedOps(
		seedSubscribe("uCode", seedBuffer(4)),
		seedSubscribe("Stringer", seedBuffer(4)),
		seedSubscribe("uBoth", seedBuffer(4)),
		seedSubscribe("uKinded", seedBuffer(4)),
		seedPublish("error", uCode(404)),
		seedPublish("any", uCode(500)),
		seedPublish("error", uNodes[1]),
		seedPublish("error", (*uNode)(nil)),
		seedPublish("uKinded", uName("bob")),
		seedDrain(0), seedDrain(1), seedDrain(2), seedDrain(3),
	),
	// A nil pointer is a typed value: it implements error through *uNode.
	seedOps(
		seedSubscribe("error", seedBuffer(2)),
		seedSubscribe("*uNode", seedBuffer(2)),
		seedPublish("*uNode", (*uNode)(nil)),
		seedDrain(0), seedDrain(1),
	),
	// Buffer given twice, the last wins, negative is zero; the zero Option does nothing.
	seedOps(
		seedSubscribe("uName", seedBuffer(3), seedBuffer(-1)),
		seedSubscribe("uName", seedBuffer(-1), seedZero(), seedBuffer(2)),
		seedSubscribe("uName", seedZero()),
		seedPublish("uName", uName("a")),
		seedPublish("uName", uName("bob")),
		seedPublish("uName", uName("")),
		seedDrain(0), seedDrain(1), seedDrain(2),
	),
	// From: transform, filter, first match decides, own type last, a repeated
	// source is unreachable.
	seedOps(
		seedSubscribe("uCount", seedBuffer(4),
			seedFrom("uCount<-uCount+1 if odd"), seedFrom("uCount<-int if n>=0"), seedFrom("uCount<-Stringer if non-nil")),
		seedPublish("uCount", uCount(1)),
		seedPublish("uCount", uCount(0)),
		seedPublish("int", -1),
		seedPublish("int", 300),
		seedPublish("uName", uName("bob")),
		seedPublish("Stringer", nil),
		seedDrain(0),
		seedSubscribe("uPoint", seedFrom("uPoint<-int"), seedFrom("uPoint<-int"), seedBuffer(3)),
		seedPublish("int", 0),
		seedDrain(1),
	),
	// From with interface sources and nil interface values, given and returned.
	seedOps(
		seedSubscribe("uName", seedBuffer(4), seedFrom("uName<-error")),
		seedSubscribe("uEmpty", seedBuffer(4), seedFrom("uEmpty<-any if nil")),
		seedSubscribe("uKinded", seedBuffer(4), seedFrom("uKinded<-any as nil")),
		seedSubscribe("error", seedBuffer(4), seedFrom("error<-uKinded as nil *uNode")),
		seedSubscribe("any", seedBuffer(4), seedFrom("any<-error")),
		seedPublish("error", nil),
		seedPublish("uKinded", nil),
		seedPublish("uKinded", uEmpty{}),
		seedPublish("uCode", uCode(404)),
		seedPublish("any", nil),
		seedDrain(0), seedDrain(1), seedDrain(2), seedDrain(3), seedDrain(4),
	),
	// Cancel closes, is idempotent, keeps accepted values, and ends delivery.
	seedOps(
		seedSubscribe("uCode", seedBuffer(3)),
		seedSubscribe("error", seedBuffer(3), seedFrom("error<-int if n!=0")),
		seedPublish("uCode", uCode(404)),
		seedPublish("int", 1),
		seedCancel(0),
		seedCancel(1),
		seedCancel(0),
		seedPublish("uCode", uCode(500)),
		seedPublish("int", 300),
		seedDrain(0), seedDrain(1),
		seedSubscribe("uCode"),
		seedPublish("uCode", uCode(0)),
		seedDrain(2),
	),
	// DropOldest evicts the head and keeps the order; with capacity one it
	// keeps the latest value; unbuffered it drops the new one, counted Full.
	// The last Overflow wins. OnLoss sees every loss; plain subscriptions of
	// the same type count theirs.
	seedOps(
		seedSubscribe("int", seedBuffer(3), seedOverflow(topic.DropOldest), seedOnLoss(fuzzHookRecord)),
		seedSubscribe("int", seedOverflow(topic.DropOldest), seedOnLoss(fuzzHookRecord)),
		seedSubscribe("int", seedBuffer(0), seedOverflow(topic.DropOldest), seedOnLoss(fuzzHookRecord)),
		seedSubscribe("int", seedOverflow(topic.DropOldest), seedOverflow(topic.DropNewest), seedBuffer(2), seedOnLoss(fuzzHookRecord)),
		seedSubscribe("int", seedOverflow(topic.DropNewest), seedOverflow(topic.DropOldest), seedBuffer(2)),
		seedSubscribeAnon("int", seedBuffer(2)),
		seedPublish("int", 0), seedPublish("int", 1), seedPublish("int", -1), seedPublish("int", 300), seedPublish("int", 1),
		seedDrain(1), seedDrain(0),
		seedPublish("int", 300), seedPublish("int", -1),
		seedDrain(0), seedDrain(1), seedDrain(2), seedDrain(3), seedDrain(4), seedDrain(5),
	),
	// DropOldest and OnLoss through a From source and through interface
	// subscriptions; an OnLoss that panics reaches neither the publisher nor
	// the other subscriptions, and the value it was told about stays lost
	// while the new one is queued. A plain interface subscription counts its
	// drops too.
	seedOps(
		seedSubscribe("uCount", seedFrom("uCount<-int if n>=0"), seedBuffer(2), seedOverflow(topic.DropOldest), seedOnLoss(fuzzHookRecord)),
		seedSubscribe("error", seedBuffer(2), seedOverflow(topic.DropOldest), seedOnLoss(fuzzHookPanic)),
		seedSubscribe("any", seedOverflow(topic.DropOldest)),
		seedSubscribe("Stringer", seedOnLoss(fuzzHookRecord)),
		seedSubscribe("uKinded", seedBuffer(2), seedOverflow(topic.DropOldest), seedFrom("uKinded<-uCount"), seedOnLoss(fuzzHookPanic)),
		seedSubscribeAnon("Stringer"),
		seedPublish("int", 1), seedPublish("int", -1), seedPublish("int", 300), seedPublish("int", 0),
		seedPublish("uCode", uCode(404)), seedPublish("error", nil), seedPublish("error", uNodes[1]),
		seedPublish("uCount", uCount(7)), seedPublish("uCount", uCount(0)), seedPublish("uKinded", uEmpty{}),
		seedDrain(0), seedDrain(1), seedDrain(2), seedDrain(3), seedDrain(4), seedDrain(5),
		seedPublish("uBoth", uCode(500)), seedPublish("any", nil),
		seedDrain(2),
	),
	// From functions that panic, with a string, a value of the universe, a
	// pointer, nil, and runtime errors: the value is lost for that
	// subscription alone, counted Failed, and OnLoss gets the published value
	// and the panic; a failure evicts nothing, even under DropOldest.
	seedOps(
		seedSubscribe("int", seedFrom("int<-uCode panics if 0"), seedOnLoss(fuzzHookRecord), seedBuffer(4)),
		seedSubscribe("uCode", seedFrom("uCode<-int 1000/n"), seedOnLoss(fuzzHookRecord), seedOverflow(topic.DropOldest)),
		seedSubscribe("uPoint", seedFrom("uPoint<-uCount panics with it if odd"), seedOnLoss(fuzzHookPanic)),
		seedSubscribe("uName", seedFrom("uName<-uKinded panics with nil if nil"), seedOnLoss(fuzzHookRecord), seedBuffer(4)),
		seedSubscribe("error", seedFrom("error<-any panics with *uNode"), seedOnLoss(fuzzHookRecord), seedBuffer(4)),
		seedSubscribe("uBoth", seedFrom("uBoth<-uPoint indexes by X"), seedOnLoss(fuzzHookRecord), seedBuffer(4)),
		seedSubscribe("uCount", seedFrom("uCount<-Stringer panics if nil"), seedBuffer(4)),
		seedSubscribe("uCode", seedBuffer(4)),
		seedSubscribeAnon("int", seedBuffer(4)),
		seedPublish("uCode", uCode(0)), seedPublish("uCode", uCode(404)),
		seedPublish("int", 0), seedPublish("int", 300), seedPublish("int", 1), seedPublish("int", 0),
		seedPublish("uCount", uCount(1)), seedPublish("uCount", uCount(0)),
		seedPublish("uKinded", nil), seedPublish("uKinded", uName("bob")), seedPublish("uKinded", uEmpty{}),
		seedPublish("any", uNodes[1]), seedPublish("any", (*uNode)(nil)), seedPublish("error", uCode(404)),
		seedPublish("uPoint", uPoint{2, 0}), seedPublish("uPoint", uPoint{1, 2}),
		seedPublish("Stringer", nil), seedPublish("Stringer", uName("a")),
		seedDrain(0), seedDrain(1), seedDrain(2), seedDrain(3), seedDrain(4), seedDrain(5), seedDrain(6), seedDrain(7), seedDrain(8),
	),
	// Only plain subscriptions, all full: the drops are counted without a
	// send; an unbuffered one among them takes the send path.
	seedOps(
		seedSubscribe("uPoint"),
		seedSubscribeAnon("uPoint"),
		seedSubscribe("uPoint", seedBuffer(2)),
		seedPublish("uPoint", uPoint{}), seedPublish("uPoint", uPoint{1, 2}), seedPublish("uPoint", uPoint{2, 0}),
		seedPublish("uPoint", uPoint{}),
		seedDrain(0),
		seedPublish("uPoint", uPoint{1, 2}), seedPublish("uPoint", uPoint{2, 0}),
		seedSubscribe("uPoint", seedBuffer(0)),
		seedPublish("uPoint", uPoint{}),
		seedDrain(0), seedDrain(1), seedDrain(2), seedDrain(3),
	),
	// The last OnLoss wins, and OnLoss(nil) removes one; names: the last
	// wins, shared names and no name; cancelled subscriptions leave the
	// snapshot.
	seedOps(
		seedSubscribe("uName", seedOnLoss(fuzzHookRecord), seedOnLoss(fuzzHookRecord)),
		seedSubscribe("uName", seedOnLoss(fuzzHookRecord), seedOnLoss(fuzzHookNil)),
		seedSubscribe("uName", seedOnLoss(fuzzHookPanic), seedBuffer(0)),
		seedSubscribeAnon("uName", seedName(false)),
		seedSubscribeAnon("uName", seedName(false), seedOverflow(topic.DropOldest)),
		seedSubscribeAnon("uName", seedName(false), seedName(true)),
		seedSubscribeAnon("uName"),
		seedSubscribe("uName", seedName(false)),
		seedPublish("uName", uName("a")), seedPublish("uName", uName("bob")), seedPublish("uName", uName("")),
		seedDrain(3),
		seedCancel(4), seedCancel(6),
		seedPublish("uName", uName("bob")),
		seedDrain(0), seedDrain(5),
	),
}

// fuzzShutdownSeeds drain handlers that publish to each other and to channel
// subscriptions, then publish after Shutdown.
var fuzzShutdownSeeds = [][]byte{
	// A pipeline int -> uPoint -> uEmpty, registered downstream first,
	// beside channel subscriptions of every stage, a full one, a From
	// source and an interface subscription; a handler that panics on 0.
	seedOps(
		seedSubscribe("uEmpty", seedBuffer(4)),
		seedSubscribe("uPoint", seedBuffer(1), seedOnLoss(fuzzHookRecord)),
		seedSubscribe("any", seedBuffer(4), seedOverflow(topic.DropOldest)),
		seedSubscribe("int", seedFrom("int<-uPoint if X>0"), seedBuffer(4)),
		seedHandle("uEmpty<-uPoint if X=0"),
		seedHandle("uPoint<-int"),
		seedHandle("uCode<-int 1000/n"),
		seedPublish("int", 0), seedPublish("int", 1), seedPublish("int", -1), seedPublish("int", 300),
		seedDrain(0),
		seedPublish("int", 0),
		seedShutdown(),
		// Closed: counted; a new subscription and a new handler are closed at once.
		seedPublish("int", 1), seedPublish("uPoint", uPoint{}), seedPublish("any", uCode(404)), seedPublish("uKinded", uEmpty{}),
		seedSubscribe("uPoint", seedBuffer(2)),
		seedHandle("uPoint<-int"),
		seedPublish("uPoint", uPoint{1, 2}),
		seedCancel(1), seedCancel(7),
		seedDrain(1), seedDrain(7),
	),
}

func seedShutdown() []byte { return []byte{fuzzOpHandle, fuzzShutdown} }

func FuzzBrokerMatchesReference(f *testing.F) {
	for _, s := range slices.Concat(fuzzSeeds, fuzzShutdownSeeds) {
		f.Add(s)
	}
	for seed := range uint64(8) {
		f.Add(fuzzRandomInput(rand.New(rand.NewPCG(seed, 0xf022))))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRun(t, data) })
}

func fuzzRandomInput(r *rand.Rand) []byte {
	b := make([]byte, 20+r.IntN(600))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestBrokerMatchesReferenceRandom(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 50
	}
	for seed := range uint64(n) {
		fuzzRun(t, fuzzRandomInput(rand.New(rand.NewPCG(seed, 0x7e57))))
	}
}

func TestBrokerMatchesReferenceThroughShutdown(t *testing.T) {
	for _, s := range fuzzShutdownSeeds {
		fuzzRun(t, s)
	}
}
