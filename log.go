package topic

// The log of a retained type: its sequencing point and ring, how a
// publication appends to it, and how it is trimmed by count and by age.

import (
	"math"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/seedaa7df82c/topic/internal/ring"
)

// logCore is the part of a retained type's log that does not depend on the
// type: the sequencing point and the bound.
type logCore struct {
	limit Retention    // never changes
	key   reflect.Type // the type of its keys if it keeps a value per key (RetainLatest); never changes
	impl  any          // the *logOf[T]; never changes
	rec   *entry       // the entry of Record[T]; never changes
	// epoch is when T was retained, with a monotonic reading: a value's
	// time is epoch plus the monotonic time elapsed, which costs one clock
	// reading, where the wall clock costs two. wall is epoch without its
	// monotonic reading. Never change.
	epoch, wall time.Time
	clock       clock           // written once per tick
	_           [cacheLine]byte // what never changes apart from what publishers write

	// mu is the sequencing point and the log's tail, the offset of the
	// next value (see seq). It is never held while a function of the
	// user's runs, and nothing else is locked under it but Broker.mu, and a
	// follower's mu and its log's names.mu (see handoff).
	mu   seq
	last int64 // the time of the last value; guarded by mu
	// slot is the ring's slot of the next value (offset tail), which the
	// writer keeps to spare a division; guarded by mu.
	slot uint64
	// shared counts the publications in a row given the time last, up to
	// clockMaxShared (see clock); guarded by mu.
	shared int
	// sealed is set by Shutdown before it seals the routes (see
	// drain.seal), and routed is closed once it has: a publication that
	// finds the log sealed appends nothing, waits for the sealed route and
	// is counted there as one after the seal (see publishSealed). So each
	// publication is either in the log, where the followers frozen after
	// the seal count it, or on a sealed route, never both. Guarded by mu.
	sealed bool
	routed chan struct{}
}

// seal ends the log's appends (see sealed); routed is to be closed once
// the routes are sealed.
func (c *logCore) seal(routed chan struct{}) {
	c.mu.Lock()
	c.sealed, c.routed = true, routed
	c.mu.Unlock()
}

// cacheLine is the size of a cache line on the machines this is tuned for:
// fields written by publishers are kept off the lines readers read alone.
const cacheLine = 64

// logOf is the log of a retained type T: a ring of the latest values.
//
// Publications append under the sequencing point, mu, which orders them;
// readers (Read, followers, a replay's copy through a From source) read the
// ring without it (see ring.Ring). The tail is published by letting go of
// mu, after the value it counts has been written, and the ring is stored
// before any value is written in it, so a reader that loads the tail, then
// the ring, finds every offset below the tail in that ring, or gone.
type logOf[T any] struct {
	logCore
	// ring follows mu and last, on their cache line: a publication takes
	// that one line from the core that published before it, rather than
	// two, and readers load the tail and the ring once per read.
	ring atomic.Pointer[ring.Ring[T]] // grows by doubling, from 8 to limit.Count; stored under mu
	_    [cacheLine - 8]byte
	// aged is the offset below which values are older than limit.Age, as
	// far as a trim has found; it only grows.
	aged atomic.Uint64
	_    [cacheLine - 24]byte

	waiters waitList // the followers waiting for the next value
	names   names    // the durable names of followers
	// keyed keeps the values, one per key, of a log of RetainLatest, which
	// has no ring; nil otherwise. Guarded by mu; never changes.
	keyed keyedLog[T]
	// lost and rlost keep the losses of a publication's ordered sends to
	// subscriptions of T and Record[T], for their OnLoss functions, until
	// it lets go of the sequencing point: kept here, guarded by mu, rather
	// than on its stack, so that a publication that loses nothing does not
	// clear them each time.
	lost  lossBuffer[T]
	rlost lossBuffer[Record[T]]
	// hands are the channel followers that publications send to directly
	// (see handoff). Guarded by mu.
	hands []*handoff[T]
}

func newLog[T any](r Retention, rec *entry) *logOf[T] {
	now := time.Now()
	l := &logOf[T]{}
	l.limit, l.impl, l.rec, l.epoch, l.wall = r, l, rec, now, now.Round(0)
	l.clock.epoch = now
	l.ring.Store(ring.New[T](min(8, r.Count)))
	return l
}

// head returns the offset of the oldest value kept, given tail.
func (l *logOf[T]) head(tail uint64) uint64 {
	h := uint64(0)
	if c := uint64(l.limit.Count); tail > c {
		h = tail - c
	}
	return max(h, min(l.aged.Load(), tail))
}

// appendLocked keeps v, of time nanos, trimming the log, and returns its
// offset and time. The time was read before the sequencing point was taken,
// so that publishers do not take turns at the clock too: it is raised to
// the last one given, so that times follow offsets.
//
// The value is published to readers when the caller lets go of mu.
func (l *logOf[T]) appendLocked(v T, nanos int64) (uint64, int64) {
	o := l.mu.next
	nanos = max(nanos, l.last)
	if nanos != l.last || l.limit.NoTime {
		l.shared = 0
	} else if l.shared++; l.shared >= clockMaxShared {
		l.shared = 0
		l.clock.cached.Store(0) // the next publication reads the clock: see clock
	}
	l.last = nanos
	if l.keyed != nil {
		l.keyed.put(o, nanos, l.oldest(nanos), v)
		l.mu.next = o + 1
		return o, nanos
	}
	r := l.ring.Load()
	if l.limit.Age > 0 {
		l.trimLocked(r, o, nanos)
	}
	if r.Cap() < l.limit.Count && o >= uint64(r.Cap()) {
		// The ring holds all it can keep: double it first.
		n := ring.New[T](min(2*r.Cap(), l.limit.Count))
		r.CopyInto(n, o-uint64(r.Cap()), o)
		l.ring.Store(n) // before any write in it: see logOf
		r = n
		l.slot = n.Index(o)
	}
	if l.slot&r.Mask() == 0 {
		r.Enter(o, l.slot) // the first slot of a chunk
	}
	r.Put(l.slot, nanos, v)
	l.slot = r.Next(l.slot)
	l.mu.next = o + 1 // published after the write, by Unlock: see logOf
	return o, nanos
}

// trimLocked moves aged past the values older than the age bound, up to
// tail; r is the ring, whose one writer is the caller.
func (l *logOf[T]) trimLocked(r *ring.Ring[T], tail uint64, now int64) {
	if l.limit.Age <= 0 {
		return // (appendLocked checks it first, sparing the call)
	}
	oldest := now - int64(l.limit.Age)
	a := max(l.aged.Load(), l.head(tail))
	if a >= tail {
		return
	}
	// The slot of a from that of tail, l.slot, without a division: tail-a
	// is less than the ring's size.
	s := l.slot + r.Size() - (tail - a)
	if s >= r.Size() {
		s -= r.Size()
	}
	for a < tail && r.Cell(s).Nanos < oldest {
		a, s = a+1, r.Next(s)
	}
	l.raiseAged(a)
}

// raiseAged raises aged to a, unless it is there already. Readers raise it
// too (see agedOut), so it is raised by a compare-and-swap, never lowered.
func (l *logOf[T]) raiseAged(a uint64) {
	for {
		old := l.aged.Load()
		if a <= old || l.aged.CompareAndSwap(old, a) {
			return
		}
	}
}

// agedOut trims the values below tail if every one of them is older than
// the age bound, raising aged to tail, so that a read skips them and counts
// them as it counts values trimmed by Count. (A keyed log trims its values
// under its sequencing point.)
func (l *logOf[T]) agedOut(tail uint64) {
	if l.limit.Age > 0 && tail > 0 && l.keyed == nil && l.lastExpired(tail) {
		l.raiseAged(tail)
	}
}

// lastExpired reports whether the value at tail-1 of a ring, the last
// published, is older than the age bound. Times follow offsets: it is the
// last to expire, so then every value below tail has. False if it is
// trimmed since: a value after it is kept.
func (l *logOf[T]) lastExpired(tail uint64) bool {
	_, nanos, st := l.ring.Load().Read(tail - 1)
	return st == ring.OK && l.expired(nanos, l.stamp())
}

// oldest returns the time of the oldest value kept at now.
func (l *logOf[T]) oldest(now int64) int64 {
	if l.limit.Age <= 0 {
		return math.MinInt64
	}
	return now - int64(l.limit.Age)
}

// expired reports whether a value of time nanos is older than the age bound
// at now.
func (l *logOf[T]) expired(nanos, now int64) bool {
	return l.limit.Age > 0 && nanos < now-int64(l.limit.Age)
}

// eachLocked calls f with each value kept from offset from to tail, in
// offset order; the caller holds mu, so that no one writes the log.
func (l *logOf[T]) eachLocked(from, tail uint64, f func(o uint64, nanos int64, v T)) {
	if l.keyed != nil {
		l.keyed.each(from, f)
		return
	}
	r := l.ring.Load()
	s := r.Index(from)
	for o := from; o < tail; o++ {
		c := r.Cell(s)
		f(o, c.Nanos, c.Value)
		s = r.Next(s)
	}
}
