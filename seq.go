package topic

// The sequencing point stays in this package, not in one of its own under
// internal/, for the reason the guard does (see the top of guard.go): moved
// to internal/seq, its tryLock, Unlock, publish and tail, called from the
// generic publication and read paths of a log, were calls in a program that
// publishes (go1.27.3, by objdump); from this package they are inlined.

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A seq is a log's sequencing point and its tail in one word: the offset of
// the next value in its high bits, a locked bit and a waiting bit. A
// publication takes it with one compare-and-swap and lets go of it with one
// swap that also publishes the tail, where a sync.Mutex beside an atomic tail
// takes three atomic steps (lock, store of the tail, unlock). On two cores,
// in interleaved runs, parallel publication of a retained type took 0.79 to
// 0.91 of its time with a follower (BenchmarkPublishRetainedFollowedParallel)
// and 0.65 with a channel subscription (BenchmarkPublishRetainedParallel).
//
//	publisher                               reader
//	  Lock: CAS word: unlocked -> locked      tail: load word >> 2
//	        next = word >> 2
//	  write the value at offset next; next++
//	  Unlock: swap word: next << 2
//
// Invariant: only the holder changes the tail bits, in the swap that lets
// go (or in publish); a contender only sets the waiting bit. So a reader
// that loads the word sees a tail stored after every value below it was
// written (the swap orders the holder's plain writes before it), and a
// holder reads a tail no one else can change.
//
// Contenders yield a few times, then park (see seqPark); the unlocking swap
// that finds the waiting bit set wakes one, unless one woken is on its way
// (see wake). A parked contender that takes the lock keeps the bit set
// while others are parked (see seqPark), so the one that next lets go wakes
// the next: no parked contender is forgotten. A woken contender may lose
// the lock to one that never parked, as with sync.Mutex in its normal mode;
// and as in sync.Mutex's starvation mode, once a woken contender has waited
// longer than seqStarveAfter, those that never parked park too, so that the
// lock goes to the parked ones in the order they parked (see seqPark).
//
// The tail has 62 bits: 2^62 publications of one type, more than a century
// at a billion a second. The zero seq is unlocked at offset 0. It must not
// be copied after first use.
type seq struct {
	w atomic.Uint64
	// starving is set while a parked contender that was woken has waited
	// longer than seqStarveAfter: until it is cleared, contenders that
	// have not parked leave the lock to those that have (see lockSlow).
	starving atomic.Bool
	// next is the tail to publish when the holder lets go: the tail it
	// took, plus what it appended. Guarded by the lock itself.
	next uint64
	park atomic.Pointer[seqPark] // made by the first contender to park; never changes then
}

// seqPark is where a seq's contenders park, off the word's cache line: a
// queue, the longest waiting first. A woken contender that finds the lock
// taken goes back to the front, as in sync.Mutex, so that the order it
// parked in is kept.
type seqPark struct {
	mu sync.Mutex
	// first and last are the ends of the queue of parked contenders,
	// linked by next, and parked their number: a wake and a return to the
	// front take constant time, however many wait. Guarded by mu.
	first, last *seqWaiter
	parked      int
	woken       int // taken off the queue by a wake and not back yet; guarded by mu
}

// A seqWaiter is a parked contender's place: one wake-up is sent on c. Each
// lockSlow makes its own: a channel made inside a testing/synctest bubble
// may not be used outside it, so places are not pooled.
type seqWaiter struct {
	c    chan struct{}
	next *seqWaiter // the one parked after it; guarded by seqPark.mu
}

// push queues w at the back, or at the front (it waited longest).
func (p *seqPark) push(w *seqWaiter, front bool) {
	switch {
	case p.first == nil:
		p.first, p.last = w, w
	case front:
		w.next, p.first = p.first, w
	default:
		p.last.next, p.last = w, w
	}
	p.parked++
}

// pop takes the first off the queue, which must not be empty.
func (p *seqPark) pop() *seqWaiter {
	w := p.first
	if p.first = w.next; p.first == nil {
		p.last = nil
	}
	w.next = nil
	p.parked--
	return w
}

// parking returns q's seqPark, making it if it is the first.
func (q *seq) parking() *seqPark {
	if p := q.park.Load(); p != nil {
		return p
	}
	p := new(seqPark)
	if q.park.CompareAndSwap(nil, p) {
		return p
	}
	return q.park.Load()
}

const (
	seqLocked  = 1 << 0
	seqWaiting = 1 << 1
	seqShift   = 2
	// seqYields is how many times a contender yields before it parks:
	// holders never wait for a user's function, so the lock is usually
	// free again within a few yields; parking sooner costs a wake-up per
	// publication when two publishers alternate, and later burns the core.
	seqYields = 8
	// seqStarveAfter is how long a parked contender may wait before the
	// lock goes to the parked ones first (sync.Mutex's bound too).
	seqStarveAfter = time.Millisecond
)

// Lock takes the sequencing point. Its holder appends by raising next.
func (q *seq) Lock() {
	if !q.tryLock() {
		q.lockContended()
	}
}

// lockContended is Lock after tryLock failed. (Lock is too long to inline:
// a publication calls tryLock, inlined, and this.)
func (q *seq) lockContended() { q.next = q.lockSlow() }

// tryLock takes the sequencing point if it is free and no parked contender
// starves, and reports whether it did: Lock's first try, which is short
// enough for the compiler to inline where Lock is not.
func (q *seq) tryLock() bool {
	w := q.w.Load()
	if w&seqLocked == 0 && !q.starving.Load() && q.w.CompareAndSwap(w, w|seqLocked) {
		q.next = w >> seqShift
		return true
	}
	return false
}

// lockSlow is lock after a first try failed: yield, then park.
//
//go:noinline
func (q *seq) lockSlow() uint64 {
	for range seqYields {
		runtime.Gosched()
		if w := q.w.Load(); w&seqLocked == 0 && !q.starving.Load() && q.w.CompareAndSwap(w, w|seqLocked) {
			return w >> seqShift
		}
	}
	p := q.parking()
	p.mu.Lock()
	var since time.Time // when it first parked
	var me *seqWaiter
	woken := false
	for {
		w := q.w.Load()
		// Starving, one that has not parked leaves a free lock to the
		// parked, the first of whom is woken, or on its way (below).
		if w&seqLocked == 0 && (woken || !q.starving.Load() || p.parked == 0 && p.woken == 0) {
			nw := w | seqLocked
			if p.parked > 0 {
				nw |= seqWaiting // the others stay woken by the next unlock
			}
			if q.w.CompareAndSwap(w, nw) {
				if woken && q.starving.Load() && (p.parked == 0 && p.woken == 0 || time.Since(since) < seqStarveAfter) {
					// No one left parked, or none parked longer
					// than this one, which waited less.
					q.starving.Store(false)
				}
				p.mu.Unlock()
				return w >> seqShift
			}
			continue
		}
		if woken && !q.starving.Load() && time.Since(since) >= seqStarveAfter {
			q.starving.Store(true)
		}
		if w&seqWaiting == 0 && !q.w.CompareAndSwap(w, w|seqWaiting) {
			continue // let go of, or its tail moved, meanwhile
		}
		// The bit is set and mu held: the unlock that clears it wakes
		// the first parked after this one is in the queue. If the lock
		// is free (starving), every one parked set the bit before it
		// parked, so the first of them is woken or about to be: it
		// takes the lock, and its unlock wakes the next.
		if me == nil {
			me, since = &seqWaiter{c: make(chan struct{}, 1)}, time.Now()
		}
		p.push(me, woken) // a woken one waited longest
		p.mu.Unlock()
		<-me.c
		p.mu.Lock()
		p.woken--
		woken = true
	}
}

// Unlock lets go of the sequencing point, publishing next as the tail: the
// holder's writes of the values below it are ordered before it.
func (q *seq) Unlock() {
	if old := q.w.Swap(q.next << seqShift); old&seqWaiting != 0 {
		q.wake()
	}
}

// wake wakes the first parked contender, unless one woken is still on its
// way: that one carries the waiting bit on, as sync.Mutex's woken waiter
// does (it sets the bit again if others are parked, whether it takes the
// lock or parks again), so that while many are parked, publishers that find
// the lock taken do not each pay for a wake-up. The waiting bit was set by
// one that made the seqPark and parked.
//
//go:noinline
func (q *seq) wake() {
	p := q.park.Load()
	p.mu.Lock()
	if p.parked > 0 && p.woken == 0 {
		p.woken++
		p.pop().c <- struct{}{} // buffered, and sent once per park
	}
	p.mu.Unlock()
}

// publish publishes next as the tail, keeping the sequencing point: the
// holder's writes of the values below it are ordered before it.
func (q *seq) publish() {
	for {
		// A contender may set the waiting bit meanwhile: keep it.
		w := q.w.Load()
		if q.w.CompareAndSwap(w, q.next<<seqShift|w&(seqLocked|seqWaiting)) {
			return
		}
	}
}

// tail returns the published tail, the offset of the next value: every
// value below it is written. A holder that has appended has not published
// its values yet (see next).
func (q *seq) tail() uint64 { return q.w.Load() >> seqShift }
