package topic

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname
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
// Contenders spin a little, as sync.Mutex's do (only while other Ps run
// and theirs has nothing else to run), then park (see seqPark); the unlocking swap
// that finds the waiting bit set wakes one. A parked contender that takes
// the lock keeps the bit set while others are parked (see seqPark),
// so the one that next lets go wakes the next: no parked contender is
// forgotten. A woken contender may lose the lock to one that never parked,
// as with sync.Mutex in its normal mode; and as in sync.Mutex's starvation
// mode, once a woken contender has waited longer than seqStarveAfter, those
// that never parked park too, so that the lock goes to the parked ones in
// the order they parked (see seqPark).
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
	mu     sync.Mutex
	parked []*seqWaiter // guarded by mu
	woken  int          // taken off parked by a wake and not back yet; guarded by mu
}

// A seqWaiter is a parked contender's place: one wake-up is sent on c. Each
// park makes its own: a channel made inside a testing/synctest bubble may
// not be used outside it, so places are not pooled.
type seqWaiter struct{ c chan struct{} }

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

// lockSlow is lock after a first try failed: spin, then park.
//
// A contender does not yield (runtime.Gosched) before it parks, as it once
// did, eight times: a yielding contender keeps its P busy, the follower
// that publications wake competes with it for a P, and the publishers take
// the lock in turn, its cache line moving with it. Parked, the contender
// leaves its P to the follower, and the holder appends alone. On two cores, GOMAXPROCS publishers with one
// follower (BenchmarkPublishRetainedFollowedParallel) went from 9.30x to
// 7.21x and from 8.71x to 6.79x the plain parallel row, in two runs of 10
// and 8 interleaved rounds (medians); publishers without a follower (4.14x,
// 4.11x) or with a channel subscription did not change beyond noise.
// Parking at once, without spinning, measured alike (5.29x to 4.21x in
// another run). A follower that spins likewise before it parks took its
// publishers' cache line at each look: 17.3x, not kept.
//
//go:noinline
func (q *seq) lockSlow() uint64 {
	for i := 0; canSpin(i); i++ {
		doSpin()
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
		if w&seqLocked == 0 && (woken || !q.starving.Load() || len(p.parked) == 0 && p.woken == 0) {
			nw := w | seqLocked
			if len(p.parked) > 0 {
				nw |= seqWaiting // the others stay woken by the next unlock
			}
			if q.w.CompareAndSwap(w, nw) {
				if woken && q.starving.Load() && (len(p.parked) == 0 && p.woken == 0 || time.Since(since) < seqStarveAfter) {
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
		if woken {
			p.parked = slices.Insert(p.parked, 0, me) // it waited longest
		} else {
			p.parked = append(p.parked, me)
		}
		p.mu.Unlock()
		<-me.c
		p.mu.Lock()
		p.woken--
		woken = true
	}
}

// canSpin and doSpin are sync.Mutex's spinning, from the runtime: canSpin
// reports whether the i-th spin may pay (a few, while other Ps run and the
// caller's has nothing else to run), and doSpin spins a moment without
// touching memory. Kept for packages outside it, as procPin is (see
// go.dev/issue/67401).
//
//go:linkname canSpin sync.runtime_canSpin
func canSpin(i int) bool

//go:linkname doSpin sync.runtime_doSpin
func doSpin()

// Unlock lets go of the sequencing point, publishing next as the tail: the
// holder's writes of the values below it are ordered before it.
func (q *seq) Unlock() {
	if old := q.w.Swap(q.next << seqShift); old&seqWaiting != 0 {
		q.wake()
	}
}

// wake wakes the first parked contender. The waiting bit was set by one
// that made the seqPark and parked.
//
//go:noinline
func (q *seq) wake() {
	p := q.park.Load()
	p.mu.Lock()
	if len(p.parked) > 0 {
		me := p.parked[0]
		p.parked = slices.Delete(p.parked, 0, 1)
		p.woken++
		me.c <- struct{}{} // buffered, and sent once per park
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
