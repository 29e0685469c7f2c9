package topic

// The engine of a follower, behind Follower and behind channel and handler
// followers: a position in a retained type's log, its durable name, and how
// Seek, Commit and its end move and release it.

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// follower is the engine of a follower: a position in the log of T.
type follower[T any] struct {
	l *logOf[T]
	// pos is the offset read next. Its reader moves it from the offset it
	// read from, unless a Seek has moved it meanwhile: a concurrent Seek
	// wins, and what the reader read is dropped and read again from the
	// new position. The move and a Seek are ordered by mu (by the
	// ackState's lock with AckWait).
	pos atomic.Uint64
	mu  sync.Mutex
	// seeks counts the Seeks, added to under mu (or the ackState's lock),
	// and seen is its count at the reader's last move: a Seek since, even
	// one to where the read left the position, makes current false.
	// seen: reader only.
	seeks     atomic.Uint64
	seen      uint64
	committed atomic.Uint64 // the offset committed last, plus one; 0: none
	delivered atomic.Uint64 // the offset read last, plus one; 0: none
	ack       *ackState     // AckWait's, nil without it; never changes
	// skipped is what the reader skipped and has not yet told in a
	// record's Skipped field, and lastEnd the position its last read left:
	// a position moved since by a Seek drops skipped, which is not just
	// before what the next read finds. Reader only.
	skipped, lastEnd uint64
	// size and slot are the size of the ring of the last read (a log's
	// rings only grow, so it names the ring) and the slot of lastEnd in
	// it, which spare the next read a division. Reader only.
	size, slot uint64
	// took counts the records read (see Read), written by the reader
	// only, loaded atomically (see bump).
	took  uint64
	named *durable // the name's entry, nil if unnamed; never changes
	// skip counts and reports a run of values skipped: the subscription's.
	skip  func(first, n uint64)
	wake  *waiter       // its place in the log's waitList
	quit  chan struct{} // closed when the subscription is cancelled or closed
	ended atomic.Bool   // set before quit is closed: cheaper to test
	buf   [1]Record[T]  // next's; reader only
	// scratch is the batch of records of a channel follower's pump or a
	// handler follower's worker, made at its first batch; before is
	// delivered as it stood before the worker's last batch (see putBack).
	// Reader only.
	scratch []Record[T]
	before  uint64
	// sealed is where the follower and its log stood when Shutdown closed
	// it (see freeze); nil until then.
	sealed atomic.Pointer[sealPoint]
	// h is the handoff of a channel follower that publications may send
	// to directly (see handoff), nil for any other; set before its
	// subscription is registered, never changed.
	h *handoff[T]
	// held: its pump or its handler's worker frees its name (see
	// holdName); set before its subscription is registered, never changed.
	held bool
	// values: it is read for its values and offsets only (the valueFeed
	// of a pump or a handler's worker), and its reads of the ring leave
	// the records' Time unset, the most of a read's cost after the copy;
	// set before it is first read, never changed.
	values bool
}

// A sealPoint is where a follower's log stood when Shutdown closed the
// follower: its oldest offset kept and its tail, trimmed by age then; for a
// keyed log, the offsets of the values it kept from the follower's
// position on.
type sealPoint struct {
	head, tail uint64
	keyed      []uint64
}

// A durable is what the broker keeps of a follower's name.
type durable struct {
	committed uint64 // the offset committed last, plus one; 0: none. Guarded by names.mu.
	// start is where the first follower with the name started: one started
	// again while nothing is committed starts there too, so that what was
	// published after it and never committed is read, not passed over.
	// Never changes once the name is made.
	start uint64
	live  seeker // the live follower with the name, or nil. Guarded by names.mu.
}

// A seeker is a follower of any type.
type seeker interface{ seek(o uint64) }

// names are the durable names of a log's followers.
type names struct {
	mu sync.Mutex
	m  map[string]*durable
}

// newFollower makes the follower of subscription s, configured by c, from
// its start on; it claims c's name, if any.
func newFollower[T any](l *logOf[T], c *start, skip func(first, n uint64)) *follower[T] {
	f := &follower[T]{l: l, skip: skip, wake: newWaiter(), quit: make(chan struct{})}
	if c.ackWait > 0 {
		f.ack = &ackState{wait: int64(c.ackWait)}
	}
	var from uint64
	if l.keyed != nil {
		l.mu.Lock()
		from = l.keyed.start(c.at, l.mu.tail()) // its keys, not its last offsets
		l.mu.Unlock()
	} else if c.at.kind == startAt {
		from = c.at.n // as Seek(o): see At
	} else {
		tail := l.mu.tail()
		from = c.at.from(l.head(tail), tail)
	}
	if c.name != "" {
		l.names.mu.Lock()
		defer l.names.mu.Unlock()
		if l.names.m == nil {
			l.names.m = make(map[string]*durable)
		}
		d := l.names.m[c.name]
		if d == nil {
			d = &durable{start: from}
			l.names.m[c.name] = d
		}
		if d.live != nil {
			panic(fmt.Sprintf("topic: a follower of %v named %q is live", reflect.TypeFor[T](), c.name))
		}
		d.live = f
		if d.committed > 0 {
			from = d.committed // resume after the last offset committed
			f.committed.Store(d.committed)
			f.delivered.Store(d.committed)
		} else {
			from = d.start // where the name's first follower started
		}
		f.named = d
	}
	f.pos.Store(from)
	f.lastEnd = from
	return f
}

// start is what a follower starts from.
type start struct {
	at      Start
	name    string
	ackWait time.Duration
	pushed  bool // read by a pump or a handler's worker, not a Follower's Read
}

func (f *follower[T]) seek(o uint64) {
	if f.l == nil || f.ended.Load() {
		return
	}
	if a := f.ack; a != nil {
		a.mu.Lock()
		f.pos.Store(o)
		f.seeks.Add(1)
		a.reads = a.reads[:0] // read again from o: see AckWait, and move
		a.seeks++
		a.replayTo, a.owed = 0, a.owed[:0]
		a.mu.Unlock()
	} else if h := f.h; h != nil {
		// Under the sequencing point: no publication hands the follower
		// a value after the Seek, and its pump, which takes the handoff
		// off the list under it too, sees the Seek before it goes back.
		f.l.mu.Lock()
		f.l.drop(h)
		f.mu.Lock()
		f.pos.Store(o)
		f.seeks.Add(1)
		f.mu.Unlock()
		f.l.mu.Unlock()
	} else {
		f.mu.Lock()
		f.pos.Store(o)
		f.seeks.Add(1)
		f.mu.Unlock()
	}
	f.poke()
}

func (f *follower[T]) commit(o uint64) {
	if d := f.delivered.Load(); o >= d {
		panic(fmt.Sprintf("topic: Commit of offset %d, which the follower has not read (it read up to %d)", o, int64(d)-1))
	}
	for {
		c := f.committed.Load()
		if o+1 <= c {
			return // committed already
		}
		if f.committed.CompareAndSwap(c, o+1) {
			break
		}
	}
	if f.ack != nil {
		f.ack.commit(o + 1)
	}
	if d := f.named; d != nil {
		f.l.names.mu.Lock()
		d.committed = max(d.committed, o+1)
		f.l.names.mu.Unlock()
	}
}

// next returns the offset the next read starts from, as its observers
// see it: past what publications handed the follower, if they do (see
// handoff), which its reader has not yet moved the position past.
func (f *follower[T]) next() uint64 {
	if o, ok := f.handed(); ok {
		return o
	}
	return f.readNext()
}

// readNext returns the offset the next read starts from, a re-read
// AckWait has made due aside: the position, or, while a re-read runs,
// past what was committed meanwhile (see start).
func (f *follower[T]) readNext() uint64 {
	a := f.ack
	if a == nil {
		return f.pos.Load()
	}
	c := f.committed.Load()
	a.mu.Lock()
	defer a.mu.Unlock()
	// The position is stored under mu by a Seek, which ends the re-read.
	return a.pastCommittedLocked(f.pos.Load(), c)
}

// lag returns the values kept after the position.
func (f *follower[T]) lag() uint64 {
	l := f.l
	if l.keyed != nil {
		o := f.next() // before l.mu: the ack lock is a leaf
		l.mu.Lock()
		defer l.mu.Unlock()
		l.keyed.trim(l.oldest(l.stamp())) // what has aged out is not kept
		return uint64(l.keyed.countFrom(o))
	}
	tail := l.mu.tail()
	l.agedOut(tail) // if all have aged out, none is kept
	return tail - min(max(f.next(), l.head(tail)), tail)
}

// freeze records where the follower's log stands, once, after Shutdown
// closed the follower (the log takes no publication any more): what the
// follower has not read then is lost with the broker (see unread). It takes
// the log's sequencing point, so it is called without Broker.mu, which a
// replay takes under it.
func (f *follower[T]) freeze() {
	l := f.l
	if l == nil {
		return
	}
	p := &sealPoint{}
	o := f.reached() // before l.mu: the ack lock is a leaf
	l.mu.Lock()
	tail := l.mu.tail()
	if l.keyed != nil {
		l.keyed.trim(l.oldest(l.stamp()))
		p.keyed = l.keyed.offsetsFrom(o)
	} else {
		l.trimLocked(l.ring.Load(), tail, l.stamp()) // by age, as a read would find it
		p.head, p.tail = l.head(tail), tail
	}
	l.mu.Unlock()
	f.sealed.CompareAndSwap(nil, p)
}

// reached returns the offset past what the follower has read: its
// position, or further, past what it read before a Seek back or a re-read
// of AckWait, which it received already.
func (f *follower[T]) reached() uint64 { return max(f.next(), f.delivered.Load()) }

// unread returns, for a follower Shutdown closed, the values it lost by not
// reading them: those retention had trimmed before it reached them
// (skipped), and the others it had not read (unread); ok is false until
// freeze. They are computed from where the log stood at the seal, which
// nothing changes after (a trim by age included), and from how far the
// follower has read now: a read in progress as Shutdown closed the
// follower may still move it, and what it read is then its reader's, not
// lost (the counts are final once it has returned).
func (f *follower[T]) unread() (skipped, unread uint64, ok bool) {
	p := f.sealed.Load()
	if p == nil {
		return 0, 0, false
	}
	n := f.reached()
	if f.l.keyed != nil {
		i, _ := slices.BinarySearch(p.keyed, n)
		return 0, uint64(len(p.keyed) - i), true
	}
	if n < p.head {
		skipped = p.head - n
	}
	return skipped, p.tail - min(max(n, p.head), p.tail), true
}

// end releases the follower, once, when its subscription is cancelled or
// closed: it quits, and its name is free, but that of a channel or handler
// follower, which its pump or worker frees once it has committed what it
// sent or handled (see holdName).
func (f *follower[T]) end() {
	if f.ended.Swap(true) {
		return
	}
	close(f.quit)
	f.poke() // after ended is set: see probeWait
	if a := f.ack; a != nil {
		a.mu.Lock()
		if a.timer != nil {
			a.timer.Stop() // after ended is set: see alarm
		}
		a.mu.Unlock()
	}
	if !f.held {
		f.freeName()
	}
}

// holdName keeps the follower's name, once it ends, until freeName: the
// name of a channel follower, whose pump commits what the channel took
// (what publications handed it included, see handoff) after the end, and
// of a handler follower, whose worker commits the value in hand once its
// call returns; each frees it then, so that a follower started again under
// the name resumes after it, and never runs beside it. Called before its
// subscription is registered.
func (f *follower[T]) holdName() { f.held = true }

// freeName frees the follower's name, if it has one and still holds it.
func (f *follower[T]) freeName() {
	if d := f.named; d != nil {
		f.l.names.mu.Lock()
		if d.live == seeker(f) {
			d.live = nil
		}
		f.l.names.mu.Unlock()
	}
}

// taken returns how many records the follower has read.
func (f *follower[T]) taken() uint64 { return atomic.LoadUint64(&f.took) }

func (f *follower[T]) followerStats() *FollowerStats {
	// The committed offset first: a commit follows the move of the
	// position past what it commits, so it is not ahead of the offset
	// read after it. What was handed out is both, read at once with the
	// committed offset, under the lock of drop, which commits it: once
	// off the list, the offset read is not behind it.
	c, o, handed := f.committedHanded()
	if !handed {
		o = f.readNext()
	}
	st := &FollowerStats{Offset: o, Committed: c}
	if f.sealed.Load() == nil {
		st.Lag = f.lag() // once sealed, what it has not read is lost: see sub.stats
	}
	return st
}
