package topic_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	zero      any                                        // topic.Option[T]{}
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
	d.buffer = func(n int) any { return topic.Buffer[T](n) }
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

// A fuzzFrom is one entry of the From menu: a pure function f from Sub to Pub.
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
// from interface types, some from the subscription's own type. Functions of an
// interface type must accept nil: a nil interface value reaches them when it
// is published with that very type, or when they take any.
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
}

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

// The encoding of an operation sequence, one byte at a time; a missing byte
// reads as zero, and every index is taken modulo the length it indexes.
//
//	op     := subscribe | publish | cancel | drain
//	subscribe: b%8 in {0, 1}, then type, n (n%6 options), then n times one of
//	    b%4 == 0: buffer, then c, capacity c%6-1 (so -1..4)
//	    b%4 == 1: the zero Option
//	    b%4 >= 2: From, then an index into the type's menu; a fourth From is the zero Option
//	publish:   b%8 in {2, 3, 4}, then type, value (an index into its values)
//	cancel:    b%8 == 5, then subscription (any ever made, cancelled ones included)
//	drain:     b%8 in {6, 7}, then subscription
const (
	fuzzOpSubscribe = 0
	fuzzOpPublish   = 2
	fuzzOpCancel    = 5
	fuzzOpDrain     = 6

	fuzzMaxOps   = 400
	fuzzMaxFroms = 3
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
	calls []fuzzCall // From functions the real broker called during the current operation
	log   []string   // the operations so far, to make a failure reproducible by reading
}

type fuzzSub struct {
	id    int
	typ   *fuzzType
	froms int // number of From sources
	real  fuzzChan
	ref   *refSub
}

type fuzzCall struct{ sub, source int }

func fuzzRun(t testing.TB, data []byte) {
	h := &fuzzHarness{t: t, byRef: map[*refSub]*fuzzSub{}}
	in := fuzzInput(data)
	for n := 0; len(in) > 0 && n < fuzzMaxOps; n++ {
		h.calls = h.calls[:0]
		switch op := in.next() % 8; {
		case op < fuzzOpPublish:
			h.subscribe(&in)
		case op < fuzzOpCancel:
			h.publish(&in)
			continue
		case op == fuzzOpCancel:
			if s := h.pick(&in); s != nil {
				h.logf("cancel s%d", s.id)
				s.real.cancel()
				h.ref.Cancel(s.ref)
			}
		default:
			if s := h.pick(&in); s != nil {
				h.drain(s)
			}
		}
		if len(h.calls) > 0 {
			h.failf("the broker called From functions %v outside Publish", h.calls)
		}
	}

	// At the end every subscription holds exactly what the model holds; after
	// cancelling, every channel is closed and holds nothing more.
	h.logf("drain all")
	for _, s := range h.subs {
		h.drain(s)
	}
	h.logf("cancel all")
	for _, s := range h.subs {
		s.real.cancel()
		h.ref.Cancel(s.ref)
	}
	for _, s := range h.subs {
		h.drain(s)
	}
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

func (h *fuzzHarness) subscribe(in *fuzzInput) {
	d := fuzzUniverse[in.next()%len(fuzzUniverse)]
	s := &fuzzSub{id: len(h.subs), typ: d}
	var (
		real  []any
		model []refOption
		desc  []string
	)
	for range in.next() % 6 {
		switch in.next() % 4 {
		case 0:
			n := in.next()%6 - 1
			real = append(real, d.buffer(n))
			model = append(model, refBuffer(n))
			desc = append(desc, fmt.Sprintf("Buffer(%d)", n))
		case 1:
			real = append(real, d.zero)
			model = append(model, refOption{})
			desc = append(desc, "Option{}")
		default:
			f := d.froms[in.next()%len(d.froms)]
			if s.froms == fuzzMaxFroms {
				real = append(real, d.zero)
				model = append(model, refOption{})
				desc = append(desc, "Option{}")
			} else {
				call := fuzzCall{sub: s.id, source: s.froms}
				s.froms++
				real = append(real, f.option(func() { h.calls = append(h.calls, call) }))
				model = append(model, refFrom(f.sub, f.call))
				desc = append(desc, fmt.Sprintf("From(%s)", f.name))
			}
		}
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
	d.publish(&h.b, v)
	decisions := h.ref.Publish(d.typ, v)

	// A From function runs only when its source is the first to match, at
	// most once per publication, and always when the subscription has room
	// for its result.
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
		if s := h.subs[id]; dec.source < s.froms && dec.hadRoom && !called[id] {
			h.failf("s%d: the broker did not call From source %d, which matched first and had room", id, dec.source)
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

func seedBuffer(n int) seedOption { return func(*fuzzType) []byte { return []byte{0, byte(n + 1)} } }
func seedZero() seedOption        { return func(*fuzzType) []byte { return []byte{1} } }

func seedFrom(name string) seedOption {
	return func(own *fuzzType) []byte {
		i := slices.IndexFunc(own.froms, func(f *fuzzFrom) bool { return f.name == name })
		if i < 0 {
			panic("no From " + name + " for " + own.name)
		}
		return []byte{2, byte(i)}
	}
}

func seedSubscribe(typ string, opts ...seedOption) []byte {
	b := []byte{fuzzOpSubscribe, seedType(typ), byte(len(opts))}
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
}

func FuzzBrokerMatchesReference(f *testing.F) {
	for _, s := range fuzzSeeds {
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
