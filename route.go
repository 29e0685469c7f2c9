package topic

import (
	"reflect"
	"slices"
	"sync/atomic"
	"unsafe"
)

// A table maps a publication's types to the entry holding its route.
//
// Keys are runtime type descriptors. A publication of a concrete type P is
// found under (key(P), nil). A publication made through an interface type I
// first finds a header under (key(I), nil), then its route under
// (key(I), key of the value's dynamic type), or (key(I), nilDynamic) for a nil
// value. Entries are never removed: a type that was once routed keeps its
// entry, so that subscribing and cancelling never rebuild the table; their
// number is bounded by the types the program publishes and subscribes to.
//
// Publishers read a table without any lock while a writer (holding
// Broker.mu) inserts into it in place, so that routing n new types costs
// O(n) in all rather than a copy of the table each. Each slot is written
// once, by one insertion: its entry and its dynamic key, then its static key
// last, atomically. A reader loads the static key atomically, and reads the
// rest only if it found it set, which the writer stored after the rest: the
// rest is then complete (the atomic store and load order the plain writes
// before the plain reads). A reader that finds the static key unset takes
// the slot for empty and the key for missing, which is what it would have
// found a moment before. A missing key is resolved under
// Broker.mu (see Broker.resolve), where the insertion is seen. When a table
// is half full the writer builds a table of twice the size, fills it and
// publishes it last; the old one is never written again.
//
// The other fields of a table never change once it is stored in
// Broker.table: a change of wild or sealed publishes a new header sharing
// the slots.
type table struct {
	slots []slot // open addressing, linear probing; len is a power of two
	shift uint8  // ptrBits - log2(len(slots))
	guard *guard // the broker's guard; never changes
	// wild is set when some subscription has an interface source, so that a
	// publication without an entry must be resolved against them before it is
	// known to match nothing.
	wild bool
	// sealed is set by Shutdown once it has closed every subscription: the
	// routes then only count what publications would have delivered.
	sealed bool
}

type slot struct {
	static  unsafe.Pointer // written once, atomically, after the rest: see table
	dynamic unsafe.Pointer // written once, before static
	e       *entry         // written once, before static
}

// nilDynamic is the dynamic key of a nil interface value.
var nilDynamic = unsafe.Pointer(new(byte))

func hash(static, dynamic unsafe.Pointer, shift uint8) uintptr {
	return ((uintptr(static) ^ uintptr(dynamic)>>3) * golden) >> (shift & uint8(ptrBits-1))
}

// find returns the entry stored under the key pair, or nil.
func (t *table) find(static, dynamic unsafe.Pointer) *entry {
	// A local copy of the slice: the atomic loads below would make the
	// compiler load t.slots again on every probe.
	slots := t.slots
	mask := uintptr(len(slots) - 1)
	for i := hash(static, dynamic, t.shift) & mask; ; i = (i + 1) & mask {
		s := &slots[i]
		k := atomic.LoadPointer(&s.static) // the slot's last write (see table)
		if k == static && s.dynamic == dynamic {
			return s.e
		}
		if k == nil {
			return nil
		}
	}
}

// newTable returns an empty table with room for n entries at half load.
func newTable(n int, g *guard) *table {
	size := 8
	for size < 2*n {
		size *= 2
	}
	return &table{slots: make([]slot, size), shift: uint8(ptrBits - uintptr(log2(size))), guard: g}
}

// insert stores e in a free slot, in the order the readers rely on (see
// table). The caller holds Broker.mu and has checked that e's key is
// missing and that the table has room.
func (t *table) insert(e *entry) {
	mask := uintptr(len(t.slots) - 1)
	i := hash(e.static, e.dynamic, t.shift)
	for t.slots[i].static != nil { // only inserters write it, under Broker.mu
		i = (i + 1) & mask
	}
	s := &t.slots[i]
	s.e, s.dynamic = e, e.dynamic
	atomic.StorePointer(&s.static, e.static) // publish the slot last
}

// An entry holds the route of one kind of publication: a static type, and for
// an interface type the dynamic type of the value.
type entry struct {
	// route is a *route[P], P being the static type; nil when nothing
	// matches. Replaced whole by writers, never mutated once stored.
	route atomic.Pointer[byte]

	static, dynamic unsafe.Pointer // the table key; never change
	// typ is the type of the values this entry routes: the static type if it
	// is concrete, else the dynamic type, nil for a nil interface value or a
	// header. Never changes.
	typ   reflect.Type
	iface bool // a header: the static type is an interface; holds no route
	edit  editor
	// buried counts the tombstones in the outlets of the current route (see
	// outlet). Guarded by Broker.mu.
	buried int

	// log is the log of a retained type, for the entry of the type and
	// that of its Record; nil otherwise. Set once, by Retain.
	log atomic.Pointer[logCore]
	// replay pushes the log's backlog into a new subscription of this
	// entry's type. Set once, by Retain, with Broker.mu held, before log:
	// read by whoever loaded a non-nil log.
	replay replayer

	// retired counts the publications that the subscriptions cancelled
	// from the route counted as fullAlone until their close froze their
	// counts (see sub.retireTo); sealed lists the loss counters of those
	// Shutdown closed, whose fullAlone counts go on (as Closed: see
	// lossCounter.load), read by Broker.Topics. Guarded by Broker.mu.
	retired uint64
	sealed  []*lossCounter

	// published counts the publications that found a route here, but for
	// those of a retained type, which its log counts, and those counted
	// as fullAlone (see Broker.Topics). On a line apart from the fields
	// publishers read: publishers on other cores write it.
	_         [cacheLine]byte
	published tally
}

// An editor changes the routes of entries whose static type it was made for.
// Its methods are called with Broker.mu held.
type editor interface {
	addLocked(e *entry, src source, boxed bool)
	removeLocked(e *entry, s subscriber)
	// eachLocked calls f with every subscription routed by e.
	eachLocked(e *entry, f func(subscriber))
	// static returns the static type of the entries: the topic.
	static() reflect.Type
	// eachSourceLocked calls f with every source on e's route, the one
	// Shutdown closed for a closed sink.
	eachSourceLocked(e *entry, f func(source))
	// aloneLocked returns the publications the plain subscriptions of e's
	// route counted as fullAlone, those it no longer lists included.
	aloneLocked(e *entry) uint64
	// sealLocked replaces every source of e's route by a closedSink, adds
	// one for each of held, the sources of subscriptions kept off the
	// route, and drops the log, in one route: see drain.seal.
	sealLocked(e *entry, held []heldSource)
	// countSealed offers v, of e's static type, a Record, to the closedSinks
	// of e's sealed route that would have been sent it: not its interface
	// sources, which are not sent records (see logOf.sendOrdered).
	countSealed(g *guard, e *entry, v any)
}

// A route lists where a publication of static type T goes. It is immutable
// once stored in an entry: writers publish a new one.
//
// Appending to a route may reuse the spare capacity of its slices: elements
// past a route's length are written only by the writer holding Broker.mu and
// are reachable only through a route stored after them. Removal copies, or,
// for an outlet, writes a tombstone in place (see outlet), which never
// shortens the list: so a backing array is only ever appended to by the
// current route.
type route[T any] struct {
	direct []outlet[T] // plain subscriptions of type T: a send, in the guard
	// typed are the other sources of type T, From sources and subscriptions
	// with an OnLoss function or the DropOldest policy: outside the guard.
	typed []typedSource[T]
	boxed []boxedOut // plain subscriptions of an interface type: in the guard
	// boxedSlow are the other interface sources: outside the guard.
	boxedSlow []boxedOut
	// log is the log of T if T is retained: publications go through it.
	// (An interface, not a *logOf[T], which would make route[T] refer to
	// route[Record[T]] and so on: an instantiation cycle.)
	log sequencer[T]
	// plain: the route has only direct outlets, and no log.
	plain bool
	// alone: the route's entry is that of a concrete type, whose plain
	// subscriptions are on no other route: a drop of a route of one may
	// count the publication as fullAlone.
	alone bool
	// solo is the route's only source when it is a typed one (a From
	// source, or a subscription with a policy or an OnLoss function) and the
	// route has no log: Publish calls it directly.
	solo typedSource[T]
	// soloFn is solo's deliver when solo is a funcSource (a From source),
	// which Publish calls without the interface call.
	soloFn func(*guard, T, *tally)
	// onlyBoxed: the route has only plain subscriptions of interface types
	// (boxed), and no log: Publish boxes v and sends to them in one guard
	// section (sendBoxedDirect).
	onlyBoxed bool
	// records, once Shutdown has sealed the route of a retained T, makes
	// the closed subscriptions of Record[T] count publications of T too,
	// which no log turns into records any more. (An interface, for the
	// same reason as log.)
	records recordCounter[T]
	// ordered: the route has subscriptions of type T that a retained type's
	// publication sends to with its sequencing point held (see sendInOrder);
	// live: it has sources sent to after (see sendLive).
	ordered, live bool
}

// A recordCounter counts a publication of a retained T on the closed
// subscriptions of Record[T].
type recordCounter[T any] interface {
	countRecord(g *guard, v T)
}

// closedRecords is the recordCounter of T: the entry of Record[T].
type closedRecords[T any] struct{ rec *entry }

func (c closedRecords[T]) countRecord(g *guard, v T) {
	// Through the entry's editor: a call of send[Record[T]] from here would
	// instantiate the same for Record[Record[T]], and so on.
	c.rec.edit.countSealed(g, c.rec, Record[T]{Value: v})
}

// A sequencer publishes the values of a retained type T at its sequencing
// point and returns the offset each gets, or false for one that came after
// Shutdown sealed the log (see logCore.sealed).
type sequencer[T any] interface {
	publish(g *guard, e *entry, v T) (uint64, bool)
}

// An outlet is the channel of a subscription reached by a plain send.
//
// Cancelling a subscription removes its outlet in place, in O(1) of the
// outlets beside it: it stores nil in ch (a tombstone) rather than publish a
// route without it, which would copy the list (see removeLocked). The store
// is atomic and made with Broker.mu held, before the canceller waits for the
// guard; publishers load ch atomically (channel), inside the guard for a
// send, and skip a nil one. The guard's invariant holds as for a route (see
// guard), with the load of ch for the load of the route: a publisher that
// loaded the channel entered the guard before that load, so either the
// canceller's scan of its set waits for it to leave, or its entry, and so
// its load, follows the scan, which follows the tombstone. Outside the
// guard a publisher only reads len of what it loaded (hasRoom), which a
// closed channel has too.
type outlet[T any] struct {
	ch chan T // nil once cancelled; written before the route listing it is stored, then only by bury
	// cap is cap(ch), kept because in generic code cap and len of a channel
	// are calls: the full-buffer check before the guard makes only one.
	cap int
	sub *sub[T] // to count what it drops
}

// channel returns the outlet's channel, nil once it is buried.
func (o *outlet[T]) channel() chan T {
	p := atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&o.ch)))
	return *(*chan T)(unsafe.Pointer(&p))
}

// bury makes the outlet a tombstone. The caller holds Broker.mu.
func (o *outlet[T]) bury() {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&o.ch)), nil)
}

func (r *route[T]) empty() bool {
	return r.log == nil && r.records == nil && len(r.direct) == 0 && r.onlyDirect()
}

// onlyDirect reports whether r lists no sources but plain subscriptions of
// type T (its log aside).
func (r *route[T]) onlyDirect() bool {
	return len(r.typed)+len(r.boxed)+len(r.boxedSlow) == 0
}

// editorOf is the editor of entries whose static type is T.
type editorOf[T any] struct{}

// newEntry returns an entry for publications of static type T, whose values
// have type typ; dynamic is nil for a concrete T or a header.
func newEntry[T any](dynamic unsafe.Pointer, typ reflect.Type, iface bool) *entry {
	return &entry{static: keyOf[T](), dynamic: dynamic, typ: typ, iface: iface, edit: editorOf[T]{}}
}

func (editorOf[T]) load(e *entry) *route[T] {
	// Safety: e.route only ever holds a *route[T] for the T of e.static,
	// and this editor is only attached to such entries (newEntry[T]).
	return (*route[T])(unsafe.Pointer(e.route.Load()))
}

func (editorOf[T]) store(e *entry, r *route[T]) {
	if r.empty() {
		r = nil
	} else {
		r.plain = r.log == nil && r.records == nil && r.onlyDirect()
		r.alone = e.dynamic == nil
		r.solo, r.soloFn = nil, nil
		r.onlyBoxed = r.log == nil && r.records == nil && len(r.direct)+len(r.typed)+len(r.boxedSlow) == 0 && len(r.boxed) > 0
		if r.log == nil && r.records == nil && len(r.direct) == 0 && len(r.typed) == 1 && len(r.boxed)+len(r.boxedSlow) == 0 {
			r.solo = r.typed[0]
			if f, ok := r.solo.(funcSource[T]); ok {
				r.soloFn = f.deliverFunc()
			}
		}
		r.ordered = len(r.direct)+len(r.boxed) > 0
		r.live = len(r.boxedSlow) > 0
		for _, t := range r.typed {
			_, own := t.(*sub[T])
			r.ordered = r.ordered || own
			r.live = r.live || !own
		}
	}
	e.route.Store((*byte)(unsafe.Pointer(r)))
}

func (ed editorOf[T]) addLocked(e *entry, src source, boxed bool) {
	var r route[T]
	if old := ed.load(e); old != nil {
		r = *old
	}
	switch s, own := src.(*sub[T]); {
	case src.owner().isDead():
		// Closed by Shutdown: routed as a sink (a cancelled subscription
		// is never routed again).
		r.addClosedSink(e, src, boxed)
	case boxed && src.slow():
		r.boxedSlow = append(r.boxedSlow, newBoxedOut(src.(boxedSource), e))
	case boxed:
		r.boxed = append(r.boxed, newBoxedOut(src.(boxedSource), e))
	case own && !src.slow():
		s.at = len(r.direct) // where removeLocked looks first
		r.direct = append(r.direct, outlet[T]{s.ch, cap(s.ch), s})
	default:
		// Identity: the source type is T, so src is a subscription of type
		// T, or a From source whose argument has type T.
		r.typed = append(r.typed, src.(typedSource[T]))
	}
	ed.store(e, &r)
}

// addClosedSink lists a closedSink of src, the source of a subscription
// Shutdown closed, on r, the route of e: reached boxed or not (see decide).
func (r *route[T]) addClosedSink(e *entry, src source, boxed bool) {
	if boxed {
		r.boxedSlow = append(r.boxedSlow, newBoxedOut(newClosedSink[T](src), e))
	} else {
		r.typed = append(r.typed, newClosedSink[T](src))
	}
}

func (ed editorOf[T]) removeLocked(e *entry, s subscriber) {
	old := ed.load(e)
	if old == nil {
		return
	}
	if ss, own := s.(*sub[T]); own && ss.plain() {
		if i := indexOf(old.direct, ss); i >= 0 {
			// A subscription has one source per route: once found here,
			// it is nowhere else on it.
			ed.buryLocked(e, old, i)
			return
		}
	}
	r := *old
	owned := func(src source) bool { return src.owner() == s }
	r.typed = without(r.typed, func(t typedSource[T]) bool { return owned(t) })
	r.boxed = without(r.boxed, func(t boxedOut) bool { return t.owner() == s })
	r.boxedSlow = without(r.boxedSlow, func(t boxedOut) bool { return t.owner() == s })
	if len(r.typed) == len(old.typed) &&
		len(r.boxed) == len(old.boxed) && len(r.boxedSlow) == len(old.boxedSlow) {
		return // s was not routed here
	}
	ed.store(e, &r)
}

// buryLocked removes the outlet at i from old, the route of e, leaving a
// tombstone (see outlet). Once the tombstones outnumber the live outlets it
// publishes a route without them, whose copy the cancels that made them pay
// for: removal is O(1) amortized, and a route's list is never more than
// twice its live outlets.
func (ed editorOf[T]) buryLocked(e *entry, old *route[T], i int) {
	// Its drops are no longer found on the route: its close adds their
	// count, frozen, to the entry's, in the same hold of Broker.mu (see
	// sub.retireTo).
	old.direct[i].sub.retireTo = &e.retired
	old.direct[i].bury()
	e.buried++
	if 2*e.buried <= len(old.direct) {
		return
	}
	r := *old
	r.direct = make([]outlet[T], 0, len(old.direct)-e.buried)
	for _, o := range live(old.direct) {
		o.sub.at = len(r.direct)
		r.direct = append(r.direct, outlet[T]{o.channel(), o.cap, o.sub})
	}
	e.buried = 0
	ed.store(e, &r)
}

// indexOf returns the index of the live outlet of s in outs, or -1.
func indexOf[T any](outs []outlet[T], s *sub[T]) int {
	if i := s.at; i < len(outs) && outs[i].sub == s && outs[i].channel() != nil {
		return i
	}
	// s.at is where s was last appended: for a subscription of an interface
	// type, on the route of another dynamic type maybe.
	for i := range outs {
		if outs[i].sub == s && outs[i].channel() != nil {
			return i
		}
	}
	return -1
}

// live calls yield with each outlet of outs that is not buried. (The
// publications loop by hand, loading each channel once.)
func live[T any](outs []outlet[T]) func(func(int, *outlet[T]) bool) {
	return func(yield func(int, *outlet[T]) bool) {
		for i := range outs {
			if o := &outs[i]; o.channel() != nil && !yield(i, o) {
				return
			}
		}
	}
}

// A heldSource is the source, on an entry's route, of a subscription kept
// off it (see Broker.held), and whether it is reached boxed (see decide).
type heldSource struct {
	src   source
	boxed bool
}

func (ed editorOf[T]) sealLocked(e *entry, held []heldSource) {
	old := ed.load(e)
	var r route[T]
	e.buried = 0 // the new route lists no outlet
	if old != nil {
		for _, o := range live(old.direct) {
			e.sealed = append(e.sealed, &o.sub.lost) // read on: see entry.sealed
			r.typed = append(r.typed, newClosedSink[T](o.sub))
		}
		for _, t := range old.typed {
			r.typed = append(r.typed, newClosedSink[T](t))
		}
		for _, t := range slices.Concat(old.boxed, old.boxedSlow) {
			r.boxedSlow = append(r.boxedSlow, newBoxedOut(newClosedSink[T](t.boxedSource), e))
		}
	}
	for _, h := range held {
		r.addClosedSink(e, h.src, h.boxed)
	}
	if c := e.log.Load(); c != nil && c.rec != e { // the entry of T, not of Record[T]
		r.records = closedRecords[T]{c.rec}
	}
	ed.store(e, &r)
}

func (ed editorOf[T]) countSealed(g *guard, e *entry, v any) {
	r := ed.load(e)
	if r == nil {
		return
	}
	x, _ := v.(T) // Safety: v is of e's static type
	for _, t := range r.typed {
		t.deliver(g, x, nil)
	}
}

func (editorOf[T]) static() reflect.Type { return reflect.TypeFor[T]() }

func (ed editorOf[T]) eachSourceLocked(e *entry, f func(source)) {
	r := ed.load(e)
	if r == nil {
		return
	}
	unwrap := func(src source) source {
		if c, ok := src.(interface{ closedSource() source }); ok {
			return c.closedSource()
		}
		return src
	}
	for _, o := range live(r.direct) {
		f(o.sub)
	}
	for _, t := range r.typed {
		f(unwrap(t))
	}
	for _, t := range slices.Concat(r.boxed, r.boxedSlow) {
		f(unwrap(t.boxedSource))
	}
}

func (ed editorOf[T]) aloneLocked(e *entry) uint64 {
	n := e.retired
	for _, l := range e.sealed {
		n += l.alone()
	}
	if r := ed.load(e); r != nil {
		for _, o := range live(r.direct) {
			n += o.sub.lost.alone()
		}
	}
	return n
}

func (ed editorOf[T]) eachLocked(e *entry, f func(subscriber)) {
	r := ed.load(e)
	if r == nil {
		return
	}
	for _, o := range live(r.direct) {
		f(o.sub)
	}
	for _, t := range r.typed {
		f(t.owner())
	}
	for _, t := range r.boxed {
		f(t.owner())
	}
	for _, t := range r.boxedSlow {
		f(t.owner())
	}
}

// without returns xs without the first element for which match is true,
// in a new backing array, or xs itself if there is none.
func without[E any](xs []E, match func(E) bool) []E {
	for i, x := range xs {
		if match(x) {
			ys := make([]E, 0, len(xs)-1)
			return append(append(ys, xs[:i]...), xs[i+1:]...)
		}
	}
	return xs
}

// keyOf returns the key of type T: the runtime descriptor of *T, which is
// unique to T, and which exists for interface types too.
func keyOf[T any]() unsafe.Pointer {
	return typeWord((*T)(nil))
}

// dynamicKey returns the key of the dynamic type of x, or nilDynamic.
func dynamicKey(x any) unsafe.Pointer {
	if x == nil {
		return nilDynamic
	}
	return typeWord(x)
}

// typeWord returns the type descriptor of x's dynamic type.
func typeWord(x any) unsafe.Pointer {
	// Safety: an empty interface is two words, the first being its dynamic
	// type's descriptor, which the runtime keeps for the program's lifetime.
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&x))[0]
}
