package ring

// Tests of a chunk's name: the name of the offset a chunk's first slot
// holds is its low 47 bits plus one, and pinSlow orders names by their
// difference sign-extended from 47 bits. Every value is its offset (and its
// time too, where there is one), so a copy from the wrong chunk, or of a
// slot being written, shows as a value that is not its offset (or as a race
// under -race). The offsets are around where names wrap (multiples of
// 2^47), where a name of first+1 in 48 bits would overflow (2^48), at the
// end of a log's 62-bit tail, and, for the ring alone, at 2^63 and the end
// of uint64. The broker's tests of a log across them are in the root
// package's ring_name_test.go.

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// chunkName is name, for the tests.
func chunkName(first uint64) uint64 { return (*Ring[uint64])(nil).name(first) }

// write is the writer's step of a ring's append, as the broker's
// appendLocked takes it: enter the chunk at its first slot, then put v in
// slot s.
func (r *Ring[T]) write(o, s uint64, nanos int64, v T) {
	if s&r.last == 0 {
		r.Enter(o, s)
	}
	r.Put(s, nanos, v)
}

// nameBounds are offsets around which a ring is written: names wrap at every
// multiple of 2^47; 2^46 is where a difference of names changes sign.
var nameBounds = []uint64{
	1 << 46, 1 << 47, 1 << 48, 3 << 47, 1<<62 - 1<<47, 1 << 62, 1 << 63, 1<<64 - 1<<47,
}

// nameCounts are ring capacities: chunks of 1 (below 16), 2, 4, 8, 32 and 64
// values, a short last chunk (100, 1000), and 960, whose 1024 slots divide
// 2^64.
var nameCounts = []int{1, 7, 8, 15, 16, 17, 33, 64, 100, 511, 960, 1000}

// sweep returns xs whole, or, under the race detector, three of them: the
// first, the middle one and the last. It is for the parameters of tests
// that run on one goroutine, where the race detector has nothing to find
// and only makes each case ten times slower: make check runs them whole in
// its cover step, without it.
func sweep[T any](xs []T) []T {
	if !raceEnabled || len(xs) <= 3 {
		return xs
	}
	return []T{xs[0], xs[len(xs)/2], xs[len(xs)-1]}
}

// chunkStart returns the offset at or below near whose slot is the first of
// its chunk, where a writer starts (see ring's invariant).
func chunkStart(r *Ring[uint64], near uint64) uint64 { return near - r.Index(near)&r.last }

// trackingWriter writes a ring as a log's writer does, each value its
// offset, and keeps track of the slot (as the broker's appendLocked keeps
// l.slot) rather than dividing.
type trackingWriter struct {
	r    *Ring[uint64]
	o, s uint64 // the offset written next and its slot
}

func newTrackingWriter(r *Ring[uint64], start uint64) *trackingWriter {
	return &trackingWriter{r: r, o: start, s: r.Index(start)}
}

// write writes the next offset and returns it and its slot.
func (w *trackingWriter) write() (o, s uint64) {
	o, s = w.o, w.s
	w.r.write(o, s, int64(o), o)
	w.o, w.s = o+1, w.r.Next(s)
	return o, s
}

// nextChunkFirst returns the first offset of the chunk after that of offset o,
// in slot s.
func nextChunkFirst(r *Ring[uint64], o, s uint64) uint64 { return o + min(r.n, s|r.last+1) - s }

// checkKept reads offsets lo to hi back from r: each must pin, and be its
// offset. With every false, it reads the ends and each chunk's first and
// last offsets only.
func checkKept(t *testing.T, what string, r *Ring[uint64], lo, hi uint64, every bool) bool {
	t.Helper()
	for k := lo; ; k++ {
		if s := r.Index(k); every || k-lo < 2 || hi-k < 2 || s&r.last == 0 || s&r.last == r.last || s == r.n-1 {
			if v, nanos, st := r.Read(k); st != OK || v != k || nanos != int64(k) {
				t.Errorf("%s: offset %d (of %d to %d kept) reads %d (time %d), status %d", what, k, lo, hi, v, nanos, st)
				return false
			}
		}
		if k == hi {
			return true
		}
	}
}

// Pin against a chunk word naming each offset at a difference D from
// the reader's chunk, at offsets around every bound: a word naming the
// reader's chunk pins (fast path and pinSlow), one naming a later chunk is
// gone and an earlier one not yet, for every |D| < 2^46, the comment's
// bound; a word never entered (0) is not yet; the readers count in the low
// bits changes nothing and is counted in and out by one. Past the bound it
// logs what a reader finds, to show the bound is tight: at D = 2^46 a gone
// chunk reads as not yet, at D = 2^47 another chunk's values pin.
func TestRingNamesOrderChunksWithinTheBound(t *testing.T) {
	t.Parallel()
	const half = int64(1) << 46
	for _, count := range []int{1, 16, 100, 1000} {
		r := New[uint64](count)
		n := int64(r.n)
		offsets := []uint64{0, 1, 2, r.n, math.MaxUint64, math.MaxUint64 - r.n}
		for _, b := range nameBounds {
			offsets = append(offsets, b-r.n-1, b-2, b-1, b, b+1, b+r.n)
		}
		for _, o := range offsets {
			s := r.Index(o)
			first := o - s&r.last
			w := &r.chunks[s>>r.shift].word
			what := func(D int64, readers uint64) string {
				return fmt.Sprintf("cap %d, offset %d (chunk %d), word naming %+d from it, %d readers", count, o, first, D, readers)
			}
			for _, readers := range []uint64{0, 5} {
				w.Store(readers)
				if s2, _, st := r.Pin(o); st != NotYet {
					t.Errorf("%s: a chunk never entered pins with status %d", what(0, readers), st)
					if st == OK {
						r.Unpin(s2)
					}
				}
				for _, D := range []int64{0, 1, -1, n, -n, 2*n + 1, -2*n - 1, half / 3, -half / 3, half - 1, -(half - 1), -half,
					half, -half - 1, 2*half - 1, 2 * half, -2 * half, 2*half + n, 4 * half, 6 * half} {
					x := chunkName(first+uint64(D))<<slotShift | readers
					w.Store(x)
					in := D > -half && D < half
					var want Status
					switch {
					case D > 0:
						want = Gone
					case D < 0:
						want = NotYet
					}
					_, run, st := r.Pin(o)
					if st == OK {
						if got := w.Load(); got != x+1 {
							t.Errorf("%s: pinned, the word went from %#x to %#x", what(D, readers), x, got)
						}
						if run == 0 || run > r.last+1 || s+run > r.n {
							t.Errorf("%s: pinned a run of %d from slot %d", what(D, readers), run, s)
						}
						r.Unpin(s)
					}
					if got := w.Load(); got != x {
						t.Errorf("%s: the word is %#x after the pin, %#x before", what(D, readers), got, x)
					}
					if _, st2 := r.pinSlow(first, s); st2 != st {
						t.Errorf("%s: pinSlow finds status %d, pin %d", what(D, readers), st2, st)
					} else if st2 == OK {
						r.Unpin(s)
					}
					switch {
					case in && st != want:
						t.Errorf("%s: status %d, want %d", what(D, readers), st, want)
					case !in && readers == 0 && o == 1<<47 && count == 1000:
						t.Logf("past the bound: %s: status %d (right: %d)", what(D, readers), st, want)
					}
				}
			}
			w.Store(0)
		}
	}
}

// A writer that keeps track of its slot (as appendLocked does)
// writes each ring size across every bound, and after each write every
// value the ring keeps reads back right, the last one dropped is gone, and
// the next chunk is not yet; a chunk whose first offset is 2^47-1 modulo
// 2^47 has the name 2^47, in the word's top bit.
func TestRingWritesAcrossNameWraps(t *testing.T) {
	t.Parallel()
	bounds := append(nameBounds, math.MaxUint64)
	if raceEnabled {
		// The bounds where names wrap (2^47, 2^48, 2^63) and the end of
		// uint64; the others add time under -race, not cases.
		bounds = []uint64{1 << 47, 1 << 48, 1 << 63, math.MaxUint64}
	}
	for _, count := range sweep(nameCounts) {
		for _, b := range bounds {
			r := New[uint64](count)
			start := chunkStart(r, b-2*r.n)
			end := b + 2*r.n // past the last offset written
			if b == math.MaxUint64 {
				start, end = chunkStart(r, b-4*r.n), 0 // up to MaxUint64 itself
			}
			w := newTrackingWriter(r, start)
			top := 0
			for w.o != end {
				o, s := w.write()
				what := fmt.Sprintf("cap %d (%d slots, chunks of %d), from %d, tail %d", count, r.n, r.last+1, start, o+1)
				lo := o - min(uint64(r.cap)-1, o-start)
				if !checkKept(t, what, r, lo, o, count <= 100 || o%61 == 0 || o>>4 == b>>4) {
					return
				}
				if o-start >= r.n {
					if _, _, st := r.Read(o - r.n); st != Gone {
						t.Errorf("%s: offset %d, dropped, reads status %d", what, o-r.n, st)
						return
					}
				}
				if next := nextChunkFirst(r, o, s); next > o {
					if s2, _, st := r.Pin(next); st != NotYet {
						t.Errorf("%s: offset %d, of the next chunk, pins with status %d", what, next, st)
						if st == OK {
							r.Unpin(s2)
						}
						return
					}
				}
				if s&r.last == 0 {
					x := r.chunks[s>>r.shift].word.Load()
					if x != chunkName(o)<<slotShift {
						t.Errorf("%s: the chunk entered at %d has word %#x, want %#x", what, o, x, chunkName(o)<<slotShift)
					}
					if o&nameMask == nameMask {
						top++
						if x != 1<<63 {
							t.Errorf("%s: chunk of %d, named 2^47, has word %#x", what, o, x)
						}
					}
				}
			}
			if r.last == 0 && b&nameMask == 0 && top == 0 {
				t.Errorf("cap %d, bound %d: no chunk named 2^47", count, b)
			}
		}
	}
}

// CopyInto at every bound, with the copied range before, across and
// after it, and its first offset anywhere in the new ring's chunk: what it
// copies reads back right from both rings, and the writer then goes on in
// the new ring, lapping it twice, every value kept reading right and
// the dropped gone (as in the broker's appendLocked: l.slot = n.Index(o)).
func TestRingCopyIntoAcrossNameWraps(t *testing.T) {
	t.Parallel()
	for _, g := range sweep([]struct{ from, to int }{{8, 16}, {8, 9}, {16, 32}, {17, 34}, {100, 200}, {100, 150}, {512, 1000}, {1000, 2000}}) {
		// The bounds where names wrap (2^47, 2^48, 2^63) and the end of
		// uint64; the others of nameBounds add time under -race, not cases.
		for _, b := range sweep([]uint64{1 << 47, 1 << 48, 1 << 63, math.MaxUint64 - 8000}) {
			for _, delta := range sweep([]int64{-int64(g.from) - 1, -int64(g.from) / 2, 0, 1, int64(g.from)/2 + 3, int64(g.from) + 5}) {
				r := New[uint64](g.from)
				to := b + uint64(delta)
				w := newTrackingWriter(r, chunkStart(r, to-uint64(g.from)-r.n))
				for w.o != to {
					w.write()
				}
				from := to - uint64(r.cap)
				n := New[uint64](g.to)
				r.CopyInto(n, from, to)
				what := fmt.Sprintf("grown from %d to %d, %d to %d copied", g.from, g.to, from, to)
				// Each chunk CopyInto names, by name: a word that
				// pinSlow only found equal modulo 2^47 (first+1, say)
				// would read right, on the slow path.
				for o := from; o < to; o++ {
					if d := n.Index(o); o == from || d&n.last == 0 {
						if x, want := n.chunks[d>>n.shift].word.Load(), chunkName(o-d&n.last)<<slotShift; x != want {
							t.Errorf("%s: the chunk of offset %d has word %#x, want %#x", what, o, x, want)
						}
					}
				}
				if !checkKept(t, what+" (old ring)", r, from, to-1, true) || !checkKept(t, what, n, from, to-1, true) {
					continue
				}
				nw := &trackingWriter{r: n, o: to, s: n.Index(to)}
				for range 2 * n.n {
					o, s := nw.write()
					lo := max(from, o-min(uint64(n.cap)-1, o))
					if !checkKept(t, fmt.Sprintf("%s, then tail %d", what, o+1), n, lo, o, g.to <= 200 || o%37 == 0) {
						break
					}
					if o-n.n >= from && o-n.n < o {
						if _, _, st := n.Read(o - n.n); st != Gone {
							t.Errorf("%s, then tail %d: offset %d, dropped, reads status %d", what, o+1, o-n.n, st)
							break
						}
					}
					if next := nextChunkFirst(n, o, s); next > o {
						if s2, _, st := n.Pin(next); st != NotYet {
							t.Errorf("%s, then tail %d: offset %d, of the next chunk, pins with status %d", what, o+1, next, st)
							if st == OK {
								n.Unpin(s2)
							}
							break
						}
					}
				}
			}
		}
	}
}

// pinReader reads a ring concurrently with its writer, as Broker.Read and
// followers do: it loads the tail, then the ring, pins an offset the log
// keeps and copies the run below the tail. It returns false once it has
// reported an error. keep is what the log keeps, lo the first offset
// written, tail and ring what the reader loads.
func pinReader(t *testing.T, k uint64, keep uint64, lo uint64, tail func() uint64, ring func() *Ring[uint64], reads, gone *atomic.Uint64) bool {
	tl := tail()
	if tl <= lo {
		return true
	}
	r := ring()
	back := k % (keep + 2)
	o := tl - 1 - min(back, tl-1-lo)
	if h := tl - min(tl-lo, keep); o < h {
		o = h // at most keep below the tail, as head
	}
	s, run, st := r.Pin(o)
	switch st {
	case NotYet:
		t.Errorf("offset %d below tail %d (ring of %d slots) not yet written", o, tl, r.n)
		return false
	case Gone:
		if now := tail(); o+keep >= now {
			t.Errorf("offset %d gone at tail %d, with %d kept", o, now, keep)
			return false
		}
		gone.Add(1)
		return true
	}
	for j := uint64(0); j < run && o+j < tl; j++ {
		if c := r.cells[s+j]; c.Value != o+j || c.Nanos != int64(o+j) {
			t.Errorf("slot of offset %d holds %d (time %d)", o+j, c.Value, c.Nanos)
			r.Unpin(s)
			return false
		}
	}
	r.Unpin(s)
	reads.Add(1)
	return true
}

// One writer goroutine writes a ring across each bound, up to 2^63
// and the end of uint64 too (the ring alone: a log's tail stops at 2^62),
// while three readers pin and copy runs of what it keeps: no wrong value,
// no race, nothing kept gone or not yet.
func TestRingConcurrentReadersAcrossNameWraps(t *testing.T) {
	t.Parallel()
	for _, count := range []int{1, 8, 17, 100, 1000} {
		for _, b := range append(nameBounds, math.MaxUint64-1) {
			t.Run(fmt.Sprintf("count=%d/bound=%#x", count, b), func(t *testing.T) {
				r := New[uint64](count)
				total := uint64(max(3000, 4*count))
				start := chunkStart(r, b-total/2)
				if b == math.MaxUint64-1 {
					start = chunkStart(r, b-total) // the last tail: the end of uint64
				}
				var tail atomic.Uint64 // the next offset, published after its write
				tail.Store(start)
				var done atomic.Bool
				var reads, gone atomic.Uint64
				var wg sync.WaitGroup
				for i := range 3 {
					wg.Go(func() {
						for k := uint64(i); !done.Load(); k++ {
							if !pinReader(t, k, uint64(count), start, tail.Load, func() *Ring[uint64] { return r }, &reads, &gone) {
								return
							}
						}
					})
				}
				w := newTrackingWriter(r, start)
				for i := range total {
					w.write()
					tail.Store(w.o)
					for i%16 == 0 && reads.Load()+gone.Load() < i/16 && !t.Failed() {
						runtime.Gosched()
					}
				}
				done.Store(true)
				wg.Wait()
				if reads.Load() == 0 {
					t.Errorf("no reads")
				}
			})
		}
	}
}

// The comment's bound: a reader loads the tail, then stalls while
// the writer appends stall more values (the ring left as they leave it),
// then pins the offset it meant to read, the last below the tail it loaded.
// Below 2^46 it is gone, as it should be. Past the bound the test only logs
// what the reader finds: at 2^46 not yet (which Read and followers treat as
// gone), and at 2^47, in a ring of 1024 slots, whose size divides 2^47, a
// value of another offset, 2^47 later, as if it were its own.
func TestRingStalledReaderFindsItsOffsetGone(t *testing.T) {
	t.Parallel()
	for _, count := range []int{8, 960, 1000} {
		for _, stall := range []uint64{2 * 1064, 1 << 20, 1<<46 - 2*1064, 1 << 46, 1 << 47, 1 << 48} {
			r := New[uint64](count)
			w := newTrackingWriter(r, chunkStart(r, 1<<40))
			for range 2 * r.n {
				w.write()
			}
			tail := w.o
			o := tail - 1 // kept, at tail: the reader's offset
			w = newTrackingWriter(r, chunkStart(r, tail+stall-2*r.n))
			for w.o != tail+stall {
				w.write()
			}
			v, _, st := r.Read(o)
			what := fmt.Sprintf("cap %d (%d slots): offset %d, read after %d more were appended", count, r.n, o, stall)
			switch {
			case stall < 1<<46-r.n:
				if st != Gone {
					t.Errorf("%s: status %d (value %d), want gone", what, st, v)
				}
			case st == OK && v != o:
				t.Logf("past the bound: %s: reads the value of offset %d", what, v)
			default:
				t.Logf("past the bound: %s: status %d", what, st)
			}
		}
	}
}
