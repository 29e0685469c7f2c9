package topic

// Tests of a chunk's name: the name of the offset a chunk's first slot
// holds is its low 47 bits plus one, and pinSlow orders names by their
// difference sign-extended from 47 bits. Every value is its offset (and its
// time too, where there is one), so a copy from the wrong chunk, or of a
// slot being written, shows as a value that is not its offset (or as a race
// under -race). The offsets are around where names wrap (multiples of
// 2^47), where a name of first+1 in 48 bits would overflow (2^48), at the
// end of a log's 62-bit tail, and, for the ring alone, at 2^63 and the end
// of uint64.

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// write is the writer's step of a ring's append, as appendLocked takes it:
// enter the chunk at its first slot, then put v in slot s.
func (r *ring[T]) write(o, s uint64, nanos int64, v T) {
	if s&r.last == 0 {
		r.enter(o, s)
	}
	r.put(s, nanos, v)
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

// chunkStart returns the offset at or below near whose slot is the first of
// its chunk, where a writer starts (see ring's invariant).
func chunkStart(r *ring[uint64], near uint64) uint64 { return near - r.index(near)&r.last }

// trackingWriter writes a ring as a log's writer does, each value its offset, and
// keeps track of the slot (appendLocked's l.slot) rather than dividing.
type trackingWriter struct {
	r    *ring[uint64]
	o, s uint64 // the offset written next and its slot
}

func newTrackingWriter(r *ring[uint64], start uint64) *trackingWriter {
	return &trackingWriter{r: r, o: start, s: r.index(start)}
}

// write writes the next offset and returns it and its slot.
func (w *trackingWriter) write() (o, s uint64) {
	o, s = w.o, w.s
	w.r.write(o, s, int64(o), o)
	w.o, w.s = o+1, w.r.next(s)
	return o, s
}

// nextChunkFirst returns the first offset of the chunk after that of offset o,
// in slot s.
func nextChunkFirst(r *ring[uint64], o, s uint64) uint64 { return o + min(r.n, s|r.last+1) - s }

// checkKept reads offsets lo to hi back from r: each must pin, and be its
// offset. With every false, it reads the ends and each chunk's first and
// last offsets only.
func checkKept(t *testing.T, what string, r *ring[uint64], lo, hi uint64, every bool) bool {
	t.Helper()
	for k := lo; ; k++ {
		if s := r.index(k); every || k-lo < 2 || hi-k < 2 || s&r.last == 0 || s&r.last == r.last || s == r.n-1 {
			if v, nanos, st := r.read(k); st != readOK || v != k || nanos != int64(k) {
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
		r := newRing[uint64](count)
		n := int64(r.n)
		offsets := []uint64{0, 1, 2, r.n, math.MaxUint64, math.MaxUint64 - r.n}
		for _, b := range nameBounds {
			offsets = append(offsets, b-r.n-1, b-2, b-1, b, b+1, b+r.n)
		}
		for _, o := range offsets {
			s := r.index(o)
			first := o - s&r.last
			w := &r.chunks[s>>r.shift].word
			what := func(D int64, readers uint64) string {
				return fmt.Sprintf("cap %d, offset %d (chunk %d), word naming %+d from it, %d readers", count, o, first, D, readers)
			}
			for _, readers := range []uint64{0, 5} {
				w.Store(readers)
				if s2, _, st := r.pin(o); st != readNotYet {
					t.Errorf("%s: a chunk never entered pins with status %d", what(0, readers), st)
					if st == readOK {
						r.unpin(s2)
					}
				}
				for _, D := range []int64{0, 1, -1, n, -n, 2*n + 1, -2*n - 1, half / 3, -half / 3, half - 1, -(half - 1), -half,
					half, -half - 1, 2*half - 1, 2 * half, -2 * half, 2*half + n, 4 * half, 6 * half} {
					x := chunkName(first+uint64(D))<<slotShift | readers
					w.Store(x)
					in := D > -half && D < half
					var want readStatus
					switch {
					case D > 0:
						want = readGone
					case D < 0:
						want = readNotYet
					}
					_, run, st := r.pin(o)
					if st == readOK {
						if got := w.Load(); got != x+1 {
							t.Errorf("%s: pinned, the word went from %#x to %#x", what(D, readers), x, got)
						}
						if run == 0 || run > r.last+1 || s+run > r.n {
							t.Errorf("%s: pinned a run of %d from slot %d", what(D, readers), run, s)
						}
						r.unpin(s)
					}
					if got := w.Load(); got != x {
						t.Errorf("%s: the word is %#x after the pin, %#x before", what(D, readers), got, x)
					}
					if _, st2 := r.pinSlow(first, s); st2 != st {
						t.Errorf("%s: pinSlow finds status %d, pin %d", what(D, readers), st2, st)
					} else if st2 == readOK {
						r.unpin(s)
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
	for _, count := range nameCounts {
		for _, b := range append(nameBounds, math.MaxUint64) {
			r := newRing[uint64](count)
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
					if _, _, st := r.read(o - r.n); st != readGone {
						t.Errorf("%s: offset %d, dropped, reads status %d", what, o-r.n, st)
						return
					}
				}
				if next := nextChunkFirst(r, o, s); next > o {
					if s2, _, st := r.pin(next); st != readNotYet {
						t.Errorf("%s: offset %d, of the next chunk, pins with status %d", what, next, st)
						if st == readOK {
							r.unpin(s2)
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
// the dropped gone (as in appendLocked: l.slot = n.index(o)).
func TestRingCopyIntoAcrossNameWraps(t *testing.T) {
	t.Parallel()
	for _, g := range []struct{ from, to int }{{8, 16}, {8, 9}, {16, 32}, {17, 34}, {100, 200}, {100, 150}, {512, 1000}, {1000, 2000}} {
		// The bounds where names wrap (2^47, 2^48, 2^63) and the end of
		// uint64; the others of nameBounds add time under -race, not cases.
		for _, b := range []uint64{1 << 47, 1 << 48, 1 << 63, math.MaxUint64 - 8000} {
			for _, delta := range []int64{-int64(g.from) - 1, -int64(g.from) / 2, 0, 1, int64(g.from)/2 + 3, int64(g.from) + 5} {
				r := newRing[uint64](g.from)
				to := b + uint64(delta)
				w := newTrackingWriter(r, chunkStart(r, to-uint64(g.from)-r.n))
				for w.o != to {
					w.write()
				}
				from := to - uint64(r.cap)
				n := newRing[uint64](g.to)
				r.copyInto(n, from, to)
				what := fmt.Sprintf("grown from %d to %d, %d to %d copied", g.from, g.to, from, to)
				// Each chunk copyInto names, by chunkName: a word that
				// pinSlow only found equal modulo 2^47 (first+1, say)
				// would read right, on the slow path.
				for o := from; o < to; o++ {
					if d := n.index(o); o == from || d&n.last == 0 {
						if x, want := n.chunks[d>>n.shift].word.Load(), chunkName(o-d&n.last)<<slotShift; x != want {
							t.Errorf("%s: the chunk of offset %d has word %#x, want %#x", what, o, x, want)
						}
					}
				}
				if !checkKept(t, what+" (old ring)", r, from, to-1, true) || !checkKept(t, what, n, from, to-1, true) {
					continue
				}
				nw := &trackingWriter{r: n, o: to, s: n.index(to)}
				for range 2 * n.n {
					o, s := nw.write()
					lo := max(from, o-min(uint64(n.cap)-1, o))
					if !checkKept(t, fmt.Sprintf("%s, then tail %d", what, o+1), n, lo, o, g.to <= 200 || o%37 == 0) {
						break
					}
					if o-n.n >= from && o-n.n < o {
						if _, _, st := n.read(o - n.n); st != readGone {
							t.Errorf("%s, then tail %d: offset %d, dropped, reads status %d", what, o+1, o-n.n, st)
							break
						}
					}
					if next := nextChunkFirst(n, o, s); next > o {
						if s2, _, st := n.pin(next); st != readNotYet {
							t.Errorf("%s, then tail %d: offset %d, of the next chunk, pins with status %d", what, o+1, next, st)
							if st == readOK {
								n.unpin(s2)
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
func pinReader(t *testing.T, k uint64, keep uint64, lo uint64, tail func() uint64, ring func() *ring[uint64], reads, gone *atomic.Uint64) bool {
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
	s, run, st := r.pin(o)
	switch st {
	case readNotYet:
		t.Errorf("offset %d below tail %d (ring of %d slots) not yet written", o, tl, r.n)
		return false
	case readGone:
		if now := tail(); o+keep >= now {
			t.Errorf("offset %d gone at tail %d, with %d kept", o, now, keep)
			return false
		}
		gone.Add(1)
		return true
	}
	for j := uint64(0); j < run && o+j < tl; j++ {
		if c := r.cells[s+j]; c.v != o+j || c.nanos != int64(o+j) {
			t.Errorf("slot of offset %d holds %d (time %d)", o+j, c.v, c.nanos)
			r.unpin(s)
			return false
		}
	}
	r.unpin(s)
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
				r := newRing[uint64](count)
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
							if !pinReader(t, k, uint64(count), start, tail.Load, func() *ring[uint64] { return r }, &reads, &gone) {
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

// appendFrom is appendLocked, without times or an age bound, for a log
// that started at offset base (whose aged is base, so that its head is never
// below it): the ring grows when it holds all it can of what was appended
// from base on, as appendLocked's grows at o >= r.cap from 0. That is the
// one change to appendLocked: a log's ring grows only in its first Count
// offsets, never near 2^47, so this moves those first offsets there.
func appendFrom(l *logOf[uint64], base uint64) uint64 {
	o := l.mu.next
	r := l.ring.Load()
	if r.cap < l.limit.Count && o-base >= uint64(r.cap) {
		n := newRing[uint64](min(2*r.cap, l.limit.Count))
		r.copyInto(n, o-uint64(r.cap), o)
		l.ring.Store(n) // before any write in it: see logOf
		r = n
		l.slot = n.index(o)
	}
	r.write(o, l.slot, int64(o), o)
	l.slot = r.next(l.slot)
	l.mu.next = o + 1
	return o
}

// logFrom returns an internal log of uint64 whose first offset is base.
func logFrom(count int, base uint64) *logOf[uint64] {
	l := newLog[uint64](Retention{Count: count, NoTime: true}, nil)
	l.mu.w.Store(base << seqShift)
	l.slot = l.ring.Load().index(base) // its chunks are of one slot: a first one
	l.aged.Store(base)
	return l
}

// An internal log whose offsets start just below a bound grows its
// ring across it (copyInto at every size, its first offset anywhere in a
// chunk) while two followers (follower.read, buffers of 1 and 64) and two
// pin readers read: every record is its offset, batches are contiguous,
// what a follower is told skipped is gone by the head, nothing kept is gone
// or not yet, and each follower reaches the tail (none stuck).
func TestLogGrowsAcrossNameWraps(t *testing.T) {
	t.Parallel()
	for _, count := range []int{9, 17, 100, 1000} {
		for _, b := range []uint64{1 << 47, 1 << 48, 1<<62 - 1<<47} {
			for _, below := range []uint64{40, 300} {
				base := b - below
				t.Run(fmt.Sprintf("count=%d/base=%#x", count, base), func(t *testing.T) {
					l := logFrom(count, base)
					total := uint64(max(3000, 6*count))
					var done atomic.Bool
					var wg sync.WaitGroup
					var reads, gone atomic.Uint64
					for _, L := range []int{1, 64} {
						var skipped uint64
						f := newFollower(l, &start{at: Earliest()}, func(first, n uint64) {
							if h := l.head(l.mu.tail()); first+n > h {
								t.Errorf("follower buf %d: told %d to %d skipped, head %d", L, first, first+n-1, h)
							}
							skipped += n
						})
						if p := f.pos.Load(); p != base {
							t.Fatalf("follower starts at %d, want %d", p, base)
						}
						wg.Go(func() {
							buf := make([]Record[uint64], L)
							next, got := base, uint64(0)
							var stuck time.Time
							for {
								fin := done.Load()
								n := f.read(buf)
								for j, rec := range buf[:n] {
									want := next + buf[0].Skipped + uint64(j)
									if rec.Offset != want || rec.Value != rec.Offset || (j > 0 && rec.Skipped != 0) {
										t.Errorf("follower buf %d: record %d of %d is offset %d value %d (skipped %d), want offset %d", L, j, n, rec.Offset, rec.Value, rec.Skipped, want)
										return
									}
								}
								if n > 0 {
									next, got = buf[n-1].Offset+1, got+uint64(n)
									continue
								}
								if fin && next == base+total {
									break
								}
								if fin && stuck.IsZero() {
									stuck = time.Now()
								} else if fin && time.Since(stuck) > 10*time.Second {
									t.Errorf("follower buf %d: stuck at %d (position %d), tail %d", L, next, f.pos.Load(), l.mu.tail())
									return
								}
								runtime.Gosched()
							}
							if got+skipped != total {
								t.Errorf("follower buf %d: read %d, skipped %d, of %d", L, got, skipped, total)
							}
						})
					}
					for i := range 2 {
						wg.Go(func() {
							for k := uint64(i); !done.Load(); k++ {
								if !pinReader(t, k, uint64(count), base, l.mu.tail, l.ring.Load, &reads, &gone) {
									return
								}
							}
						})
					}
					for i := range total {
						l.mu.Lock()
						if o := appendFrom(l, base); o != base+i {
							t.Fatalf("appended at %d, want %d", o, base+i)
						}
						l.mu.Unlock()
						for i%16 == 0 && reads.Load()+gone.Load() < i/16 && !t.Failed() {
							runtime.Gosched()
						}
					}
					done.Store(true)
					wg.Wait()
					if r := l.ring.Load(); r.cap != count {
						t.Errorf("ring of %d values at the end, want %d", r.cap, count)
					}
				})
			}
		}
	}
}

// wrapVal is the retained type of TestLogReadsAcrossNameWraps: its value is its
// offset.
type wrapVal uint64

// Through the public API: a broker's log moved to just below a
// bound (its ring full, as a log's is there: index(start) is 0) is
// published across it by Append while followers (Follow, buffers 1, 7 and
// 64) and Read loops (max 1, 64, MaxInt) read: every record is its offset,
// gaps are told as skipped, nothing kept is told skipped, and every
// follower accounts for every offset. The last bound is the end of a log's
// 62-bit tail.
func TestLogReadsAcrossNameWraps(t *testing.T) {
	t.Parallel()
	for _, count := range []int{1, 8, 64, 1000} {
		for _, b := range []uint64{1 << 47, 1 << 48, 3 << 47, 1<<62 - 1<<47, 1<<62 - 1} {
			t.Run(fmt.Sprintf("count=%d/bound=%#x", count, b), func(t *testing.T) {
				var br Broker
				br.Retain[wrapVal](Retention{Count: count, NoTime: true})
				l := br.logOf[wrapVal]()
				r := newRing[wrapVal](count)
				total := uint64(max(3000, 6*count))
				start := b - total/2
				if b == 1<<62-1 {
					start = b - total - uint64(count) // its last tail is 2^62-1
				}
				start -= start % r.n
				l.ring.Store(r)
				l.mu.w.Store(start << seqShift)
				l.slot = 0
				for i := range uint64(count) { // fill the ring
					if o, ok := br.Append(wrapVal(start + i)); !ok || o != start+i {
						t.Fatalf("Append = %d, %v, want %d", o, ok, start+i)
					}
				}
				first := start + uint64(count)
				var done atomic.Bool
				var wg sync.WaitGroup
				for _, L := range []int{1, 7, 64} {
					f := br.Follow(Replay[wrapVal](Earliest()))
					wg.Go(func() {
						defer f.Close()
						buf := make([]Record[wrapVal], L)
						prev := int64(start) - 1
						var got, skipped uint64
						for {
							fin := done.Load()
							n := f.Read(buf)
							if !checkFollowed(t, fmt.Sprintf("follower buf %d", L), l.mu.tail(), uint64(count), &prev, buf[:n], false) {
								return
							}
							for _, rec := range buf[:n] {
								got++
								skipped += rec.Skipped
							}
							if n == 0 {
								if fin {
									break
								}
								runtime.Gosched()
							}
						}
						if got+skipped != first+total-start || f.Offset() != first+total {
							t.Errorf("follower buf %d: read %d, skipped %d, at %d; want %d in all, at %d", L, got, skipped, f.Offset(), first+total-start, first+total)
						}
					})
				}
				for _, max := range []int{1, 64, math.MaxInt} {
					wg.Go(func() {
						from := start
						for !done.Load() {
							recs, next, skipped := br.Read[wrapVal](from, max)
							tailAfter := l.mu.tail()
							what := fmt.Sprintf("Read(%d, %d)", from, max)
							if skipped > 0 && from+skipped-1+uint64(count) >= tailAfter {
								t.Errorf("%s: skipped %d, but %d was kept at tail %d", what, skipped, from+skipped-1, tailAfter)
								return
							}
							for j, rec := range recs {
								if rec.Offset != from+skipped+uint64(j) || uint64(rec.Value) != rec.Offset || rec.Skipped != 0 {
									t.Errorf("%s (skipped %d): record %d is offset %d value %d Skipped %d", what, skipped, j, rec.Offset, rec.Value, rec.Skipped)
									return
								}
							}
							if next != from+skipped+uint64(len(recs)) || len(recs) > max {
								t.Errorf("%s: next %d, skipped %d, %d records", what, next, skipped, len(recs))
								return
							}
							from = next
							if len(recs) == 0 {
								runtime.Gosched()
							}
							if from%5 == 0 {
								from-- // read again from below
							}
						}
					})
				}
				for i := range total {
					if o, ok := br.Append(wrapVal(first + i)); !ok || o != first+i {
						t.Fatalf("Append = %d, %v, want %d", o, ok, first+i)
					}
					if i%64 == 0 {
						runtime.Gosched()
					}
				}
				done.Store(true)
				wg.Wait()
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
			r := newRing[uint64](count)
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
			v, _, st := r.read(o)
			what := fmt.Sprintf("cap %d (%d slots): offset %d, read after %d more were appended", count, r.n, o, stall)
			switch {
			case stall < 1<<46-r.n:
				if st != readGone {
					t.Errorf("%s: status %d (value %d), want gone", what, st, v)
				}
			case st == readOK && v != o:
				t.Logf("past the bound: %s: reads the value of offset %d", what, v)
			default:
				t.Logf("past the bound: %s: status %d", what, st)
			}
		}
	}
}
