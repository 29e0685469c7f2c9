package topic

import (
	"context"
	"errors"
	"reflect"
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
//     name, once the first is closed, resumes after it; while nothing is
//     committed under the name, it starts where the name's first follower
//     started (Replay applies only to the first: what was published after
//     it is read, or told as skipped if retention trimmed it meanwhile,
//     never passed over silently). Two live followers of T cannot share a
//     name: the second Follow panics.
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
	s := &sub[T]{b: b, made: callerPC()}
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
// ErrClosed. A nil ctx panics.
func (x *Follower[T]) Next(ctx context.Context) (Record[T], error) {
	mustContext(ctx, "Next")
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
//
// A nil error says a record was readable when Wait returned, not that the
// next Read finds one: a Seek from another goroutine, or the age bound
// trimming the record, may come between, and Read then returns zero. A
// loop of Wait and Read handles a Read of zero (it waits again). A nil
// ctx panics.
func (x *Follower[T]) Wait(ctx context.Context) error {
	mustContext(ctx, "Wait")
	switch err := x.f.wait(ctx.Done()); err {
	case nil:
		return nil
	case errQuit:
		return ErrClosed
	}
	return ctx.Err()
}

// Seek moves the follower's position to offset o, from any goroutine, with
// the rules of a follower's start At(o): below the oldest value kept, its
// next read skips to it and reports what it skipped (Record.Skipped,
// counted Skipped); past the end, it waits for o. Seek on a closed follower
// does nothing.
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
// the log keeps it. Once it has read all there is, a channel follower of T
// (not of Record[T], nor one with AckWait, nor of a type of RetainLatest)
// is sent each new value by its publication, as a plain subscription is,
// while its receiver keeps up (its channel is empty when the value comes,
// or, once it has kept up a while, holds a few values: up to one for every
// 16 sent so, at most 64): its goroutine wakes only when the receiver falls
// behind, a Seek moves it, or it ends, and then sends what the log has in
// batches. A handler
// follower reads what the log has for it, up to 16 values at once, and
// calls its function with each in turn (those read are handled even if
// retention trims them meanwhile; a Seek drops the rest): with Retry, a
// retry's back-off holds back at most those, and keeps the values after
// them in the log, not in a queue, however long it takes. Replay, Name,
// AckWait (with a Name), OnLoss and Context apply as to Broker.Follow;
// Buffer sets a channel follower's capacity (one by default). From and
// Overflow make Subscribe and Handle panic. Subscribe and Handle panic if
// the type is not retained.
//
// A channel follower commits what its channel has taken, never more: its
// goroutine sends as many values at once as the channel has room for (up to
// 16) and commits them together once they are all in the channel, so its
// committed offset (FollowerStats.Committed) may trail the values received
// by that many until then. A cancel waits for that commit, so a durable one
// resumes right after the last value its channel took (one that must resume
// exactly where its receiver stopped should have a Buffer of zero, which
// sends and commits one value at a time). Its name is taken until its
// channel is closed, however it was cancelled (by a Context, or Shutdown):
// until then, a follower started under the name panics. A handler commits
// once its function returned nil, or the value is dead-lettered or lost;
// its name is taken until its goroutine ends, once its last call has
// returned and been committed (a stop that waits returns after that), so
// that a handler started again under the name never runs beside it.
// Broker.Seek moves a named one. A handler follower's queue is the log: a
// stop with DiscardOnStop (or a Shutdown whose context ends) discards the
// value in hand, and leaves the values after it in the log, uncommitted
// (those it had read and not yet given its function go back). Its
// FollowerStats count what it has read: its Offset may be ahead of the
// value in hand by up to 16.
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

// FollowerStats are the counts of a follower.
type FollowerStats struct {
	Offset    uint64 `json:"offset"`    // the offset it reads next
	Committed uint64 `json:"committed"` // the offsets below are committed
	Lag       uint64 `json:"lag"`       // the values kept from its offset on: published, not yet read
}
