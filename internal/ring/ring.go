// Package ring is the broker's ring: the latest values of a retained type
// in slots, written by one writer and read by any number of readers without
// a lock, each chunk of slots guarded by a word.
package ring

import (
	"runtime"
	"sync/atomic"
)

// A Ring holds the latest values of a retained type, the value of offset o
// in slot o mod n. One writer at a time writes it (the log's sequencing
// point serialises them), while any number of readers read it without a
// lock: Broker.Read, followers and replays never wait for a publisher, and a
// publisher waits for a reader only when it reuses a chunk of slots whose
// values retention has dropped while that reader is copying one of them.
//
// The slots are grouped in chunks of a power of two (the last one may be
// shorter), each guarded by its word: the name of the offset its first slot
// holds (see name; zero for none) in its high bits, and a count of the
// readers copying from it.
//
//	writer of offset o                         reader of offsets o, o+1, …
//	  first slot of a chunk:                     load word: names o's chunk?
//	    CAS word: no readers -> names o          CAS word: readers+1
//	  write the value and its time               copy values below tail
//	  store tail: o+1                            add to word: readers-1
//
// Invariant: the writer writes the slots of a chunk only while its word
// names the values it writes, which it makes it name only when no reader
// counts itself in, and a reader copies a value only while it counts itself
// in on a word that names the value's chunk, and only a value below the
// tail it loaded, which was stored after the value was written. So no copy
// overlaps a write: the writer's later writes in the same chunk are of
// offsets past that tail, and its next write over the same slot waits for
// the chunk's readers to leave; the atomic operations on the word and on
// tail order every plain access to the values. A reader that finds the word
// naming a later offset knows its values are gone; one that finds an
// earlier offset knows they are not written yet (in this ring).
//
// A chunk's values go all at once, when the writer enters it again, so a
// ring keeps its capacity's worth of values behind the one it writes only
// with a spare chunk: it has cap+chunk slots, and the values retention
// keeps are never in the chunk being entered (see New).
//
// One word per chunk rather than per slot makes a publication, which enters
// a chunk once in chunk values, two atomic operations shorter, and lets a
// reader copy a run of a chunk's values under one count.
type Ring[T any] struct {
	cells  []Cell[T]
	chunks []chunkWord
	n      uint64 // len(cells): cap+chunk
	cap    int    // the values it keeps: the log grows it before it holds more
	shift  uint   // log2 of the chunk size
	last   uint64 // chunk size - 1
}

// A Cell is a slot: a value and its time.
type Cell[T any] struct {
	Nanos int64 // the time of the value, in nanoseconds since the log's epoch
	Value T
}

// chunkWord is a chunk's word (see Ring), on a cache line of its own so that
// readers counting themselves in on one chunk do not contend with the
// writer entering the next.
type chunkWord struct {
	word atomic.Uint64
	_    [cacheLine - 8]byte
}

// cacheLine is the size of a cache line on the machines this is tuned for
// (as in the broker's log).
const cacheLine = 64

const (
	slotShift   = 16
	slotReaders = 1<<slotShift - 1 // the readers count's bits
	// nameBits is the width of a chunk's name (see name), one bit
	// short of the word's high bits so that a name is never zero.
	nameBits = 64 - slotShift - 1
	nameMask = 1<<nameBits - 1
	// maxChunkShift bounds a chunk at 64 values: the spare chunk a ring
	// keeps and the values a reader copies under one count.
	maxChunkShift = 6
)

// New returns a ring that keeps cap values. Its chunks are of up to 64
// values and an eighth of cap at most (one value for rings of less than 16),
// so that its spare chunk costs at most an eighth of its size.
//
// The spare chunk is what lets a chunk's values go at once: entering a chunk
// at offset o, which readers see while tail is still o, drops the offsets
// o-n to o-n+chunk-1, and with n = cap+chunk the last of these is o-cap-1,
// which a log of cap values no longer keeps at tail o. (One slot fewer, and
// a reader finds o-cap, the oldest kept, gone: the broker's
// TestRingReadersNeverSeeAWrongValue.)
func New[T any](cap int) *Ring[T] {
	shift := uint(0)
	for shift < maxChunkShift && 8<<(shift+1) <= cap {
		shift++
	}
	c := 1 << shift
	n := cap + c
	return &Ring[T]{
		cells:  make([]Cell[T], n),
		chunks: make([]chunkWord, (n+c-1)>>shift),
		n:      uint64(n),
		cap:    cap,
		shift:  shift,
		last:   uint64(c - 1),
	}
}

// name returns the name a chunk word gives the chunk whose first slot
// holds offset first: its low nameBits bits plus one, never zero, which
// stands for a chunk never entered. Offsets are 64 bits and a word has 48
// for the name, so names repeat every 2^47 offsets, and pinSlow orders two
// names by their signed difference in nameBits bits. That is right while
// the offsets differ by less than 2^46: a reader pins an offset at most a
// ring's size below a tail it loaded, and the writer names chunks up to its
// own tail, so they differ by more only if the writer appends 2^46 values
// (days, at any rate a log reaches) while one reader is between loading the
// tail and pinning. Past that bound a gone chunk may read as not yet (which
// readers treat alike); a value of another offset needs a stall of 2^47.
// TestRingWritesAcrossNameWraps writes and reads rings across 2^47,
// 2^48 and 2^63 and up to the end of uint64 (a log's tail ends at 2^62).
//
// It is a method of the generic Ring, which does not need its receiver,
// rather than a function: the broker's generic read and write paths are
// compiled in the packages that use the broker, which cannot import this
// one, and there a function of this package is called out of line (the
// compiler has its body only where this package is imported), while the
// body of a generic method travels with the generic code that calls it.
func (*Ring[T]) name(first uint64) uint64 { return first&nameMask + 1 }

// Index returns the slot of offset o.
func (r *Ring[T]) Index(o uint64) uint64 { return o % r.n }

// Next returns the slot after s.
func (r *Ring[T]) Next(s uint64) uint64 {
	if s++; s == r.n {
		return 0
	}
	return s
}

// Put stores v, of time nanos, in slot s. The caller is the one writer,
// which keeps track of s (Index of the offset) to spare a division, and
// which has entered the slot's chunk: it calls Enter first when s is the
// first slot of a chunk (s&Mask() is 0). (A method doing both is too long
// for the compiler to inline in the writer's append.)
func (r *Ring[T]) Put(s uint64, nanos int64, v T) {
	c := &r.cells[s]
	c.Nanos, c.Value = nanos, v
}

// Enter makes the chunk whose first slot is s, that of offset o, name o. Its
// values, all dropped by now (see New), go once no reader copies one
// (see Ring): it waits, spinning and then yielding, for a reader copying
// one of them.
func (r *Ring[T]) Enter(o, s uint64) {
	w := &r.chunks[s>>r.shift].word
	for spin := 0; ; spin++ {
		x := w.Load()
		if x&slotReaders == 0 && w.CompareAndSwap(x, r.name(o)<<slotShift) {
			r.own(s)
			return
		}
		if spin > 16 {
			runtime.Gosched() // a reader is copying a value this chunk drops
		}
	}
}

// own writes the time of each slot of the chunk the writer has just entered
// at slot s, so that the chunk's cache lines come to the writer's core in
// one go rather than one at a time. A follower that read the chunk's old
// values on another core keeps copies of its lines; without this, each
// publication that wrote into a line of them waited for those copies to be
// invalidated, at the locked swap that publishes the tail (a locked
// instruction waits for every earlier store to take its line), while here
// the chunk's lines are taken all at once, in one wait per chunk. On two
// cores, six interleaved rounds beside 78b1ccf (medians): one publisher
// with a follower on its own goroutine took 49.2 ns a value against 63.6
// ns, and GOMAXPROCS publishers with one follower 50.3 against 61.5 ns;
// the 64 stores per chunk cost publications that no one follows 32.6 ns
// against 30.9.
//
// Invariant: no reader copies a slot of the chunk until the writer stores a
// tail past it, after writing its value: the chunk's word names offsets
// from o on, and a reader copies only values below a tail it loaded, which
// is at most o until then (see Ring). So these writes race with no read.
// The time is the cell's first word: a cell of up to a line's size starts
// in every line the chunk holds, so every line is written.
func (r *Ring[T]) own(s uint64) {
	cs := r.cells[s:min(r.n, s+r.last+1)]
	for i := range cs {
		cs[i].Nanos = 0
	}
}

// A Status says what a reader found in a slot.
type Status uint8

const (
	OK     Status = iota
	Gone          // replaced by a later value
	NotYet        // not written yet (in this ring)
)

// Pin counts the reader in on the chunk of offset o, which must be below a
// tail the reader loaded before it loaded the ring. With OK, it returns
// o's slot s and how many slots from s on are in its chunk: the reader may
// copy the values of those below its tail (Cell), and must then Unpin s.
// It never waits for the writer; it spins, and then yields, only while
// other readers contend for the chunk's word.
func (r *Ring[T]) Pin(o uint64) (s, run uint64, st Status) {
	s = r.Index(o)
	run, st = r.PinAt(o, s)
	return s, run, st
}

// PinAt is Pin given o's slot s, which a reader that reads on from where it
// left off knows without a division.
func (r *Ring[T]) PinAt(o, s uint64) (run uint64, st Status) {
	first := o - s&r.last // the offset of the chunk's first slot
	w := &r.chunks[s>>r.shift].word
	if x := w.Load(); x>>slotShift == r.name(first) && x&slotReaders != slotReaders && w.CompareAndSwap(x, x+1) {
		return min(r.n, s|r.last+1) - s, OK // inlined: the common case
	}
	return r.pinSlow(first, s)
}

// pinSlow is PinAt past its first try; first is the offset of the first
// slot of s's chunk.
func (r *Ring[T]) pinSlow(first, s uint64) (run uint64, st Status) {
	w := &r.chunks[s>>r.shift].word
	want := r.name(first)
	for spin := 0; ; spin++ {
		x := w.Load()
		name := x >> slotShift
		// The names' difference, sign-extended from nameBits bits.
		d := int64((name-want)<<(64-nameBits)) >> (64 - nameBits)
		switch {
		case name == 0 || d < 0:
			return 0, NotYet
		case d > 0:
			return 0, Gone
		case x&slotReaders != slotReaders && w.CompareAndSwap(x, x+1):
			return min(r.n, s|r.last+1) - s, OK
		}
		if spin > 16 {
			runtime.Gosched() // contended by other readers
		}
	}
}

// Unpin counts the reader out of the chunk of slot s.
func (r *Ring[T]) Unpin(s uint64) { r.chunks[s>>r.shift].word.Add(^uint64(0)) }

// Read copies the value of offset o, below a tail the reader loaded before
// the ring, and its time.
func (r *Ring[T]) Read(o uint64) (v T, nanos int64, st Status) {
	s, _, st := r.Pin(o)
	if st != OK {
		return v, 0, st
	}
	c := &r.cells[s]
	v, nanos = c.Value, c.Nanos
	r.Unpin(s)
	return v, nanos, OK
}

// CopyInto copies the values of offsets from to to-1 into n, a larger ring,
// which no one reads yet; the caller is the one writer.
func (r *Ring[T]) CopyInto(n *Ring[T], from, to uint64) {
	s, d := r.Index(from), n.Index(from)
	for o := from; o < to; o++ {
		n.cells[d] = r.cells[s] // readers only read r's
		if o == from || d&n.last == 0 {
			n.chunks[d>>n.shift].word.Store(n.name(o-d&n.last) << slotShift)
		}
		s, d = r.Next(s), n.Next(d)
	}
}

// Cell returns slot s, whose value a reader may copy while it has the
// slot's chunk pinned (Pin), and only below a tail it loaded, and the
// writer writes only after Enter (Put).
func (r *Ring[T]) Cell(s uint64) *Cell[T] { return &r.cells[s] }

// Size returns the number of slots, cap plus a chunk (see New); it never
// changes.
func (r *Ring[T]) Size() uint64 { return r.n }

// Cap returns the number of values the ring keeps; it never changes.
func (r *Ring[T]) Cap() int { return r.cap }

// Mask returns the size of a chunk minus one: s&Mask() is slot s's place
// in its chunk, 0 for a chunk's first slot. It never changes.
func (r *Ring[T]) Mask() uint64 { return r.last }

// Readers returns the count of readers pinned on r's chunks, all together,
// read chunk by chunk. A test seam: the broker never calls it.
func (r *Ring[T]) Readers() (n uint64) {
	for i := range r.chunks {
		n += r.chunks[i].word.Load() & slotReaders
	}
	return n
}
