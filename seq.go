package topic

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
// takes three atomic steps (lock, store of the tail, unlock); on two cores
// that makes the parallel publication of a retained type about a quarter
// faster (BenchmarkPublishRetainedFollowedParallel).
//
//	publisher                               reader
//	  Lock: CAS word: unlocked -> locked      tail: load word >> 2
//	        next = word >> 2
//	  write the value at offset next; next++
//	  Unlock: swap word: next << 2
//
// Invariant: only the holder changes the tail bits, and only in the swap
// that lets go; a contender only sets the waiting bit of a locked word. So a
// reader that loads the word sees a tail stored after every value below it
// was written (the swap orders the holder's plain writes before it), and a
// holder reads a tail no one else can change.
//
// Contenders yield a few times, then park (see seqPark); the unlocking swap
// that finds the waiting bit set wakes one. A parked contender that takes
// the lock keeps the bit set while others are parked (waiting counts them),
// so the one that next lets go wakes the next: no parked contender is
// forgotten. A woken contender may lose the lock to one that never parked,
// as with sync.Mutex in its normal mode; and as in sync.Mutex's starvation
// mode, once a woken contender has waited longer than seqStarveAfter, those
// that never parked park too, so that the lock goes to the parked ones in
// the order they parked (sync.Cond signals the longest waiting first).
//
// The zero seq is unlocked at offset 0. It must not be copied after first
// use.
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

// seqPark is where a seq's contenders park, off the word's cache line.
type seqPark struct {
	mu      sync.Mutex // guards waiting, and cond's waits and signals
	cond    sync.Cond  // of mu
	waiting int        // contenders parked on cond; guarded by mu
}

// parking returns q's seqPark, making it if it is the first.
func (q *seq) parking() *seqPark {
	if p := q.park.Load(); p != nil {
		return p
	}
	p := new(seqPark)
	p.cond.L = &p.mu
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
	if w := q.w.Load(); w&seqLocked == 0 && !q.starving.Load() && q.w.CompareAndSwap(w, w|seqLocked) {
		q.next = w >> seqShift
		return
	}
	q.next = q.lockSlow()
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
	defer p.mu.Unlock()
	var since time.Time // when it first parked
	woken := false
	for {
		w := q.w.Load()
		// Starving, one that has not parked leaves a free lock to the
		// woken one, which is on its way (see below).
		if w&seqLocked == 0 && (woken || p.waiting == 0 || !q.starving.Load()) {
			nw := w | seqLocked
			if p.waiting > 0 {
				nw |= seqWaiting // the others stay woken by the next unlock
			}
			if q.w.CompareAndSwap(w, nw) {
				if woken && q.starving.Load() && (p.waiting == 0 || time.Since(since) < seqStarveAfter) {
					q.starving.Store(false) // no one left who waited long
				}
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
		// The bit is set and mu held: the unlock that clears it
		// signals after this wait has begun (Wait lets go of mu). If
		// the lock is free (starving), a signal is on its way to the
		// one parked longest, since every parked one set the bit
		// before it parked: that one takes it, and its unlock signals.
		if !woken {
			since = time.Now()
		}
		p.waiting++
		p.cond.Wait()
		p.waiting--
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

// wake wakes one parked contender. The waiting bit was set by one that
// made the seqPark first.
//
//go:noinline
func (q *seq) wake() {
	p := q.park.Load()
	p.mu.Lock()
	p.cond.Signal()
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
