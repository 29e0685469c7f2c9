package topic

import (
	"reflect"
	"sync/atomic"
	"unsafe"
)

// A subscriber is a subscription, whatever its type.
type subscriber interface {
	sources() []source // From sources in order, then the own type
	isWild() bool      // some source is an interface type
	stats() SubscriptionStats
	cancelLocked()
	isDead() bool // cancelled, or closed by Shutdown
	// settled reports whether its counts are final: it is dead, and its
	// handler's worker or its follower's pump, if any, has ended. wasSealed
	// reports whether Shutdown closed it (rather than its cancel).
	settled() bool
	wasSealed() bool
	// sealLocked marks the subscription closed by Shutdown, and closeLocked
	// closes its channels once no publisher can send to them.
	sealLocked()
	closeLocked()
	// countClosed counts a publication that reached the subscription after
	// Shutdown closed it, and reports whether it has an OnLoss function;
	// reportClosed reports it there, v being the value its source would
	// have taken, own whether that source is its own type.
	countClosed() bool
	reportClosed(v any, own bool)
	// pumping tells when a channel follower's pump has closed its channel.
	pumping() (done <-chan struct{}, id uint64)
}

// sub is a channel subscription of type T.
type sub[T any] struct {
	ch   chan T
	b    *Broker
	opt  *subOptions[T] // nil unless an option beyond Buffer and Overflow was given
	lost lossCounter
	// dead is set by cancel, with b.mu held, before it waits for the guard.
	// A publisher that enters the guard with a route loaded before it, as
	// offer does after a From function ran, checks it before sending.
	dead atomic.Bool
	// sealed is set by Shutdown before dead: a publisher that finds dead
	// set counts the value as Closed if sealed is set too.
	sealed atomic.Bool
	wild   bool   // never changes after Subscribe
	policy Policy // never changes after Subscribe
	// at is where the subscription's outlet was last appended to a route's
	// list, to find it there in O(1) when it is removed. Guarded by
	// Broker.mu.
	at int
}

// subOptions holds what few subscriptions need. Never changes after
// Subscribe, but for stop, which is guarded by Broker.mu.
type subOptions[T any] struct {
	srcs   []source // From sources, in order
	name   string
	onLoss func(Loss[T])
	stop   func() bool // stops the context.AfterFunc of a Context option
	// handler is the handler draining the channel, or nil. Set with
	// Broker.mu held, before the subscription is registered.
	handler handlerRef
	// redrive is the handler's queue of what its From sources of dead
	// letters deliver, or nil: see Broker.Handle. Closed with ch.
	redrive chan T
	// feed is what a follower reads (see Follow), nil for a subscription
	// that is sent to; follower is its engine, for Broker.Follow. pumped is
	// closed when the goroutine that feeds a channel follower's channel
	// ends, having closed it. Never change after Subscribe.
	feed     feed[T]
	follower any
	pumped   chan struct{}
	pumpID   atomic.Uint64 // the goroutine id of the pump, set before it runs anything else
}

// name returns the subscription's Name.
func (s *sub[T]) name() string {
	if s.opt == nil {
		return ""
	}
	return s.opt.name
}

// plain reports whether the subscription can be delivered to inside a
// publication's guard section: nothing of the user's runs, in one step.
func (s *sub[T]) plain() bool {
	return s.policy == DropNewest && (s.opt == nil || s.opt.onLoss == nil)
}

func (s *sub[T]) sources() []source {
	var srcs []source
	if s.opt != nil {
		srcs = s.opt.srcs
	}
	return append(srcs[:len(srcs):len(srcs)], source(s))
}

func (s *sub[T]) isWild() bool { return s.wild }
func (s *sub[T]) isDead() bool { return s.dead.Load() }

func (s *sub[T]) settled() bool {
	if !s.dead.Load() {
		return false
	}
	if s.opt == nil {
		return true
	}
	if h := s.opt.handler; h != nil && !closed(h.ended()) {
		return false // its worker still counts: retries, dead letters, discards
	}
	return s.opt.pumped == nil || closed(s.opt.pumped)
}

func (s *sub[T]) wasSealed() bool { return s.sealed.Load() }

func (s *sub[T]) sealLocked() {
	if s.dead.Load() {
		return
	}
	s.sealed.Store(true)
	s.dead.Store(true)
	if s.opt != nil && s.opt.stop != nil {
		s.opt.stop() // release the context's reference to s
	}
}

func (s *sub[T]) closeLocked() {
	if s.opt != nil && s.opt.feed != nil {
		s.opt.feed.end() // the follower quits
		if s.opt.pumped != nil {
			return // its pump closes the channel
		}
	}
	s.lost.freezeFull(s.sealed.Load()) // no publisher inside the guard still counts for it
	close(s.ch)
	if s.opt != nil && s.opt.redrive != nil {
		close(s.opt.redrive)
	}
}

// skip counts and reports the run of n values of a retained type, from
// offset first on, that a follower skipped.
func (s *sub[T]) skip(first, n uint64) {
	s.lost.addN(Skipped, n)
	if s.opt != nil && s.opt.onLoss != nil {
		callOnLoss(s.opt.onLoss, Loss[T]{Cause: Skipped, Offset: first, Count: n})
	}
}

// pump feeds a channel follower's channel from the log, waiting for room
// rather than losing a value, and commits what the channel took. It closes
// the channel when the follower quits.
func (s *sub[T]) pump() {
	s.opt.pumpID.Store(goid()) // before any OnLoss call: see cancel and drain.waitPumps
	// Last, once nothing of the user's runs (an OnLoss function included,
	// even one that calls runtime.Goexit): Shutdown and cancel wait for
	// pumped, but not when the pump itself calls them (see pumpID).
	defer func() {
		close(s.ch)
		s.b.running.Add(-1)
		close(s.opt.pumped)
	}()
	fd := s.opt.feed
	quit := fd.quitting()
loop:
	for {
		v, off, err := fd.next(nil)
		if err != nil {
			break
		}
		select {
		case s.ch <- v:
			fd.commit(off)
		case <-quit:
			if s.sealed.Load() {
				// Read for this subscription, which Shutdown closed first.
				s.lose(Loss[T]{Cause: Closed, Value: v}, nil)
			}
			break loop
		}
	}
}

// pumping returns what is closed once a channel follower's pump has closed
// its channel, and the pump's goroutine id (0 if not yet known); nil if s
// has no pump.
func (s *sub[T]) pumping() (<-chan struct{}, uint64) {
	if s.opt == nil || s.opt.pumped == nil {
		return nil, 0
	}
	return s.opt.pumped, s.opt.pumpID.Load()
}

func (s *sub[T]) countClosed() bool {
	s.lost.add(Closed)
	return s.opt != nil && s.opt.onLoss != nil
}

func (s *sub[T]) reportClosed(v any, own bool) {
	l := Loss[T]{Cause: Closed}
	if x, ok := v.(T); ok && own {
		l.Value = x
	} else {
		l.Source = v // the value a From function would have been given
	}
	callOnLoss(s.opt.onLoss, l)
}

// A subscription is its own last source.

func (s *sub[T]) key() unsafe.Pointer { return keyOf[T]() }
func (s *sub[T]) typ() reflect.Type   { return reflect.TypeFor[T]() }
func (s *sub[T]) owner() subscriber   { return s }
func (s *sub[T]) slow() bool          { return !s.plain() }
func (s *sub[T]) newEntry() *entry    { return newEntry[T](nil, reflect.TypeFor[T](), false) }

func (s *sub[T]) tabFor(t reflect.Type) unsafe.Pointer { return tabOf[T](t) }

// deliver offers v, a publication of type T, to a subscription that is not
// plain; the caller is outside the guard.
func (s *sub[T]) deliver(g *guard, v T) { s.offer(g, v, nil) }

// deliverBoxed offers x, which the route matched against T, an interface
// type; the caller is outside the guard. Routes call it only for a
// subscription that is not plain: a plain one is sent to inside the guard,
// through its boxedOut.
func (s *sub[T]) deliverBoxed(g *guard, x any, tab unsafe.Pointer) {
	v, ok := asSource[T](x, tab)
	if !ok {
		return // unreachable: the route matched x against T
	}
	s.offer(g, v, nil)
}

// outlet returns a plain subscription's channel and loss counter (for an
// interface type T, to be sent to by boxedOut.send), nil for one that is
// slow.
func (s *sub[T]) outlet() (unsafe.Pointer, *lossCounter) {
	if s.slow() {
		return nil, nil
	}
	return *(*unsafe.Pointer)(unsafe.Pointer(&s.ch)), &s.lost
}

// maxEvictions bounds the attempts of a drop-oldest publication: evicting a
// value and then finding the buffer full again means other publishers are
// filling it at the same moment, and the publication must not spin.
const maxEvictions = 4

// offer sends v under the subscription's policy, from outside the guard,
// entering it for each attempt, and counts what it lost. It reports the
// losses to OnLoss once outside the guard, or, if later is not nil, keeps
// them there for the caller to report.
func (s *sub[T]) offer(g *guard, v T, later *lossBuffer[T]) {
	s.offerTo(g, s.ch, v, later)
}

// offerTo is offer into ch, the subscription's channel or its re-drive queue.
func (s *sub[T]) offerTo(g *guard, ch chan T, v T, later *lossBuffer[T]) {
	for attempt := 0; ; attempt++ {
		// Losses are counted inside the guard, so that once a cancel
		// returns the subscription's counts are final (see Broker.Watch);
		// reported to OnLoss outside it.
		c := g.enter()
		if s.dead.Load() {
			sealed := s.sealed.Load()
			if sealed {
				s.lost.add(Closed) // Shutdown closed it after the route was loaded
			}
			g.exit(c)
			if sealed {
				s.report(Loss[T]{Cause: Closed, Value: v}, later)
			}
			return
		}
		select {
		case ch <- v:
			g.exit(c)
			return
		default:
		}
		if s.policy != DropOldest || cap(ch) == 0 || attempt == maxEvictions {
			s.lost.addFull()
			g.exit(c)
			s.report(Loss[T]{Cause: Full, Value: v}, later)
			return
		}
		// Make room: take the oldest value from the head of the buffer.
		// The buffer keeps its order; another receiver may have emptied it
		// meanwhile, in which case there is nothing to evict.
		var old T
		evicted := false
		select {
		case old = <-ch:
			evicted = true
			s.lost.add(Evicted)
		default:
		}
		g.exit(c)
		if evicted {
			s.report(Loss[T]{Cause: Evicted, Value: old}, later)
		}
	}
}

// lose counts l and hands it to the subscription's OnLoss function, if any,
// on the calling goroutine, outside the guard; or to later, if not nil.
func (s *sub[T]) lose(l Loss[T], later *lossBuffer[T]) {
	s.lost.add(l.Cause)
	s.report(l, later)
}

// report hands l, counted, to the subscription's OnLoss function, as lose
// does.
func (s *sub[T]) report(l Loss[T], later *lossBuffer[T]) {
	if s.opt == nil || s.opt.onLoss == nil {
		return
	}
	if later != nil {
		later.add(s, l)
		return
	}
	callOnLoss(s.opt.onLoss, l)
}

// A lossBuffer keeps losses to report to OnLoss functions once the caller
// has left the sequencing point of a retained type. The first few are kept
// without allocating.
type lossBuffer[T any] struct {
	n     int
	fixed [4]pendingLoss[T]
	more  []pendingLoss[T]
}

type pendingLoss[T any] struct {
	s *sub[T]
	l Loss[T]
}

func (b *lossBuffer[T]) add(s *sub[T], l Loss[T]) {
	if b.n < len(b.fixed) {
		b.fixed[b.n] = pendingLoss[T]{s, l}
		b.n++
		return
	}
	b.more = append(b.more, pendingLoss[T]{s, l})
}

// report hands the losses kept to their OnLoss functions.
func (b *lossBuffer[T]) report() {
	for _, p := range b.fixed[:b.n] {
		callOnLoss(p.s.opt.onLoss, p.l)
	}
	for _, p := range b.more {
		callOnLoss(p.s.opt.onLoss, p.l)
	}
}

// callOnLoss calls f, recovering its panic: a lost-value hook must not take
// the publisher down.
func callOnLoss[T any](f func(Loss[T]), l Loss[T]) {
	defer func() { _ = recover() }()
	f(l)
}

func (s *sub[T]) stats() SubscriptionStats {
	st := SubscriptionStats{
		Type:     reflect.TypeFor[T](),
		Policy:   s.policy,
		Capacity: cap(s.ch),
		Queued:   len(s.ch),
		Lost:     s.lost.load(),
	}
	if s.opt != nil {
		if rd := s.opt.redrive; rd != nil {
			st.Capacity += cap(rd)
			st.Queued += len(rd)
		}
		if fd := s.opt.feed; fd != nil {
			st.Follower = fd.followerStats()
			if s.opt.pumped == nil {
				st.Queued = int(min(st.Follower.Lag, 1<<31-1)) // the log is its queue
			}
		}
		st.Name = s.opt.name
		if h := s.opt.handler; h != nil {
			st.Handler = h.stats()
			st.Lost.Errored, st.Lost.Discarded = h.lost()
		}
	}
	return st
}

// deliver offers v to the route r of entry e, through the log of T if T is
// retained.
func deliver[T any](g *guard, e *entry, r *route[T], v T) {
	if r.log != nil {
		r.log.publish(g, e, v)
		return
	}
	send(g, e, r, v)
	if r.records != nil {
		r.records.countRecord(g, v)
	}
}

// sendDirect offers v to the route r of entry e, a plain route: only
// plain subscriptions of type T. It is send, made short for the common
// case. The drop path of one subscription makes no call: its full-buffer
// check and its count are written out here, not in countFull and addFull
// (routing only 13.9 -> 8.1 ns; inlined in Publish instead, the check made
// Publish's frame bigger and every other publication slower: see README,
// Benchmarks). Every other path is a call, so that v, live across none
// here, is not spilled to the stack on the drop path (routing only -9.7 %).
func sendDirect[T any](g *guard, e *entry, r *route[T], v T) {
	if len(r.direct) == 1 {
		// One subscription, the common case: hasRoom and countFull of
		// one outlet, and addFull, whose fast path is inlined.
		o := &r.direct[0]
		if ch := o.channel(); ch != nil && !o.roomIn(ch) {
			// The send would fail: no guard (see countFull).
			if l := &o.sub.lost; !l.tryAddFull() {
				l.addStriped(Full)
			}
			return
		}
		sendOne(g, e, r, o, v)
		return
	}
	sendMany(g, e, r, v)
}

// sendOne offers v to o, the only outlet of r, a plain route of entry e
// whose buffer had room. Not inlined (see sendDirect).
//
//go:noinline
func sendOne[T any](g *guard, e *entry, r *route[T], o *outlet[T], v T) {
	c := g.enter()
	// The route and the channel must be loaded inside the guard (see
	// guard, outlet). If the route is still r, o is still its only
	// outlet: its channel is loaded without waiting for the route's
	// load to give o's address again.
	ch := o.channel()
	if (*route[T])(unsafe.Pointer(e.route.Load())) == r {
		if ch != nil {
			select {
			case ch <- v:
			default:
				o.sub.lost.addFull()
			}
		}
		g.exit(c)
		return
	}
	g.exit(c)
	sendMany(g, e, r, v) // changed meanwhile: it loads the route again
}

// sendMany offers v to route r of entry e, a plain route: of several
// outlets, or of one that changed meanwhile. Not inlined (see sendDirect).
//
//go:noinline
func sendMany[T any](g *guard, e *entry, r *route[T], v T) {
	// A route of one outlet comes from sendOne, which checked its room.
	if len(r.direct) != 1 && !hasRoom(r.direct) {
		countFull(r.direct) // every send would fail: no guard
		return
	}
	c := g.enter()
	// The route must be loaded inside the guard (see guard).
	// Safety: as in Publish.
	r = (*route[T])(unsafe.Pointer(e.route.Load()))
	if r == nil || !r.plain {
		g.exit(c)
		if r != nil {
			deliver(g, e, r, v) // changed meanwhile
		}
		return
	}
	for i := range r.direct {
		o := &r.direct[i]
		ch := o.channel() // inside the guard (see outlet)
		if ch == nil {
			continue
		}
		select {
		case ch <- v:
		default:
			o.sub.lost.addFull()
		}
	}
	g.exit(c)
}

// sendBoxedDirect offers v to the route of entry e, a route of plain
// interface subscriptions only (onlyBoxed): it is send, made short, as
// sendDirect is.
func sendBoxedDirect[T any](g *guard, e *entry, v T) {
	x := any(v) // the one boxing, shared by every interface subscription, outside the guard
	c := g.enter()
	// The route must be loaded inside the guard (see guard).
	// Safety: as in Publish.
	r := (*route[T])(unsafe.Pointer(e.route.Load()))
	if r == nil || !r.onlyBoxed {
		g.exit(c)
		if r != nil {
			deliver(g, e, r, v) // changed meanwhile
		}
		return
	}
	for i := range r.boxed {
		r.boxed[i].send(x)
	}
	g.exit(c)
}

// droppedAll reports whether every buffer of outs is full, so that every
// send would fail, and then counts the drops, without entering the guard. A
// cancelled subscription may still be listed in outs; it is not sent to.
func droppedAll[T any](outs []outlet[T]) bool {
	if hasRoom(outs) {
		return false
	}
	countFull(outs)
	return true
}

// countFull counts a drop on each live outlet of outs.
func countFull[T any](outs []outlet[T]) {
	for i := range outs {
		if o := &outs[i]; o.channel() != nil {
			o.sub.lost.addFull()
		}
	}
}

// hasRoom reports whether a send to one of outs may succeed: its buffer has
// room, or it is unbuffered (a receiver may be waiting).
func hasRoom[T any](outs []outlet[T]) bool {
	for i := range outs {
		o := &outs[i]
		if ch := o.channel(); ch != nil && o.roomIn(ch) {
			return true
		}
	}
	return false
}

// roomIn reports whether a send to ch, the outlet's channel, not nil, may
// succeed: its buffer has room, or it is unbuffered (a receiver may be
// waiting). It is inlined.
func (o *outlet[T]) roomIn(ch chan T) bool {
	return o.cap == 0 || queued(ch) < o.cap
}

// queued returns len(ch), which ch must not be nil, without the call that
// len of a channel compiles to: it loads the count of values queued that
// the runtime's channel header starts with, as len does. The layout is
// checked once (see countFirst); len is called if it does not hold.
func queued[T any](ch chan T) int {
	if countFirst {
		// Safety: a channel is a pointer to its header, whose first word
		// is the count (checked by countFirst), written by the runtime
		// with the channel's lock held: an atomic load reads a count it
		// had.
		return int(atomic.LoadUintptr(*(**uintptr)(unsafe.Pointer(&ch))))
	}
	return len(ch)
}

// countFirst reports whether the runtime's channel header starts with the
// count of queued values and then the capacity, as it has since Go 1.0:
// queued reads the first. Checked once, on channels of several sizes.
var countFirst = func() bool {
	for _, size := range []int{1, 3, 64} {
		ch := make(chan [3]int64, size)
		for n := range size + 1 {
			h := *(**[2]uintptr)(unsafe.Pointer(&ch))
			if h[0] != uintptr(len(ch)) || h[0] != uintptr(n) || h[1] != uintptr(cap(ch)) {
				return false
			}
			if n < size {
				ch <- [3]int64{}
			}
		}
	}
	return true
}()

// send offers v to the route r of entry e.
func send[T any](g *guard, e *entry, r *route[T], v T) {
	r, x := sendPlain(g, e, r, v, true)
	if r == nil {
		return
	}
	// What runs the user's code, or takes several steps, runs outside the
	// guard and enters it for each send.
	sendSlow(g, r, v, x, 0, false, true)
}

// sendSlow offers v to the typed sources of r, then, if boxed, to its slow
// interface sources (x is v boxed, if sendPlain boxed it), from the i-th of
// them on; live skips the subscriptions of type T, which a retained type's
// publication sent to in order (see sendLive). If a From function calls
// runtime.Goexit, the sources after it still get v, from the deferred call,
// before the goroutine ends: the publication loses nothing for them,
// uncounted.
func sendSlow[T any](g *guard, r *route[T], v T, x any, i int, live, boxed bool) {
	n := len(r.typed)
	if boxed {
		n += len(r.boxedSlow)
	}
	defer func() {
		if i < n { // left the loops early: runtime.Goexit (a From function's panic is recovered)
			sendSlow(g, r, v, x, i+1, live, boxed)
		}
	}()
	for ; i < len(r.typed); i++ {
		if _, own := r.typed[i].(*sub[T]); live && own {
			continue
		}
		r.typed[i].deliver(g, v)
	}
	if i < n && x == nil {
		x = any(v)
	}
	for ; i < n; i++ {
		s := r.boxedSlow[i-len(r.typed)]
		s.deliverBoxed(g, x, s.tab)
	}
}

// sendPlain sends v to the plain subscriptions of the route of e, inside
// one guard section, and returns the route it used (loaded inside the
// guard), nil if there is nothing more to do, and v boxed if it boxed it.
// r is the route as loaded before. Interface sources are sent to only if
// boxed.
func sendPlain[T any](g *guard, e *entry, r *route[T], v T, boxed bool) (_ *route[T], x any) {
	if r.onlyDirect() && droppedAll(r.direct) {
		return nil, nil // only plain sends, all of them dropped
	}
	if len(r.direct) == 0 && (!boxed || len(r.boxed) == 0) {
		// Nothing to send inside the guard: the other sources enter it for
		// their own sends and check there that their subscription is live,
		// so they need no route loaded inside it. (A From filter that
		// rejects then touches no shared word at all.)
		return r, nil
	}
	if boxed && len(r.boxed)+len(r.boxedSlow) > 0 {
		x = any(v) // the one boxing, shared by every interface subscription, outside the guard
	}
	c := g.enter()
	// The route must be loaded inside the guard (see guard).
	// Safety: as in Publish.
	r = (*route[T])(unsafe.Pointer(e.route.Load()))
	if r == nil {
		g.exit(c)
		return nil, nil
	}
	for i := range r.direct {
		o := &r.direct[i]
		ch := o.channel() // inside the guard (see outlet)
		if ch == nil {
			continue
		}
		select {
		case ch <- v:
		default:
			o.sub.lost.addFull()
		}
	}
	if boxed && len(r.boxed)+len(r.boxedSlow) > 0 {
		if x == nil {
			x = any(v) // the route changed since it was loaded: rare
		}
		for i := range r.boxed {
			r.boxed[i].send(x)
		}
	}
	g.exit(c)
	return r, x
}
