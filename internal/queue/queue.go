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
// received from a channel. Evict, which any goroutine may call, takes out
// the oldest value not claimed, so that a Put may make room (a policy of
// dropping the oldest: its taker claims one value at a time).
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
//	  load sleeping: 1? wake the taker     out: add 1 as it hands each out
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
// evicted; the cells are a power of two at least as many. Put fails when
// tail-out, out loaded after the tail it would claim, is the capacity: at
// that moment the queue held its capacity, as a send on a full channel
// fails. Since out <= head, a putter of p finds the value of p-len(cells)
// claimed; if its taker is still reading it (seq p-len(cells)+1), the
// putter waits, yielding, for that read of one cell to end.
//
// The taker waits for a value (see Sleep) by storing sleeping 1 and then
// looking at the cell at head once more; a putter stores the cell's seq and
// then loads sleeping. Each is a sequentially consistent atomic pair, so
// either the taker sees the value, or the putter sees sleeping 1: it clears
// it and sends on wake, which holds at most one token. A putter that finds
// sleeping 0, the common case of a taker that keeps up, sends nothing.
//
// A queue of capacity 0 is unbuffered: a Put succeeds only if it finds the
// taker waiting (sleeping 1), and then holds one value at most.
type Queue[T any] struct {
	_    [cacheLine]byte
	tail atomic.Uint64 // the next position to put at
	_    [cacheLine - 8]byte
	head atomic.Uint64 // the next position to claim
	_    [cacheLine - 8]byte
	out  atomic.Uint64 // the values handed out or evicted: out <= head
	_    [cacheLine - 8]byte
	// sleeping is 1 from when the taker is about to wait until a putter
	// (or Close, or the taker) clears it.
	sleeping atomic.Uint32
	closed   atomic.Bool
	wake     chan struct{}
	cells    []cell[T]
	mask     uint64
	cap      uint64
	_        [cacheLine]byte
}

type cell[T any] struct {
	seq atomic.Uint64
	v   T
}

// cacheLine is the size of a cache line on the machines this is tuned for.
const cacheLine = 64

// New returns a queue of capacity c, c >= 0.
func New[T any](c int) *Queue[T] {
	if c < 0 {
		panic("queue: a negative capacity")
	}
	n := 1
	for n < c {
		n <<= 1
	}
	q := &Queue[T]{cells: make([]cell[T], n), mask: uint64(n - 1), cap: uint64(c), wake: make(chan struct{}, 1)}
	for i := range q.cells {
		q.cells[i].seq.Store(uint64(i))
	}
	return q
}

// Cap returns the capacity.
func (q *Queue[T]) Cap() int { return int(q.cap) }

// Len returns the values in the queue: put, and neither handed out nor
// evicted.
func (q *Queue[T]) Len() int {
	for {
		o := q.out.Load()
		t := q.tail.Load()
		if o <= t { // else out moved past the tail loaded before it
			return int(t - o)
		}
	}
}

// Put puts v at the tail, and reports whether it did: false if the queue
// was full.
func (q *Queue[T]) Put(v T) bool {
	limit := q.cap
	if limit == 0 {
		if q.sleeping.Load() == 0 {
			return false // unbuffered, and the taker is not waiting
		}
		limit = 1
	}
	for {
		p := q.tail.Load()
		if p-q.out.Load() >= limit {
			return false // out loaded after p: full at that moment
		}
		c := &q.cells[p&q.mask]
		switch seq := c.seq.Load(); {
		case seq == p:
			if !q.tail.CompareAndSwap(p, p+1) {
				continue // another putter claimed p
			}
			c.v = v
			c.seq.Store(p + 1)
			if q.sleeping.Load() != 0 && q.sleeping.CompareAndSwap(1, 0) {
				q.signal()
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

// Take claims the oldest values into buf, as many as it holds, and returns
// how many: 0 if the queue is empty. They stay in the queue, counted by
// Len and against the capacity, until handed out (see Done). Only the
// taker calls it.
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
		return n
	}
}

// Done tells the queue that the taker handed out n of the values it took:
// they leave it, and free their room.
func (q *Queue[T]) Done(n int) { q.out.Add(uint64(n)) }

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
			q.out.Add(1)
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
	q.sleeping.Store(0)
	q.signal()
}

// Closed reports whether Close was called.
func (q *Queue[T]) Closed() bool { return q.closed.Load() }

// Sleep prepares the taker to wait: it returns nil if a value is ready or
// the queue is closed (take again, without waiting), or else a channel to
// wait on, which receives once a value is put or the queue is closed. A
// taker that waits for something else too, and wakes for it, calls Awake.
func (q *Queue[T]) Sleep() <-chan struct{} {
	q.sleeping.Store(1)
	h := q.head.Load()
	if q.cells[h&q.mask].seq.Load() == h+1 || q.closed.Load() {
		q.sleeping.Store(0)
		return nil
	}
	return q.wake
}

// Awake ends a Sleep the taker woke from for something else than the queue.
func (q *Queue[T]) Awake() { q.sleeping.Store(0) }

// signal leaves a token on wake, unless one is there.
func (q *Queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
