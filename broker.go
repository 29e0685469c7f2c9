package topic

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/seedaa7df82c/topic/internal/queue"
)

// A Broker routes published values to subscriptions by Go type.
//
// The zero Broker is ready to use. Brokers are independent: a value published
// to one is never observed through another. A Broker must not be copied after
// first use; go vet reports copies.
//
// A Broker keeps every subscription until it is cancelled, and a small routing
// entry for every type it has routed, for as long as the Broker is reachable.
type Broker struct {
	// table is the routing table, nil until the first subscription. Stored
	// only with mu held; loaded by publishers without any lock.
	table atomic.Pointer[table]

	mu sync.Mutex // serialises subscribe, cancel and the resolution of new types
	// all lists every entry of the table, in insertion order. Guarded by mu.
	all []*entry
	// wild lists the live subscriptions that have an interface source, in
	// subscription order, and after Shutdown those it closed. Guarded by mu.
	wild []subscriber
	// timers are the functions of TimeCalls in force, nil if none: stored
	// with mu held, loaded by handlers' workers at each call.
	timers atomic.Pointer[[]*callTimer]
	// handlers holds the handlers whose worker has not ended. Guarded by mu.
	handlers map[handlerRef]struct{}
	// held holds the subscriptions kept off the route of their own type:
	// those whose replay has not yet routed them (see replayer), and
	// followers, which read the log instead. Guarded by mu.
	held   map[subscriber]struct{}
	closed bool   // set by Shutdown: nothing more is registered; guarded by mu
	drain  *drain // set by the first Shutdown; guarded by mu
	// done is Done's channel, made on first use; closed when closed is set.
	// Guarded by mu.
	done chan struct{}
	park parking
	// final lists the subscriptions Shutdown closed, stopped handlers
	// included, for Subscriptions. Set once, by Shutdown; guarded by mu.
	final []subscriber
	// watches are the Watch calls not ended, which learn of each
	// subscription that ends (see watch.ended). Guarded by mu.
	watches []*watch

	// running counts the goroutines of the broker: handlers' workers and
	// Shutdown's drain (a seam for the tests).
	running atomic.Int64
	// probing counts the calls of quiet in progress: a drain's or a
	// Settle's rounds of probes, asking the handlers' workers whether they
	// are idle. A worker that begins a wait while it is zero waits on its
	// wake-up channel alone, a receive that costs about two thirds of what a
	// select of two channels does; one that begins it while it is not zero
	// waits for its probes too, until that wait ends.
	probing atomic.Int32
}

// Publish offers v to every subscription that matches it.
//
// The topic is T, the compile-time type of v. Publishing a value no
// subscription matches is valid and has no effect.
//
// Delivery to each matching subscription is a non-blocking send: if the
// subscription cannot accept the value immediately, a value is lost for that
// subscription only, the new one or, under DropOldest, its oldest queued
// one, and counted. Publish never blocks on a subscriber and never
// returns before delivery has been attempted for every subscription
// registered when it began.
func (b *Broker) Publish[T any](v T) {
	t := b.table.Load()
	if t == nil {
		return
	}
	k := keyOf[T]()
	e := t.find(k, nil)
	if e != nil && e.iface {
		e = t.find(k, dynamicKey(any(v))) // v is an interface: no allocation
	}
	if e == nil {
		if !t.wild {
			return
		}
		if e = b.resolve(k, v); e == nil {
			return
		}
	}
	// Safety: e was found under keyOf[T], so its route is a *route[T].
	r := (*route[T])(unsafe.Pointer(e.route.Load()))
	if r == nil {
		return
	}
	if r.plain {
		sendDirect(t.guard, e, r, v)
		return
	}
	if r.onlyBoxed {
		sendBoxedDirect(t.guard, e, v)
		return
	}
	if r.soloFn != nil {
		// solo's deliver, without the interface call (see route.soloFn).
		r.soloFn(t.guard, v, &e.published)
		return
	}
	if r.solo != nil {
		// A source of its own, outside the guard, which it enters for
		// its send and checks its subscription there (as send would).
		r.solo.deliver(t.guard, v, &e.published)
		return
	}
	if r.log == nil && r.records == nil {
		send(t.guard, e, r, v) // deliver, a call short
		return
	}
	deliver(t.guard, e, r, v)
}

// resolve returns the entry for a publication of v, of static type T with
// key k, creating it from the wildcard subscriptions if it is missing. It is
// called once per new type, or per new dynamic type of an interface type.
func (b *Broker) resolve[T any](k unsafe.Pointer, v T) *entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.table.Load()
	if t == nil {
		return nil // shut down
	}
	typ := reflect.TypeFor[T]()
	if !isInterface(typ) {
		if e := t.find(k, nil); e != nil {
			return e
		}
		return b.addEntryLocked(newEntry[T](nil, typ, false))
	}
	if t.find(k, nil) == nil {
		b.addEntryLocked(newEntry[T](nil, nil, true))
	}
	x := any(v)
	dk := dynamicKey(x)
	if e := b.table.Load().find(k, dk); e != nil {
		return e
	}
	var dt reflect.Type
	if x != nil {
		dt = reflect.TypeOf(x)
	}
	return b.addEntryLocked(newEntry[T](dk, dt, false))
}

// addEntryLocked routes the wildcard subscriptions that match e, then
// publishes a table holding e. Concrete sources are routed by their
// subscription.
func (b *Broker) addEntryLocked(e *entry) *entry {
	if !e.iface {
		for _, s := range b.wild {
			if src, boxed := decide(s.sources(), e); src != nil {
				e.edit.addLocked(e, src, boxed)
			}
		}
	}
	b.all = append(b.all, e)
	t := b.table.Load()
	switch {
	case t == nil:
		t = newTable(len(b.all), newGuard())
	case 2*len(b.all) > len(t.slots):
		// Half full: a table twice the size, filled, published last.
		n := newTable(len(b.all), t.guard)
		n.wild, n.sealed = t.wild, t.sealed
		for _, x := range b.all[:len(b.all)-1] {
			n.insert(x)
		}
		t = n
	}
	t.insert(e)
	b.table.Store(t) // the same table, or a new one filled before
	return e
}

// Subscribe registers a subscription for values of type T and returns its
// channel and a cancellation function.
//
// By default the subscription accepts publications whose type is T, or whose
// value implements T when T is an interface type. From adds source types it
// also accepts, and Buffer sets its capacity; without it the capacity is one.
//
// Cancelling unregisters the subscription and closes the channel, which ends
// a range loop over it. Cancelling is idempotent, and after it returns nothing
// is ever sent on the channel again. A subscription that is never cancelled is
// retained by the broker, so callers should cancel when they stop receiving.
func (b *Broker) Subscribe[T any](opts ...Option[T]) (<-chan T, func()) {
	ch, cancel := b.subscribe(opts, nil, callerPC())
	if ch == nil {
		ch = make(chan T)
		close(ch)
		return ch, func() {}
	}
	return ch, cancel
}

// subscribe registers a subscription configured by opts, made at made (see
// callerPC), and returns its channel and cancellation; a nil channel if the
// broker is shut down. For a
// handler, h binds the handler to the subscription before it is registered
// and registers the handler with it, Broker.mu held. (h is a function, not a
// *handler[T], so that Subscribe[T] does not instantiate handlers, which
// publish DeadLetter[T]: an instantiation cycle.)
func (b *Broker) subscribe[T any](opts []Option[T], h func(*sub[T], *config[T]) handlerRef, made uintptr) (chan T, func()) {
	s := &sub[T]{b: b, made: made}
	c := config[T]{sub: s, capacity: 1}
	if h != nil {
		c.capacity = DefaultHandlerBuffer
	}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&c)
		}
	}
	if h == nil && c.handlerOnly != "" && c.follow != followPull {
		panic("topic: " + c.handlerOnly + " is an option of Broker.Handle, not Subscribe")
	}
	if c.follow != followNone {
		return b.subscribeFollower(s, &c, h)
	}
	if c.ackWaitSet {
		panic("topic: AckWait is an option of a follower (Follow, Broker.Follow), with a Name")
	}
	if h != nil {
		s.q = queue.New[T](c.capacity, queue.NewWaiter(), handlerLeave(c.policy, c.capacity)) // in place of a channel
	} else {
		s.ch = make(chan T, c.capacity)
	}
	s.policy = c.policy
	if c.name != "" || c.onLoss != nil || c.ctx != nil || len(c.srcs) > 0 || h != nil {
		s.opt = &subOptions[T]{srcs: c.srcs, name: c.name, onLoss: c.onLoss}
	}
	srcs := s.sources()
	for _, src := range srcs {
		s.wild = s.wild || isInterface(src.typ())
	}
	if h != nil {
		for _, src := range srcs {
			if r, ok := src.(interface{ redrives() bool }); ok && r.redrives() && s.opt.redrive == nil {
				s.opt.redrive = queue.New[T](c.capacity, s.q.Waiter(), s.q.Leave()) // the worker waits for both
			}
		}
	}
	var l *logCore
	if c.start != nil {
		if l = b.logCoreOf(keyOf[T]()); l == nil {
			if b.isClosed() {
				return nil, nil
			}
			panic("topic: Replay on " + reflect.TypeFor[T]().String() + ", which is not retained")
		}
	}
	// A replay routes s for the entry of T only once it has caught up with
	// the log: see replayer.
	e, ok := b.register(s, srcs, &c, h, l != nil)
	if !ok {
		return nil, nil
	}
	if h != nil {
		// Before a replay, whose functions may wait for it (Shutdown).
		s.opt.handler.start()
	}
	if l != nil {
		// e.replay was set before e.log, which logCoreOf loaded.
		e.replay.replay(b, e, s, *c.start)
	}
	return s.ch, s.cancel
}

// subscribeFollower is subscribe for a follower (see Follow): s, configured
// by c, is kept off its type's route, and fed by a follower of the log.
func (b *Broker) subscribeFollower[T any](s *sub[T], c *config[T], h func(*sub[T], *config[T]) handlerRef) (chan T, func()) {
	what := "Subscribe"
	switch {
	case c.follow == followPull:
		what = "Follow"
	case h != nil:
		what = "Handle"
	}
	c.checkFollow(what)
	var e *entry
	if t := b.table.Load(); t != nil && !t.sealed {
		if e = t.find(keyOf[T](), nil); e != nil && e.log.Load() == nil {
			e = nil
		}
	}
	if e == nil {
		if b.isClosed() {
			return nil, nil
		}
		if what != "Follow" {
			what += " with the Follow option"
		}
		name := reflect.TypeFor[T]().String()
		panic("topic: " + what + " of " + name + ": " + name + " is not retained (declare it first with Broker.Retain or Broker.RetainLatest)")
	}
	capacity := c.capacity
	if c.follow == followPull || h != nil {
		capacity = 0 // the log is the queue
	}
	s.ch = make(chan T, capacity)
	s.opt = &subOptions[T]{name: c.name, onLoss: c.onLoss}
	st := &start{name: c.name, ackWait: c.ackWait, pushed: c.follow != followPull}
	if c.start != nil {
		st.at = *c.start
	}
	// e.replay was set before e.log, which was loaded set.
	s.opt.feed, s.opt.follower = e.replay.(feedMaker[T]).newFeed(st, s.skip)
	if c.follow == followChannel {
		// Until the pump or the handler's worker, or what stands for it,
		// ends, after its last commit.
		s.opt.feed.holdName()
		if h == nil {
			s.opt.pumped = make(chan struct{})
			s.opt.feed.handOffTo(s.ch, &s.sent)
		}
	}
	if _, ok := b.register(s, s.sources(), c, h, true); !ok {
		s.opt.feed.end()
		s.opt.feed.freeName()
		return nil, nil
	}
	switch {
	case h != nil:
		s.opt.handler.start()
	case s.opt.pumped != nil && s.dead.Load():
		// Cancelled already (a Context done, or Shutdown): closed at once,
		// as any subscription, with no pump to start.
		s.opt.feed.freeName()
		close(s.ch)
		close(s.opt.pumped)
	case s.opt.pumped != nil:
		b.running.Add(1)
		go s.pump()
	}
	return s.ch, s.cancel
}

// register routes s, with sources srcs, configured by c, and binds it to
// the handler h, if any; false if the broker is shut down. If replay is
// set, it returns the entry of T and leaves s off its route.
func (b *Broker) register[T any](s *sub[T], srcs []source, c *config[T], h func(*sub[T], *config[T]) handlerRef, replay bool) (held *entry, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, false
	}
	if replay {
		held = b.entryLocked(keyOf[T]())
		if b.held == nil {
			b.held = make(map[subscriber]struct{})
		}
		b.held[s] = struct{}{}
	}
	// Make sure every concrete source type has an entry; one created here
	// is routed to the wildcard subscriptions already, not yet to s.
	for _, src := range srcs {
		if !isInterface(src.typ()) && b.entryLocked(src.key()) == nil {
			b.addEntryLocked(src.newEntry())
		}
	}
	if s.wild {
		b.wild = append(b.wild, s)
		if t := b.table.Load(); t == nil || !t.wild {
			b.setWildLocked(true)
		}
	}
	for _, e := range b.candidatesLocked(s) {
		if src, boxed := decide(srcs, e); src != nil && e != held {
			e.edit.addLocked(e, src, boxed)
		}
	}
	if h != nil {
		ref := h(s, c)
		s.opt.handler = ref
		if b.handlers == nil {
			b.handlers = make(map[handlerRef]struct{})
		}
		b.handlers[ref] = struct{}{}
	}
	if c.ctx != nil {
		if c.ctx.Err() != nil {
			s.cancelLocked()
		} else {
			// Until ctx ends nothing runs: AfterFunc starts no goroutine.
			// A handler's ctx stops it as its stop would, DiscardOnStop
			// included, without waiting for it.
			end := s.cancel
			if h != nil {
				end = s.opt.handler.stopNoWait
			}
			s.opt.stop = context.AfterFunc(c.ctx, end)
		}
	}
	return held, true
}

// isClosed reports whether Shutdown was called.
func (b *Broker) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// logCoreOf returns the log of the retained type with key k, or nil; nil
// after Shutdown.
func (b *Broker) logCoreOf(k unsafe.Pointer) *logCore {
	if t := b.table.Load(); t != nil && !t.sealed {
		if e := t.find(k, nil); e != nil {
			return e.log.Load()
		}
	}
	return nil
}

// entryLocked returns the entry stored under (k, nil), or nil.
func (b *Broker) entryLocked(k unsafe.Pointer) *entry {
	if t := b.table.Load(); t != nil {
		return t.find(k, nil)
	}
	return nil
}

// candidatesLocked returns the entries whose routes s may belong to: all of
// them for a wildcard subscription, else those of its source types.
func (b *Broker) candidatesLocked(s subscriber) []*entry {
	if s.isWild() {
		var es []*entry
		for _, e := range b.all {
			if !e.iface {
				es = append(es, e)
			}
		}
		return es
	}
	var es []*entry
	for _, src := range s.sources() {
		if e := b.entryLocked(src.key()); e != nil && !containsEntry(es, e) {
			es = append(es, e)
		}
	}
	return es
}

func containsEntry(es []*entry, e *entry) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// setWildLocked publishes a copy of the table with wild set to w.
func (b *Broker) setWildLocked(w bool) {
	t := b.table.Load()
	var n *table
	if t != nil {
		c := *t // the slots are shared: a new header for the same table
		n = &c
	} else {
		n = newTable(0, newGuard())
	}
	n.wild = w
	b.table.Store(n)
}

// cancel unregisters s, waits until no publisher can still send to it, and
// closes its channel. Concurrent and repeated calls return after the first
// has closed the channel.
func (s *sub[T]) cancel() {
	b := s.b
	b.mu.Lock()
	s.cancelLocked()
	b.mu.Unlock()
	if s.opt != nil && s.opt.pumped != nil && !closed(s.opt.pumped) {
		if s.opt.pumpID.Load() == goid() {
			return // called by the pump, from an OnLoss function: it closes the channel once that returns
		}
		<-s.opt.pumped // the pump closes the channel
	}
}

func (s *sub[T]) cancelLocked() {
	b := s.b
	if s.dead.Load() {
		return
	}
	s.dead.Store(true)
	for _, w := range b.watches {
		w.ended = append(w.ended, s) // for its last counts
	}
	if s.opt != nil && s.opt.stop != nil {
		s.opt.stop() // release the context's reference to s
	}
	if b.held != nil {
		delete(b.held, s)
	}
	for _, e := range b.candidatesLocked(s) {
		e.edit.removeLocked(e, s)
	}
	if s.wild {
		b.wild = deleteSubscriber(b.wild, s)
		if len(b.wild) == 0 {
			b.setWildLocked(false)
		}
	}
	b.table.Load().guard.wait()
	s.closeLocked()
}

func deleteSubscriber(ss []subscriber, s subscriber) []subscriber {
	for i, x := range ss {
		if x == s {
			return append(ss[:i:i], ss[i+1:]...)
		}
	}
	return ss
}

// mustContext panics with a message naming the call if ctx is nil, which
// would otherwise panic as a nil pointer somewhere inside it.
func mustContext(ctx context.Context, call string) {
	if ctx == nil {
		panic("topic: " + call + " with a nil context")
	}
}
