package topic

// Tests of a log's ring across the offsets where a chunk's name wraps
// (see the ring's name, in internal/ring, whose own tests of names are
// beside it): a log whose offsets start just below a bound grows its ring
// across it, and a broker's log is read across it. Every value is its
// offset.

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic/internal/ring"
)

// writeRing is the writer's step of a ring's append, as appendLocked takes
// it: enter the chunk at its first slot, then put v in slot s.
func writeRing[T any](r *ring.Ring[T], o, s uint64, nanos int64, v T) {
	if s&r.Mask() == 0 {
		r.Enter(o, s)
	}
	r.Put(s, nanos, v)
}

// pinReader reads a ring concurrently with its writer, as Broker.Read and
// followers do: it loads the tail, then the ring, pins an offset the log
// keeps and copies the run below the tail. It returns false once it has
// reported an error. keep is what the log keeps, lo the first offset
// written, tail and load what the reader loads.
func pinReader(t *testing.T, k uint64, keep uint64, lo uint64, tail func() uint64, load func() *ring.Ring[uint64], reads, gone *atomic.Uint64) bool {
	tl := tail()
	if tl <= lo {
		return true
	}
	r := load()
	back := k % (keep + 2)
	o := tl - 1 - min(back, tl-1-lo)
	if h := tl - min(tl-lo, keep); o < h {
		o = h // at most keep below the tail, as head
	}
	s, run, st := r.Pin(o)
	switch st {
	case ring.NotYet:
		t.Errorf("offset %d below tail %d (ring of %d slots) not yet written", o, tl, r.Size())
		return false
	case ring.Gone:
		if now := tail(); o+keep >= now {
			t.Errorf("offset %d gone at tail %d, with %d kept", o, now, keep)
			return false
		}
		gone.Add(1)
		return true
	}
	for j := uint64(0); j < run && o+j < tl; j++ {
		if c := r.Cell(s + j); c.Value != o+j || c.Nanos != int64(o+j) {
			t.Errorf("slot of offset %d holds %d (time %d)", o+j, c.Value, c.Nanos)
			r.Unpin(s)
			return false
		}
	}
	r.Unpin(s)
	reads.Add(1)
	return true
}

// appendFrom is appendLocked, without times or an age bound, for a log
// that started at offset base (whose aged is base, so that its head is never
// below it): the ring grows when it holds all it can of what was appended
// from base on, as appendLocked's grows at o >= r.Cap() from 0. That is the
// one change to appendLocked: a log's ring grows only in its first Count
// offsets, never near 2^47, so this moves those first offsets there.
func appendFrom(l *logOf[uint64], base uint64) uint64 {
	o := l.mu.next
	r := l.ring.Load()
	if r.Cap() < l.limit.Count && o-base >= uint64(r.Cap()) {
		n := ring.New[uint64](min(2*r.Cap(), l.limit.Count))
		r.CopyInto(n, o-uint64(r.Cap()), o)
		l.ring.Store(n) // before any write in it: see logOf
		r = n
		l.slot = n.Index(o)
	}
	writeRing(r, o, l.slot, int64(o), o)
	l.slot = r.Next(l.slot)
	l.mu.next = o + 1
	return o
}

// logFrom returns an internal log of uint64 whose first offset is base.
func logFrom(count int, base uint64) *logOf[uint64] {
	l := newLog[uint64](Retention{Count: count, NoTime: true}, nil)
	l.mu.w.Store(base << seqShift)
	l.slot = l.ring.Load().Index(base) // its chunks are of one slot: a first one
	l.aged.Store(base)
	return l
}

// An internal log whose offsets start just below a bound grows its
// ring across it (CopyInto at every size, its first offset anywhere in a
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
					if r := l.ring.Load(); r.Cap() != count {
						t.Errorf("ring of %d values at the end, want %d", r.Cap(), count)
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
// bound (its ring full, as a log's is there: Index(start) is 0) is
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
				r := ring.New[wrapVal](count)
				total := uint64(roundsFor(max(3000, 6*count), max(600, 2*count)))
				start := b - total/2
				if b == 1<<62-1 {
					start = b - total - uint64(count) // its last tail is 2^62-1
				}
				start -= start % r.Size()
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
