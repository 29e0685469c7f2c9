// Package queue is a handler's queue: a bounded ring that any number of
// publishers put values in without a lock, and one worker takes from in
// batches, woken through a channel only when it waited for a value.
package queue

import (
	"runtime"
	"sync/atomic"
)

// A Queue holds up to its capacity of values, in the order they were put,
// as a buffered channel does. Put never waits for the taker: it fails when
// the queue is full. The taker, one goroutine, claims the oldest values in
// a batch (Take) and hands them out one at a time (Done): a value leaves
// the queue, and frees its room, when it is handed out, as when it is
// received from a channel; or, for a taker that takes one at a time, as it
// is taken (see Leave). Evict, which any goroutine may call, takes out the
// oldest value not claimed, so that a Put may make room (a policy of
// dropping the oldest, whose taker takes one value at a time).
//
// It is the bounded queue of D. Vyukov, with a count of the values handed
// out beside it: each cell has a sequence word, and a position p of the
// queue is at cell p mod len(cells).
//
//	putter of position p                 taker of positions h, …, h+n-1
//	  tail-out < capacity?                 seq of each cell: p+1 (put)?
//	  tail: CAS p -> p+1                   head: CAS h -> h+n
//	  write the value                      read each value; store its seq:
//	  store seq: p+1                         p+len(cells)
//	  load the Waiter's state: asleep?     out: add 1 as it hands each out
//	    wake the taker
//
// Invariant: the cell of position p holds seq p while it is free for p, p+1
// once p's value is in it, and p+len(cells) once that value is read out. A
// putter writes a cell only after its CAS on tail claimed p, which it tries
// only while the cell holds seq p: no value is in it and no taker reads it.
// A taker reads a cell only after its CAS on head claimed p, which it tries
// only while every cell it claims holds seq p+1: its value is written, and
// head, which only grows, was not moved past it by another taker. So no
// read overlaps a write, and the atomic operations on seq order every plain
// access to the values.
//
// The capacity bounds tail-out, the values put and not handed out or
// evicted (tail-head for a queue whose values leave as they are taken: see
// Leave); the cells are a power of two at least as many, and at least two
// (in one cell, seq p would say both "p-1 put" and "free for p"). Put fails
// when tail-out, out loaded after the tail it would claim, is the capacity:
// at that moment the queue held its capacity, as a send on a full channel
// fails; an out that passed that tail (other putters and the taker moved
// on) sends it back for the new tail. Since out <= head, a putter of p
// finds the value of p-len(cells) claimed; if its taker is still reading
// it (seq p-len(cells)+1), the putter waits, yielding, for that read of one
// cell to end.
//
// The taker waits through a Waiter, which one or more queues share (a
// handler's queue and its re-drive queue), in one of three states: awake,
// asleep (waiting, or about to, having handed out every value), and, for
// queues of capacity 0 only, handing (an unbuffered putter took the right
// to put its one value, which is not yet handed out). To wait, the taker
// takes the state from awake to asleep, then looks at the cell at head of
// each queue once more (Ready); a putter stores the cell's seq and then
// loads the state. Each is a sequentially consistent atomic pair, so either
// the taker sees the value, or the putter sees asleep: it takes the state
// to awake and sends on wake, which holds at most one token. A putter that
// finds the taker awake, the common case of a taker that keeps up, sends
// nothing. A token left over (the taker woke for something else meanwhile)
// only makes a later wait return at once, to look again.
//
// A queue of capacity 0 is unbuffered, as a channel without a buffer: a Put
// succeeds only if it takes the state from asleep to handing, which one Put
// can, and no other until the taker has handed out that value (Done, or
// Take OnTake, takes handing back to awake). That putter sends on wake once
// its value is in, whatever the state: the taker may have found its cell
// not yet written.
type Queue[T any] struct {
	_    [cacheLine]byte
	tail atomic.Uint64 // the next position to put at
	_    [cacheLine - 8]byte
	head atomic.Uint64 // the next position to claim
	_    [cacheLine - 8]byte
	out  atomic.Uint64 // the values handed out or evicted: out <= head
	_    [cacheLine - 8]byte
	// bound is out, or head for a queue whose values leave as they are
	// taken (OnTake): what the capacity bounds tail less.
	bound  *atomic.Uint64
	w      *Waiter
	closed atomic.Bool
	cells  []cell[T]
	mask   uint64
	cap    uint64
	_      [cacheLine]byte
}

// A Waiter is where the taker of one or more queues waits for a value.
type Waiter struct {
	_     [cacheLine]byte
	state atomic.Uint32
	wake  chan struct{}
	_     [cacheLine]byte
}

// The states of a Waiter (see Queue).
const (
	awake uint32 = iota
	asleep
	handing
)

// NewWaiter returns a Waiter, awake.
func NewWaiter() *Waiter { return &Waiter{wake: make(chan struct{}, 1)} }

// Sleep tells the putters that the taker is about to wait, having handed out
// every value it took. It then looks at each of its queues (Ready): if one
// is, it calls Awake and takes; if none is, it receives from C.
func (w *Waiter) Sleep() { w.state.CompareAndSwap(awake, asleep) }

// Awake ends a Sleep the taker did not wait after, or woke from for
// something else than its queues.
func (w *Waiter) Awake() { w.state.CompareAndSwap(asleep, awake) }

// C returns the channel the taker waits on after Sleep.
func (w *Waiter) C() <-chan struct{} { return w.wake }

// Poke wakes the taker if it waits on C, or makes its next wait on C return
// at once: for something else than its queues, which it then looks at.
func (w *Waiter) Poke() { w.signal() }

// signal leaves a token on wake, unless one is there.
func (w *Waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

type cell[T any] struct {
	seq atomic.Uint64
	v   T
}

// cacheLine is the size of a cache line on the machines this is tuned for.
const cacheLine = 64

// When a value leaves a queue, and frees its room: when the taker hands it
// out (Done), or as it takes it.
type Leave int

const (
	// OnDone: the taker takes values in batches (Take) and hands them out
	// one at a time (Done), and a value taken and not yet handed out takes
	// room, as a value not yet received from a channel.
	OnDone Leave = iota
	// OnTake: a value leaves as it is taken, as in a receive from a
	// channel, and the taker calls no Done. For a taker that takes one
	// value at a time: so that Evict, which cannot take a value the taker
	// took, always finds the oldest value that takes room.
	OnTake
)

// New returns a queue of capacity c, c >= 0, whose taker waits through w,
// and whose values leave as leave says.
func New[T any](c int, w *Waiter, leave Leave) *Queue[T] {
	if c < 0 {
		panic("queue: a negative capacity")
	}
	// At least two cells: in one, the seq of its value put at p-1 (p) and
	// of its being free for p (p) would be the same.
	n := 2
	for n < c {
		n <<= 1
	}
	q := &Queue[T]{w: w, cells: make([]cell[T], n), mask: uint64(n - 1), cap: uint64(c)}
	q.bound = &q.out
	if leave == OnTake {
		q.bound = &q.head
	}
	for i := range q.cells {
		q.cells[i].seq.Store(uint64(i))
	}
	return q
}

// Waiter returns the Waiter of the queue's taker.
func (q *Queue[T]) Waiter() *Waiter { return q.w }

// Leave returns when the queue's values leave it.
func (q *Queue[T]) Leave() Leave {
	if q.bound == &q.head {
		return OnTake
	}
	return OnDone
}

// Cap returns the capacity.
func (q *Queue[T]) Cap() int { return int(q.cap) }

// Len returns the values in the queue: put, and neither handed out (or,
// OnTake, taken) nor evicted.
func (q *Queue[T]) Len() int {
	for {
		o := q.bound.Load()
		t := q.tail.Load()
		if o <= t { // else out moved past the tail loaded before it
			return int(t - o)
		}
	}
}

// Put puts v at the tail, and reports whether it did: false if the queue
// was full.
func (q *Queue[T]) Put(v T) bool {
	if q.cap == 0 {
		return q.putUnbuffered(v)
	}
	for {
		p := q.tail.Load()
		o := q.bound.Load()
		if o > p {
			continue // p is stale: values past it have left already
		}
		if p-o >= q.cap {
			return false // bound loaded after p: full at that moment
		}
		c := &q.cells[p&q.mask]
		switch seq := c.seq.Load(); {
		case seq == p:
			if !q.tail.CompareAndSwap(p, p+1) {
				continue // another putter claimed p
			}
			c.v = v
			c.seq.Store(p + 1)
			if w := q.w; w.state.Load() == asleep && w.state.CompareAndSwap(asleep, awake) {
				w.signal()
			}
			return true
		case seq < p:
			// The value of p-len(cells) is claimed, and being read (see
			// Queue): wait for that one read.
			runtime.Gosched()
		}
		// seq > p: another putter put at p; try the new tail.
	}
}

// putUnbuffered is Put for a queue of capacity 0 (see Queue).
func (q *Queue[T]) putUnbuffered(v T) bool {
	if !q.w.state.CompareAndSwap(asleep, handing) {
		return false // the taker is not waiting, or another Put took its turn
	}
	// Every value of the queue was handed out, and no other Put can claim
	// a position until this value is: p is free.
	p := q.tail.Load()
	c := &q.cells[p&q.mask]
	q.tail.Store(p + 1)
	c.v = v
	c.seq.Store(p + 1)
	q.w.signal()
	return true
}

// Take claims the oldest values into buf, as many as it holds, and returns
// how many: 0 if the queue is empty. OnDone, they stay in the queue,
// counted by Len and against the capacity, until handed out (see Done);
// OnTake, they leave it. Only the taker calls it.
func (q *Queue[T]) Take(buf []T) int {
	for {
		h := q.head.Load()
		n := 0
		for n < len(buf) && q.cells[(h+uint64(n))&q.mask].seq.Load() == h+uint64(n)+1 {
			n++
		}
		if n == 0 {
			return 0
		}
		if !q.head.CompareAndSwap(h, h+uint64(n)) {
			continue // Evict took the oldest
		}
		for i := range n {
			buf[i] = q.release(h + uint64(i))
		}
		if q.bound == &q.head {
			q.left(n)
		}
		return n
	}
}

// Done tells a queue whose values leave OnDone that the taker handed out n
// of the values it took: they leave it, and free their room.
func (q *Queue[T]) Done(n int) { q.left(n) }

// left counts n values that left the queue: handed out, taken (OnTake) or
// evicted.
func (q *Queue[T]) left(n int) {
	if q.bound == &q.out {
		q.out.Add(uint64(n))
	}
	if q.cap == 0 {
		q.w.state.CompareAndSwap(handing, awake) // the next Put may wait for a Sleep
	}
}

// Evict takes out the oldest value not claimed by the taker, and reports
// whether there was one. Any goroutine may call it.
func (q *Queue[T]) Evict() (v T, ok bool) {
	for {
		h := q.head.Load()
		if q.cells[h&q.mask].seq.Load() != h+1 {
			return v, false // empty, or its oldest value is still being put
		}
		if q.head.CompareAndSwap(h, h+1) {
			v = q.release(h)
			q.left(1)
			return v, true
		}
	}
}

// release reads the value of position p, which the caller claimed, and
// frees its cell for position p+len(cells).
func (q *Queue[T]) release(p uint64) T {
	c := &q.cells[p&q.mask]
	v := c.v
	var zero T
	c.v = zero // hold no reference to a value taken
	c.seq.Store(p + uint64(len(q.cells)))
	return v
}

// Close marks the queue closed and wakes the taker. Values put before it
// can still be taken; the caller puts nothing after it.
func (q *Queue[T]) Close() {
	q.closed.Store(true)
	q.w.signal()
}

// Closed reports whether Close was called.
func (q *Queue[T]) Closed() bool { return q.closed.Load() }

// Ready reports whether the taker would find something without waiting: a
// value at the head of the queue, or the queue closed.
func (q *Queue[T]) Ready() bool {
	h := q.head.Load()
	return q.cells[h&q.mask].seq.Load() == h+1 || q.closed.Load()
}
