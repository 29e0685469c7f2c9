package topic

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRingReadersNeverSeeAWrongValue has one writer append offsets through
// a log (its ring growing, then wrapping, chunk by chunk) while readers pin
// chunks and copy runs from anywhere in what the log keeps, as followers,
// Read and replays do. Each value is its offset, so a copy that overlapped
// a write, or a chunk word naming the wrong values, shows as a value that
// is not its offset (and as a data race under -race); a value reported gone
// must be one retention has dropped.
func TestRingReadersNeverSeeAWrongValue(t *testing.T) {
	t.Parallel()
	for _, count := range []int{1, 2, 7, 8, 15, 16, 17, 100, 512, 1000, 1024} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			t.Parallel()
			l := newLog[uint64](Retention{Count: count, NoTime: true}, nil)
			total := uint64(20 * count)
			if total < 5000 {
				total = 5000
			}
			var done atomic.Bool
			var wg sync.WaitGroup
			var reads, gone atomic.Uint64
			for i := range 3 {
				wg.Go(func() {
					for k := uint64(i); !done.Load(); k++ {
						tail := l.mu.tail()
						if tail == 0 {
							continue
						}
						r := l.ring.Load() // after tail: see logOf
						back := k % (uint64(count) + 2)
						o := tail - 1 - min(back, tail-1)
						s, run, st := r.pin(o)
						switch st {
						case readNotYet:
							t.Errorf("offset %d below tail %d not yet written", o, tail)
							return
						case readGone:
							if now := l.mu.tail(); o+uint64(count) >= now {
								t.Errorf("offset %d gone at tail %d, with %d kept", o, now, count)
								return
							}
							gone.Add(1)
							continue
						}
						for j := uint64(0); j < run && o+j < tail; j++ {
							if c := r.cells[s+j]; c.v != o+j || c.nanos != int64(o+j) {
								t.Errorf("slot of offset %d holds %d (time %d)", o+j, c.v, c.nanos)
							}
						}
						r.unpin(s)
						reads.Add(1)
					}
				})
			}
			for o := range total {
				l.mu.Lock()
				if got, _ := l.appendLocked(o, int64(o)); got != o {
					t.Fatalf("appended at %d, want %d", got, o)
				}
				// The oldest value kept is still there.
				if h := l.head(o + 1); true {
					r := l.ring.Load()
					if s, _, st := r.pin(h); st != readOK {
						t.Fatalf("at tail %d, the oldest kept, %d, reads %d", o+1, h, st)
					} else {
						r.unpin(s)
					}
				}
				l.mu.Unlock()
				// Let the readers keep up, so that they read while it
				// writes, at every size.
				for o%16 == 0 && reads.Load()+gone.Load() < o/16 {
					runtime.Gosched()
				}
			}
			done.Store(true)
			wg.Wait()
			if reads.Load() == 0 {
				t.Errorf("no reads")
			}
			// What the log keeps reads back whole, in order, as a replay does.
			l.mu.Lock()
			defer l.mu.Unlock()
			want := total - min(total, uint64(count))
			l.eachLocked(want, total, func(o uint64, nanos int64, v uint64) {
				if o != want || v != o || nanos != int64(o) {
					t.Errorf("replay: offset %d value %d time %d, want %d", o, v, nanos, want)
				}
				want++
			})
			if want != total {
				t.Errorf("replay ended at %d, want %d", want, total)
			}
			t.Logf("%d reads, %d gone", reads.Load(), gone.Load())
		})
	}
}

// TestRingChunks checks the ring's shape: chunks of a power of two up to 64
// values, at most an eighth of its capacity, and a spare chunk.
func TestRingChunks(t *testing.T) {
	for _, tc := range []struct{ cap, chunk int }{
		{1, 1}, {8, 1}, {15, 1}, {16, 2}, {100, 8}, {511, 32}, {512, 64}, {1000, 64}, {1 << 16, 64},
	} {
		r := newRing[int](tc.cap)
		if got := int(r.last + 1); got != tc.chunk {
			t.Errorf("cap %d: chunk %d, want %d", tc.cap, got, tc.chunk)
		}
		if got := len(r.cells); got != tc.cap+tc.chunk {
			t.Errorf("cap %d: %d slots, want %d", tc.cap, got, tc.cap+tc.chunk)
		}
		if got, want := len(r.chunks), (tc.cap+2*tc.chunk-1)/tc.chunk; got != want {
			t.Errorf("cap %d: %d chunks, want %d", tc.cap, got, want)
		}
	}
}
