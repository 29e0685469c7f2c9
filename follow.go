package topic

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// A Follower reads the log of a retained type at its own pace: it keeps a
// position, an offset into the log, and reads every value from there on, in
// offset order. Publishers never wait for it and never send to it; a slow
// follower just has a lower offset, and loses nothing while the log keeps
// what it has not read. Only retention makes it lose: when the values at its
// position have been trimmed, it jumps to the oldest value kept, and the
// first record it reads after the gap says how many it missed (Skipped),
// counted in its Lost.Skipped and reported to its OnLoss function.
//
// A Follower holds no copy of values, only its position: it costs the same
// however far behind it is. It is made by Broker.Follow. Read, Next and
// Wait may be called by one goroutine at a time; Seek, Commit, Offset and
// Close from any. A Follower that is never closed is kept by the broker,
// like a subscription, and listed by Subscriptions.
type Follower[T any] struct {
	s *sub[T]
	f *follower[T]
}

// ErrClosed is returned by a Follower's Next and Wait once it is closed, by
// Close, its Context or Broker.Shutdown.
var ErrClosed = errors.New("topic: follower closed")

// Follow returns a follower of the retained type T. Without options it
// starts with the next value published. The options it takes:
//
//   - Replay starts it elsewhere: Earliest, an offset (At), the last n
//     values (Last), or Next.
//   - Name makes it durable: the broker keeps the last offset it committed
//     under that name, and a follower of T started again under the same
//     name, once the first is closed, resumes after it (Replay then
//     applies only while nothing is committed). Two live followers of T
//     cannot share a name: the second Follow panics.
//   - AckWait makes a durable follower at least once: what it has read and
//     not committed for that long is read again, from the first value read
//     and not committed on, by its next Read (and Next and Wait return for
//     it). What retention trimmed before it could be read again is
//     reported as skipped, like values never read.
//   - OnLoss receives each run of values it skipped (Cause Skipped, with
//     Offset and Count), and each value published after Shutdown closed it
//     (Closed).
//   - Context closes it when ctx ends.
//
// Other options make Follow panic. Follow panics if T is not retained, or is
// a Record type (its Read gives records already); after
// Shutdown it returns a closed follower. Subscribe and Handle take the Follow
// option to make a channel or a handler that follows the log the same way.
func (b *Broker) Follow[T any](opts ...Option[T]) *Follower[T] {
	if _, ok := any(*new(T)).(interface{ recordValue() any }); ok {
		panic("topic: Follow of " + reflect.TypeFor[T]().String() + ": a Follower reads records of the type it follows; follow that type")
	}
	s := &sub[T]{b: b}
	c := config[T]{sub: s}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&c)
		}
	}
	c.follow = followPull // whatever the options say
	if ch, _ := b.subscribeFollower(s, &c, nil); ch == nil {
		f := &follower[T]{quit: make(chan struct{})} // shut down
		f.ended.Store(true)
		close(f.quit)
		return &Follower[T]{f: f}
	}
	return &Follower[T]{s: s, f: s.opt.follower.(*follower[T])}
}

// Read reads up to len(buf) records into buf, from the follower's position
// on, without waiting, and returns how many; zero if it is caught up. It
// moves the position past them. A record's Skipped field counts the values
// retention trimmed before the follower reached them, just before that
// record.
func (x *Follower[T]) Read(buf []Record[T]) int { return x.f.read(buf) }

// Next waits for the next record and returns it, or ctx's error, or
// ErrClosed.
func (x *Follower[T]) Next(ctx context.Context) (Record[T], error) {
	buf := x.f.buf[:] // the reader's: a local one would escape
	for {
		if x.f.read(buf) == 1 {
			r := buf[0]
			buf[0] = Record[T]{} // keep no reference to the value
			return r, nil
		}
		if err := x.f.wait(ctx.Done()); err != nil {
			if err == errQuit {
				return Record[T]{}, ErrClosed
			}
			return Record[T]{}, ctx.Err()
		}
	}
}

// Wait returns once a record can be read, or ctx's error, or ErrClosed.
// While it waits it does what a read would do without a record to return:
// it skips the values that have all aged out from its position on,
// reporting them as a read would, and with AckWait it returns once a
// re-read is due.
func (x *Follower[T]) Wait(ctx context.Context) error {
	switch err := x.f.wait(ctx.Done()); err {
	case nil:
		return nil
	case errQuit:
		return ErrClosed
	}
	return ctx.Err()
}

// Seek moves the follower's position to offset o, from any goroutine, with
// the rules of a start: below the oldest value kept, its next read skips to
// it and reports what it skipped; past the end, it waits for o. Seek on a
// closed follower does nothing.
func (x *Follower[T]) Seek(o uint64) { x.f.seek(o) }

// Offset returns the offset the follower reads next (unless AckWait has
// made a re-read due: then the next read reads again from before it).
func (x *Follower[T]) Offset() uint64 { return x.f.next() }

// Commit records that every value up to offset o is handled: a durable
// follower started again under its name resumes after o, and AckWait reads
// nothing up to o again. Committing an offset below one committed before
// does nothing, and so does Commit on a closed follower. Committing an
// offset the follower has not reached panics: one at or past the end of the
// furthest it has read. Below that, the values it passed over unread (by a
// Seek forward, or skipped when retention trimmed them) count as handled,
// as they do for a commit of an offset after them.
func (x *Follower[T]) Commit(o uint64) {
	if x.f.ended.Load() {
		return // closed: its name may be another's now
	}
	x.f.commit(o)
}

// Committed returns the last offset committed, and false if none is.
func (x *Follower[T]) Committed() (uint64, bool) {
	c := x.f.committed.Load()
	return c - 1, c > 0
}

// Close closes the follower: its Next and Wait return ErrClosed, it leaves
// Subscriptions, and its name, if any, is free again, with its committed
// offset kept. Close is idempotent.
func (x *Follower[T]) Close() {
	if x.s != nil {
		x.s.cancel()
	}
}

// AckWait makes a durable follower read again what it has read and not
// committed for d: its next Read after d starts again at the first value it
// read and has not committed (after the last offset committed, or where it
// started or was moved to, if it committed nothing since), and a Wait or
// Next waiting for new values returns for it. A re-read is a read: what it
// reads and does not commit is read again d after it. Values committed while
// a re-read runs are passed over, not read again; a Seek ends the re-read and
// reads from where it moves to. Values a re-read finds trimmed are skipped
// and told (Skipped) only if they were read before: what was skipped before
// was told then, and is not told twice. A d of zero or less sets no wait.
// Given to anything but a follower with a Name, it makes Subscribe, Handle
// or Follow panic. Given more than once, the last one wins.
func AckWait[T any](d time.Duration) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		c.ackWait = max(d, 0)
		c.ackWaitSet = true
	}}
}

// Follow makes a subscription (Subscribe) or a handler (Handle) of T, or of
// Record[T], a follower of the retained type T: it reads T's log at its own
// pace, like a Follower, instead of receiving what publishers send. A
// channel follower is fed by a goroutine of its own, which waits for room in
// the channel rather than lose a value: a slow receiver loses nothing while
// the log keeps it. A handler follower takes each value from the log once it
// is done with the one before: with Retry, a retry's back-off keeps the
// values after it in the log, not in a queue, however long it takes. Replay,
// Name, AckWait (with a Name), OnLoss and Context apply as to Broker.Follow;
// Buffer sets a channel follower's capacity (one by default). From and
// Overflow make Subscribe and Handle panic. Subscribe and Handle panic if
// the type is not retained.
//
// A channel follower commits a value once its channel has taken it (so a
// durable one that must resume exactly where its receiver stopped should
// have a Buffer of zero); a handler commits once its function returned nil,
// or the value is dead-lettered or lost. Broker.Seek moves a named one. A
// handler follower's queue is the log: a stop with DiscardOnStop (or a
// Shutdown whose context ends) discards the value in hand, and leaves the
// values after it in the log, uncommitted.
func Follow[T any]() Option[T] { return follow[T](followChannel) }

// follow is the Follow option, for a channel, a handler or a Follower.
func follow[T any](k followKind) Option[T] {
	return Option[T]{apply: func(c *config[T]) { c.follow = k }}
}

// followKind is the form of a follower: none, or how it is read.
type followKind uint8

const (
	followNone followKind = iota
	followChannel
	followPull
)

// checkFollow panics if c, a follower's configuration, has an option a
// follower does not take; what names the call.
func (c *config[T]) checkFollow(what string) {
	switch {
	case len(c.srcs) > 0:
		panic("topic: From is not an option of a follower (" + what + ")")
	case c.policySet:
		panic("topic: Overflow is not an option of a follower (" + what + ")")
	case c.ackWaitSet && c.name == "":
		panic("topic: AckWait needs a Name: only a durable follower commits")
	case c.follow == followPull && c.capacitySet:
		panic("topic: Buffer is not an option of Follow")
	case c.follow == followPull && c.handlerOnly != "":
		panic("topic: " + c.handlerOnly + " is an option of Broker.Handle, not Follow")
	}
}

// Seek moves the live follower of the retained type T named name to offset
// o, as Follower.Seek does, and reports whether there is one. A name with no
// live follower is left as it is: its committed offset does not change.
func (b *Broker) Seek[T any](name string, o uint64) bool {
	l := b.logOf[T]()
	if l == nil {
		return false
	}
	l.names.mu.Lock()
	d := l.names.m[name]
	var live seeker
	if d != nil {
		live = d.live
	}
	l.names.mu.Unlock()
	if live == nil {
		return false
	}
	live.seek(o)
	return true
}

// follower is the engine of a follower: a position in the log of T.
type follower[T any] struct {
	l *logOf[T]
	// pos is the offset read next. Its reader moves it with a
	// compare-and-swap from the offset it read from, so that a concurrent
	// Seek wins: what the reader read is then dropped and read again from
	// the new position.
	pos       atomic.Uint64
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
	named      *durable // the name's entry, nil if unnamed; never changes
	// skip counts and reports a run of values skipped: the subscription's.
	skip  func(first, n uint64)
	wake  *waiter       // its place in the log's waitList
	quit  chan struct{} // closed when the subscription is cancelled or closed
	ended atomic.Bool   // set before quit is closed: cheaper to test
	buf   [1]Record[T]  // next's; reader only
}

// A durable is what the broker keeps of a follower's name.
type durable struct {
	committed uint64 // the offset committed last, plus one; 0: none. Guarded by names.mu.
	live      seeker // the live follower with the name, or nil. Guarded by names.mu.
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
			d = &durable{}
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
}

func (f *follower[T]) seek(o uint64) {
	if f.l == nil || f.ended.Load() {
		return
	}
	if a := f.ack; a != nil {
		a.mu.Lock()
		f.pos.Store(o)
		a.reads = a.reads[:0] // read again from o: see AckWait, and move
		a.seeks++
		a.replayTo, a.owed = 0, a.owed[:0]
		a.mu.Unlock()
	} else {
		f.pos.Store(o)
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

// next returns the offset the next read starts from, a re-read AckWait has
// made due aside: the position, or, while a re-read runs, past what was
// committed meanwhile (see start).
func (f *follower[T]) next() uint64 {
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

// end releases the follower, once, when its subscription is cancelled or
// closed: it quits, and its name is free.
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
	if d := f.named; d != nil {
		f.l.names.mu.Lock()
		d.live = nil
		f.l.names.mu.Unlock()
	}
}

// FollowerStats are the counts of a follower.
type FollowerStats struct {
	Offset    uint64 `json:"offset"`    // the offset it reads next
	Committed uint64 `json:"committed"` // the offsets below are committed
	Lag       uint64 `json:"lag"`       // the values kept from its offset on: published, not yet read
}

func (f *follower[T]) followerStats() *FollowerStats {
	return &FollowerStats{Offset: f.next(), Committed: f.committed.Load(), Lag: f.lag()}
}
