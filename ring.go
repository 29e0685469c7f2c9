package topic

import (
	"runtime"
	"sync/atomic"
)

// A ring holds the latest values of a retained type, the value of offset o
// in cell o mod len. One writer at a time writes it (the log's sequencing point
// serialises them), while any number of readers read it without a lock:
// Broker.Read, followers and replays never wait for a publisher, and a
// publisher waits for a reader only when it reuses the slot of a value that
// reader is copying at that moment (a value retention has just dropped).
//
// Each slot is guarded by its word: the offset it holds plus one (zero for
// none) in its high bits, a writing bit, and a count of readers copying it.
//
//	writer                                   reader of offset o
//	  CAS word: no readers -> writing          load word: holds o+1, not writing?
//	  write the value and its time             CAS word: readers+1
//	  store word: holds o'+1, no flags         copy the value and its time
//	                                           add to word: readers-1
//
// Invariant: the writer writes a slot's value only while the writing bit is
// set, which it sets only when no reader counts itself in, and a reader
// copies the value only while it counts itself in, which it does only when
// the writing bit is clear and the word names its offset. So no copy
// overlaps a write; the atomic operations on the word order every plain
// access to the value, and a copy is always of the offset the reader asked
// for. A reader that finds the word naming a later offset, or the writing bit
// set over its own, knows its value is gone; one that finds an earlier
// offset knows its value is not written yet.
type ring[T any] struct {
	cells []cell[T]
	n     uint64 // len(cells)
	mask  uint64 // n-1 if n is a power of two, else 0: then index divides
}

type cell[T any] struct {
	word  atomic.Uint64 // see ring
	nanos int64         // the time of the value, in nanoseconds since the log's epoch
	v     T
}

const (
	slotShift   = 16
	slotWriting = 1 << (slotShift - 1)
	slotReaders = slotWriting - 1 // the readers count's bits
)

func newRing[T any](n int) *ring[T] {
	r := &ring[T]{cells: make([]cell[T], n), n: uint64(n)}
	if n&(n-1) == 0 {
		r.mask = r.n - 1
	}
	return r
}

// index returns the index of the cell of offset o.
func (r *ring[T]) index(o uint64) uint64 {
	if r.mask != 0 {
		return o & r.mask
	}
	return o % r.n
}

// write stores v, of offset o and time nanos, in its slot. The caller is the
// one writer.
func (r *ring[T]) write(o uint64, nanos int64, v T) {
	s := &r.cells[r.index(o)]
	for spin := 0; ; spin++ {
		w := s.word.Load()
		if w&slotReaders == 0 && s.word.CompareAndSwap(w, w|slotWriting) {
			break
		}
		if spin > 16 {
			runtime.Gosched() // a reader is copying the value this one replaces
		}
	}
	s.nanos, s.v = nanos, v
	s.word.Store((o + 1) << slotShift)
}

// A readStatus says what a reader found in a slot.
type readStatus uint8

const (
	readOK     readStatus = iota
	readGone              // replaced by a later value, or being replaced
	readNotYet            // not written yet (in this ring)
)

// read copies the value of offset o and its time.
func (r *ring[T]) read(o uint64) (v T, nanos int64, st readStatus) {
	s := &r.cells[r.index(o)]
	for spin := 0; ; spin++ {
		w := s.word.Load()
		switch seq := w >> slotShift; {
		case seq > o+1:
			return v, 0, readGone
		case seq < o+1:
			return v, 0, readNotYet
		case w&slotWriting != 0:
			return v, 0, readGone
		case w&slotReaders != slotReaders && s.word.CompareAndSwap(w, w+1):
			v, nanos = s.v, s.nanos
			s.word.Add(^uint64(0)) // readers-1
			return v, nanos, readOK
		}
		if spin > 16 {
			runtime.Gosched() // contended by other readers
		}
	}
}

// copyInto copies the values of offsets from to to-1 into n, a larger ring,
// which no one reads yet; the caller is the one writer.
func (r *ring[T]) copyInto(n *ring[T], from, to uint64) {
	for o := from; o < to; o++ {
		s, d := &r.cells[r.index(o)], &n.cells[n.index(o)]
		d.nanos, d.v = s.nanos, s.v // readers only read s
		d.word.Store((o + 1) << slotShift)
	}
}
