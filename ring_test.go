package topic

// Tests of a log's writer on the chunked ring (internal/ring):
// appendLocked and trimLocked, with readers pinning chunks as followers,
// Read and replays do, and the spare chunk. Every value is its offset, so
// a copy from the wrong slot, or a slot written while copied, shows as a
// value that is not its offset (or as a race under -race). The ring's own
// tests are beside it.

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic/internal/ring"
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
						s, run, st := r.Pin(o)
						switch st {
						case ring.NotYet:
							t.Errorf("offset %d below tail %d not yet written", o, tail)
							return
						case ring.Gone:
							if now := l.mu.tail(); o+uint64(count) >= now {
								t.Errorf("offset %d gone at tail %d, with %d kept", o, now, count)
								return
							}
							gone.Add(1)
							continue
						}
						for j := uint64(0); j < run && o+j < tail; j++ {
							if c := r.Cell(s + j); c.Value != o+j || c.Nanos != int64(o+j) {
								t.Errorf("slot of offset %d holds %d (time %d)", o+j, c.Value, c.Nanos)
							}
						}
						r.Unpin(s)
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
					if s, _, st := r.Pin(h); st != ring.OK {
						t.Fatalf("at tail %d, the oldest kept, %d, reads %d", o+1, h, st)
					} else {
						r.Unpin(s)
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

var ringCounts = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
	63, 64, 65, 100, 127, 128, 129, 511, 512, 513, 1000}

// sweep returns xs whole, or, under the race detector, three of them: the
// first, the middle one and the last. It is for the parameters of tests
// that run on one goroutine, where the race detector has nothing to find
// and only makes each case ten times slower: make stress runs them whole,
// without it.
func sweep[T any](xs []T) []T {
	if !raceEnabled || len(xs) <= 3 {
		return xs
	}
	return []T{xs[0], xs[len(xs)/2], xs[len(xs)-1]}
}

// ageBase is the synthetic time of offset 0 in the internal Age tests: far
// past the real clock the readers read (l.stamp), so that no reader finds a
// value expired by its own clock; only trimLocked, given the synthetic time
// of each append, trims.
const ageBase = int64(1) << 40

// modelLog is an internal log of uint64 with a model of what it must keep.
type modelLog struct {
	t     testing.TB
	l     *logOf[uint64]
	count uint64
	age   int64
	times []int64 // the synthetic time of each offset
	aged  uint64  // the model of l.aged
}

func newModelLog(t testing.TB, count int, age int64) *modelLog {
	ret := Retention{Count: count, NoTime: age == 0}
	ret.Age = time.Duration(age)
	return &modelLog{t: t, l: newLog[uint64](ret, nil), count: uint64(count), age: age}
}

// head is the model's oldest offset kept at tail.
func (m *modelLog) head(tail uint64) uint64 {
	h := uint64(0)
	if tail > m.count {
		h = tail - m.count
	}
	return max(h, min(m.aged, tail))
}

// append appends the next offset at time nanos (in the model too), with mu
// held, as publish does.
func (m *modelLog) append(nanos int64) uint64 {
	o := uint64(len(m.times))
	if len(m.times) > 0 {
		nanos = max(nanos, m.times[len(m.times)-1])
	}
	if m.age > 0 {
		// trimLocked's rule, by offsets rather than slots.
		oldest := nanos - m.age
		a := max(m.aged, m.head(o))
		for a < o && m.times[a] < oldest {
			a++
		}
		m.aged = max(m.aged, a)
	}
	m.times = append(m.times, nanos)
	m.l.mu.Lock()
	got, _ := m.l.appendLocked(o, nanos)
	m.l.mu.Unlock()
	if got != o {
		m.t.Fatalf("appended at %d, want %d", got, o)
	}
	return o
}

// check checks the whole ring against the model, with mu held: the writer's
// slot, aged, every offset kept reads back right under a pin with its run,
// what the ring still holds past retention reads right or gone, what it
// cannot hold reads gone, and no chunk counts a reader.
func (m *modelLog) check(what string) {
	t, l := m.t, m.l
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	tail := l.mu.tail()
	r := l.ring.Load()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: count %d, tail %d, ring cap %d n %d chunk %d: %s", what, m.count, tail, r.Cap(), r.Size(), r.Mask()+1, fmt.Sprintf(format, args...))
	}
	if tail != uint64(len(m.times)) {
		fail("tail, want %d", len(m.times))
	}
	if l.slot != r.Index(tail) {
		fail("writer's slot %d, want %d", l.slot, r.Index(tail))
	}
	if a := l.aged.Load(); a != m.aged {
		fail("aged %d, want %d", a, m.aged)
	}
	if h := l.head(tail); h != m.head(tail) {
		fail("head %d, want %d", h, m.head(tail))
	}
	if want := min(m.count, max(uint64(min(8, int(m.count))), tail)); uint64(r.Cap()) < want && tail > 0 {
		fail("ring keeps %d, fewer than the %d it must", r.Cap(), want)
	}
	read := func(o uint64, mustOK bool) {
		t.Helper()
		s, run, st := r.Pin(o)
		if st != ring.OK {
			if mustOK {
				fail("offset %d kept, reads status %d", o, st)
			}
			return
		}
		if s != r.Index(o) {
			fail("offset %d pinned at slot %d, want %d", o, s, r.Index(o))
		}
		if want := min(r.Size(), s|r.Mask()+1) - s; run != want {
			fail("offset %d: run %d, want %d", o, run, want)
		}
		for j := uint64(0); j < run && o+j < tail; j++ {
			if c := r.Cell(s + j); c.Value != o+j || (m.age > 0 && c.Nanos != m.times[o+j]) {
				fail("offset %d (run of %d from %d) holds %d, time %d", o+j, run, o, c.Value, c.Nanos)
			}
		}
		r.Unpin(s)
	}
	head := m.head(tail)
	for o := head; o < tail; o++ {
		read(o, true)
	}
	lo := tail - min(tail, r.Size())
	for o := lo; o < head; o++ {
		read(o, false)
	}
	for o := lo - min(lo, r.Mask()+1); o < lo; o++ {
		if _, _, st := r.Pin(o); st != ring.Gone {
			fail("offset %d, a lap behind, reads status %d, want gone", o, st)
		}
	}
	if n := r.Readers(); n != 0 {
		fail("the chunks count %d readers", n)
	}
	// A replay's copy: eachLocked from head reads the kept values whole.
	want := head
	l.eachLocked(head, tail, func(o uint64, nanos int64, v uint64) {
		if o != want || v != o {
			fail("eachLocked: offset %d value %d, want %d", o, v, want)
		}
		want++
	})
	if want != tail {
		fail("eachLocked ended at %d", want)
	}
}

// After every append, at every ring size and wrap, the whole ring
// matches the model (count-only and with an age bound whose trims use the
// writer's slot arithmetic).
func TestRingMatchesItsModelAfterEveryAppend(t *testing.T) {
	t.Parallel()
	for _, count := range sweep(ringCounts) {
		for _, age := range []int64{0, 5, 37} {
			t.Run(fmt.Sprintf("count=%d/age=%d", count, age), func(t *testing.T) {
				m := newModelLog(t, count, age)
				rng := rand.New(rand.NewPCG(uint64(count), uint64(age)))
				total := 3*count + 150
				nanos := ageBase
				for i := range total {
					// Times with runs of equal times and jumps of over the age.
					switch k := rng.IntN(10); {
					case k < 5:
					case k < 9:
						nanos += int64(rng.IntN(4))
					default:
						nanos += age + int64(rng.IntN(3))
					}
					m.append(nanos)
					// Under the race detector, which finds nothing on one
					// goroutine, a large ring is checked where it wraps.
					if count <= 129 || i < 40 || i%7 == 0 && !raceEnabled || i%count < 3 || i%count > count-3 {
						m.check(fmt.Sprint("after append ", i))
					}
				}
				m.check("at the end")
			})
		}
	}
}

// A reader pinned on the oldest value kept holds up the writer when
// it comes round to that chunk again, and no sooner than the spare chunk
// allows: while pinned, the pinned run keeps its values (a write into it is
// a race under -race), and the tail stops where the writer must enter the
// pinned chunk; once unpinned, the writer carries on.
func TestRingPinnedReaderHoldsTheWriter(t *testing.T) {
	for _, count := range []int{1, 2, 3, 16, 100, 513} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			m := newModelLog(t, count, 0)
			for range 3*count + 5 {
				m.append(0)
			}
			l := m.l
			tail := l.mu.tail()
			r := l.ring.Load()
			h := l.head(tail)
			s, run, st := r.Pin(h)
			if st != ring.OK {
				t.Fatalf("head %d reads %d", h, st)
			}
			first := h - s&r.Mask() // the pinned chunk's first offset
			var wg sync.WaitGroup
			var wrote atomic.Uint64
			wg.Go(func() {
				for o := tail; o < tail+3*r.Size(); o++ {
					l.mu.Lock()
					l.appendLocked(o, 0)
					l.mu.Unlock()
					wrote.Store(o + 1)
				}
			})
			for i := 0; i < 3000 && wrote.Load() < first+r.Size(); i++ {
				runtime.Gosched()
			}
			for range 200 {
				for j := range run {
					if o := h + j; o < tail {
						if v := r.Cell(s + j).Value; v != o {
							t.Fatalf("pinned offset %d holds %d", o, v)
						}
					}
				}
				if got := l.mu.tail(); got > first+r.Size() {
					t.Fatalf("tail %d past %d with the chunk of %d (from %d) pinned", got, first+r.Size(), h, first)
				}
				runtime.Gosched()
			}
			r.Unpin(s)
			wg.Wait()
			m.times = m.times[:0]
			for range l.mu.tail() {
				m.times = append(m.times, 0)
			}
			m.check("after unpinning")
		})
	}
}

// A reader pinned on a ring the log has since outgrown does not
// hold up the writer, and its values stay put while the writer laps the new
// ring twice.
func TestRingPinnedOldRingDoesNotHoldTheWriter(t *testing.T) {
	for _, count := range []int{9, 16, 17, 65, 1000} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			m := newModelLog(t, count, 0)
			for range 8 {
				m.append(0)
			}
			r := m.l.ring.Load()
			s, run, st := r.Pin(0)
			if st != ring.OK || r.Cap() != 8 {
				t.Fatalf("pin(0) in a ring of %d: %d", r.Cap(), st)
			}
			for range 2*count + 200 {
				m.append(0)
			}
			for j := range run {
				if v := r.Cell(s + j).Value; v != j {
					t.Fatalf("old ring: offset %d holds %d", j, v)
				}
			}
			r.Unpin(s)
			if m.l.ring.Load() == r {
				t.Fatalf("the ring did not grow")
			}
			m.check("after laps of the new ring")
		})
	}
}

// The spare chunk. Readers pinned on every value kept (as readers
// that loaded the current tail may be) never hold up the next append: the
// chunk it enters holds only values retention has dropped. A writer that
// had to wait would wait forever here, as the pins are the caller's; the
// timer only turns that deadlock into a failure.
func TestRingPinnedKeptValuesNeverBlockTheNextAppend(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	var failed atomic.Value
	var at atomic.Value
	logs := make([]*modelLog, len(sweep(ringCounts)))
	go func() {
		defer close(done)
		for i, count := range sweep(ringCounts) {
			m := newModelLog(t, count, 0)
			logs[i] = m
			l := m.l
			for range 3*count + 70 {
				tail := l.mu.tail()
				at.Store(fmt.Sprintf("count %d, tail %d", count, tail))
				r := l.ring.Load()
				var pinned []uint64
				for o := l.head(tail); o < tail; o++ {
					s, _, st := r.Pin(o)
					if st != ring.OK {
						failed.Store(fmt.Sprintf("count %d, tail %d: kept offset %d reads %d", count, tail, o, st))
						return
					}
					pinned = append(pinned, s)
				}
				m.append(0)
				for _, s := range pinned {
					r.Unpin(s)
				}
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("an append waited for readers of values kept (%v)", at.Load())
	}
	if f := failed.Load(); f != nil {
		t.Fatal(f)
	}
	for _, m := range logs {
		m.check("at the end")
	}
}
