package topic

import (
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/seedaa7df82c/topic/internal/queue"
)

// A subscriber is a subscription, whatever its type.
type subscriber interface {
	sources() []source // From sources in order, then the own type
	isWild() bool      // some source is an interface type
	stats() SubscriptionStats
	// ident returns its type, its name and where it was made (see madeAt),
	// cheaply, with Broker.mu held.
	ident() (reflect.Type, string, uintptr)
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
	// freeze records, for a follower Shutdown closed, where its log stood;
	// called after closeLocked, without Broker.mu.
	freeze()
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
	ch chan T // nil for a handler sent to: q is its queue
	// q is the queue of a handler that is sent to (not a follower), which
	// its worker takes batches from, in place of ch; nil for any other.
	q    *queue.Queue[T]
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
	// made is the program counter of the call that made the subscription
	// (Subscribe, Handle or Follow), in its caller: see madeAt. Never
	// changes after Subscribe.
	made uintptr
	// at is where the subscription's outlet was last appended to a route's
	// list, to find it there in O(1) when it is removed. Guarded by
	// Broker.mu.
	at int
	// retireTo is, once its cancel has buried its outlet, the count of its
	// entry that its close adds its frozen fullAlone count to, so that the
	// publications it counted stay in Broker.Topics. Guarded by Broker.mu.
	retireTo *uint64
	// sent counts the values put in its channel (or its handler's
	// re-drive queue), on a line apart from the fields publishers read:
	// publishers on other cores write it.
	_    [cacheLine]byte
	sent tally
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
	// letters deliver, or nil: see Broker.Handle. Closed with q.
	redrive *queue.Queue[T]
	// feed is what a follower reads (see Follow), nil for a subscription
	// that is sent to; follower is its engine, for Broker.Follow. pumped is
	// closed when the goroutine that feeds a channel follower's channel
	// ends, having closed it. Never change after Subscribe.
	feed     feed[T]
	follower any
	pumped   chan struct{}
	pumpID   atomic.Uint64 // the goroutine id of the pump, set before it runs anything else
	// rejected counts the values its From functions rejected.
	rejected tally
}

func (s *sub[T]) ident() (reflect.Type, string, uintptr) {
	return reflect.TypeFor[T](), s.name(), s.made
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
	return s.policy == DropNewest && s.q == nil && (s.opt == nil || s.opt.onLoss == nil)
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

// freeze records, for a follower Shutdown closed, where its log stood (see
// follower.freeze); without Broker.mu.
func (s *sub[T]) freeze() {
	if s.opt != nil && s.opt.feed != nil && s.sealed.Load() {
		s.opt.feed.freeze()
	}
}

func (s *sub[T]) closeLocked() {
	if s.opt != nil && s.opt.feed != nil {
		s.opt.feed.end() // the follower quits
		if s.opt.pumped != nil {
			return // its pump closes the channel
		}
	}
	// No publisher inside the guard still counts for it; a drop counted
	// without it from now on is of a publication after the close.
	if alone := s.lost.freezeFull(s.sealed.Load()); s.retireTo != nil {
		*s.retireTo += alone
		s.retireTo = nil
	}
	if s.q != nil {
		s.q.Close()
		if s.opt.redrive != nil {
			s.opt.redrive.Close()
		}
		return
	}
	close(s.ch)
}

// skip counts and reports the run of n values of a retained type, from
// offset first on, that a follower skipped.
func (s *sub[T]) skip(first, n uint64) {
	s.lost.addN(Skipped, n)
	if s.opt != nil && s.opt.onLoss != nil {
		callHook(s.opt.onLoss, Loss[T]{Cause: Skipped, Offset: first, Count: n})
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
		s.opt.feed.freeName() // after its last commit (see holdName)
		close(s.ch)
		s.b.running.Add(-1)
		close(s.opt.pumped)
	}()
	fd := s.opt.feed
	quit := fd.quitting()
	// While the channel has room, the pump sends as many values at once
	// as it has room for (up to followBatch), read in one read, and commits
	// once for all: its sends never wait. Only the pump sends on s.ch, or
	// publications while it waits for them to (see handoff), after which
	// its read returns nothing and it looks at the room again; only
	// receivers take from it: so the room it sees can only grow until it
	// sends. With no room it reads one value and waits for room, or
	// for the end: at most one value is in its hands while it waits, as
	// when it read one at a time, so an AckWait re-read, a Seek or a
	// Shutdown finds what it found then. A read may run the OnLoss
	// function (what it skipped), which may cancel the subscription (then
	// cancel returns at once, and nothing may be sent after it) or Seek:
	// after a read the pump sends only while the follower is current.
	unsent := s.closedUnsent
loop:
	for {
		if room := min(cap(s.ch)-len(s.ch), followBatch); room > 0 {
			sent, off, err := fd.sendBatch(nil, s.ch, room, unsent)
			if sent > 0 {
				s.sent.add(uint64(sent))
				fd.commit(off)
			}
			if err != nil {
				break
			}
			continue
		}
		v, off, err := fd.next(nil)
		if err != nil {
			break
		}
		if closed(quit) { // quit by the read's OnLoss
			unsent(v)
			break
		}
		select {
		case s.ch <- v:
			s.sent.add(1)
			fd.commit(off)
		case <-quit:
			unsent(v)
			break loop
		}
	}
}

// closedUnsent accounts for a value a channel follower's pump read and did
// not send because the follower quit: if Shutdown closed the subscription
// first, it was read for it, and is lost, Closed; a cancel loses nothing.
func (s *sub[T]) closedUnsent(v T) {
	if s.sealed.Load() {
		s.lose(Loss[T]{Cause: Closed, Value: v}, nil)
	}
}

// followBatch is the most values a channel follower's pump reads and sends
// at once, and a handler follower's worker reads at once: enough to
// amortize a read (and a pump's commit), few enough that its records (kept
// for the next batch) stay small beside the channel.
const followBatch = 16

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
	callHook(s.opt.onLoss, l)
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
func (s *sub[T]) deliver(g *guard, v T, pub *tally) { s.offerTo(g, s.ch, s.q, v, nil, pub) }

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
func (s *sub[T]) outlet() (unsafe.Pointer, *lossCounter, *tally) {
	if s.slow() {
		return nil, nil, nil
	}
	return *(*unsafe.Pointer)(unsafe.Pointer(&s.ch)), &s.lost, &s.sent
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
	s.offerTo(g, s.ch, s.q, v, later, nil)
}

// offerTo is offer into q, a handler's queue or its re-drive queue, if q is
// not nil, else into ch, the subscription's channel; it counts the
// publication on pub in its first guard section, if pub is not nil (see
// typedSource).
func (s *sub[T]) offerTo(g *guard, ch chan T, q *queue.Queue[T], v T, later *lossBuffer[T], pub *tally) {
	for attempt := 0; ; attempt++ {
		// Losses are counted inside the guard, so that once a cancel
		// returns the subscription's counts are final (see Broker.Watch);
		// reported to OnLoss outside it.
		c := g.enter()
		if pub != nil {
			pub.addIn(c)
			pub = nil
		}
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
		if q != nil {
			if q.Put(v) {
				s.sent.addIn(c)
				g.exit(c)
				return
			}
		} else {
			select {
			case ch <- v:
				s.sent.addIn(c)
				g.exit(c)
				return
			default:
			}
		}
		unbuffered := q == nil && cap(ch) == 0 || q != nil && q.Cap() == 0
		if s.policy != DropOldest || unbuffered || attempt == maxEvictions {
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
		if q != nil {
			old, evicted = q.Evict()
		} else {
			select {
			case old = <-ch:
				evicted = true
			default:
			}
		}
		if evicted {
			s.lost.add(Evicted)
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
	callHook(s.opt.onLoss, l)
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
		callHook(p.s.opt.onLoss, p.l)
	}
	for _, p := range b.more {
		callHook(p.s.opt.onLoss, p.l)
	}
}

// callHook calls a hook of the user's (an OnLoss or a TimeCalls function)
// with a, recovering its panic: a hook must not take the publisher or the
// handler down.
func callHook[A any](f func(A), a A) {
	defer func() { _ = recover() }()
	f(a)
}

func (s *sub[T]) stats() SubscriptionStats {
	st := SubscriptionStats{
		Type:     reflect.TypeFor[T](),
		Policy:   s.policy,
		Capacity: cap(s.ch),
		Queued:   len(s.ch),
		Lost:     s.lost.load(),
		Sent:     s.sent.load(),
		Made:     madeAt(s.made),
	}
	var unsent uint64 // what Shutdown left unread by a handler follower: Discarded, never sent
	if s.opt != nil {
		st.Rejected = s.opt.rejected.load()
		if s.q != nil {
			st.Capacity, st.Queued = s.q.Cap(), s.q.Len()
		}
		if rd := s.opt.redrive; rd != nil {
			st.Capacity += rd.Cap()
			st.Queued += rd.Len()
		}
		if fd := s.opt.feed; fd != nil {
			if s.opt.pumped == nil {
				st.Sent = fd.taken() // what it read; a pump counts what it sent
			} else {
				st.Sent = fd.sentWith(&s.sent)
			}
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
		if fd := s.opt.feed; fd != nil {
			if skipped, unread, sealed := fd.unread(); sealed {
				// What a follower had not read when Shutdown closed it is
				// lost with the broker (see follower.unread). Counted here,
				// when read, rather than once at the seal, so that a read
				// racing the seal is not counted twice.
				st.Lost.Skipped += skipped
				if s.opt.handler != nil {
					st.Lost.Discarded += unread
					unsent = unread
				} else {
					st.Lost.Closed += unread
				}
			}
		}
	}
	l := st.Lost
	st.Matched = st.Sent + st.Rejected + l.Full + l.Failed + l.Closed + l.Skipped + unsent
	return st
}
