package topic

// Adversarial tests of the chunked ring (commit d0d22ab): ring.go, retain.go
// (appendLocked, trimLocked, eachLocked, Broker.Read) and follow.go
// (follower.read and its cached slot). Every value is its offset, so a copy
// from the wrong slot, or a slot written while copied, shows as a value that
// is not its offset (or as a race under -race).

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// r11V is the retained type of the public-API attacks: its value is its offset.
type r11V uint64

var r11Counts = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
	63, 64, 65, 100, 127, 128, 129, 511, 512, 513, 1000}

// r11Base is the synthetic time of offset 0 in the internal Age attacks: far
// past the real clock the readers read (l.stamp), so that no reader finds a
// value expired by its own clock; only trimLocked, given the synthetic time
// of each append, trims.
const r11Base = int64(1) << 40

// r11Log is an internal log of uint64 with a model of what it must keep.
type r11Log struct {
	t     testing.TB
	l     *logOf[uint64]
	count uint64
	age   int64
	times []int64 // the synthetic time of each offset
	aged  uint64  // the model of l.aged
}

func newR11Log(t testing.TB, count int, age int64) *r11Log {
	ret := Retention{Count: count, NoTime: age == 0}
	ret.Age = time.Duration(age)
	return &r11Log{t: t, l: newLog[uint64](ret, nil), count: uint64(count), age: age}
}

// head is the model's oldest offset kept at tail.
func (m *r11Log) head(tail uint64) uint64 {
	h := uint64(0)
	if tail > m.count {
		h = tail - m.count
	}
	return max(h, min(m.aged, tail))
}

// append appends the next offset at time nanos (in the model too), with mu
// held, as publish does.
func (m *r11Log) append(nanos int64) uint64 {
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
func (m *r11Log) check(what string) {
	t, l := m.t, m.l
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	tail := l.mu.tail()
	r := l.ring.Load()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: count %d, tail %d, ring cap %d n %d chunk %d: %s", what, m.count, tail, r.cap, r.n, r.last+1, fmt.Sprintf(format, args...))
	}
	if tail != uint64(len(m.times)) {
		fail("tail, want %d", len(m.times))
	}
	if l.slot != r.index(tail) {
		fail("writer's slot %d, want %d", l.slot, r.index(tail))
	}
	if a := l.aged.Load(); a != m.aged {
		fail("aged %d, want %d", a, m.aged)
	}
	if h := l.head(tail); h != m.head(tail) {
		fail("head %d, want %d", h, m.head(tail))
	}
	if want := min(m.count, max(uint64(min(8, int(m.count))), tail)); uint64(r.cap) < want && tail > 0 {
		fail("ring keeps %d, fewer than the %d it must", r.cap, want)
	}
	read := func(o uint64, mustOK bool) {
		t.Helper()
		s, run, st := r.pin(o)
		if st != readOK {
			if mustOK {
				fail("offset %d kept, reads status %d", o, st)
			}
			return
		}
		if s != r.index(o) {
			fail("offset %d pinned at slot %d, want %d", o, s, r.index(o))
		}
		if want := min(r.n, s|r.last+1) - s; run != want {
			fail("offset %d: run %d, want %d", o, run, want)
		}
		for j := uint64(0); j < run && o+j < tail; j++ {
			if c := r.cells[s+j]; c.v != o+j || (m.age > 0 && c.nanos != m.times[o+j]) {
				fail("offset %d (run of %d from %d) holds %d, time %d", o+j, run, o, c.v, c.nanos)
			}
		}
		r.unpin(s)
	}
	head := m.head(tail)
	for o := head; o < tail; o++ {
		read(o, true)
	}
	lo := tail - min(tail, r.n)
	for o := lo; o < head; o++ {
		read(o, false)
	}
	for o := lo - min(lo, r.last+1); o < lo; o++ {
		if _, _, st := r.pin(o); st != readGone {
			fail("offset %d, a lap behind, reads status %d, want gone", o, st)
		}
	}
	for i := range r.chunks {
		if w := r.chunks[i].word.Load(); w&slotReaders != 0 {
			fail("chunk %d counts %d readers", i, w&slotReaders)
		}
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

// Attack: after every append, at every ring size and wrap, the whole ring
// matches the model (count-only and with an age bound whose trims use the
// writer's slot arithmetic).
func TestReview11RingInvariantEveryAppend(t *testing.T) {
	t.Parallel()
	for _, count := range r11Counts {
		for _, age := range []int64{0, 5, 37} {
			t.Run(fmt.Sprintf("count=%d/age=%d", count, age), func(t *testing.T) {
				m := newR11Log(t, count, age)
				rng := rand.New(rand.NewPCG(uint64(count), uint64(age)))
				total := 3*count + 150
				nanos := r11Base
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
					if count <= 129 || i < 40 || i%7 == 0 || i%count < 3 || i%count > count-3 {
						m.check(fmt.Sprint("after append ", i))
					}
				}
				m.check("at the end")
			})
		}
	}
}

// r11FModel is the model of a follower's position and untold skips.
type r11FModel struct{ pos, lastEnd, skipped uint64 }

// Attack: followers (made before the ring grows, with buffers from 1 to
// 200) read, seek backwards and forwards (to their own position, past the
// tail, below the head) and read again while the log grows, wraps and trims
// by age, one step at a time: each read returns exactly the model's
// records, values and Skipped, reports exactly its skips, and leaves the
// cached slot naming the slot of its position.
func TestReview11FollowerMatchesModel(t *testing.T) {
	t.Parallel()
	bufs := []int{1, 2, 3, 7, 8, 9, 63, 64, 65, 200}
	for _, count := range r11Counts {
		for _, age := range []int64{0, 11} {
			t.Run(fmt.Sprintf("count=%d/age=%d", count, age), func(t *testing.T) {
				m := newR11Log(t, count, age)
				rng := rand.New(rand.NewPCG(uint64(count)+7, uint64(age)))
				const nf = 4
				type fol struct {
					f     *follower[uint64]
					model r11FModel
					skips [][2]uint64
				}
				fs := make([]*fol, nf)
				for i := range fs {
					x := &fol{}
					x.f = newFollower(m.l, &start{at: Earliest()}, func(first, n uint64) {
						x.skips = append(x.skips, [2]uint64{first, n})
					})
					fs[i] = x
				}
				nanos := r11Base
				total := 6*count + 300
				for step := 0; len(m.times) < total; step++ {
					switch k := rng.IntN(10); {
					case k < 4: // publish a few
						for range 1 + rng.IntN(2*count+3) {
							if rng.IntN(4) == 0 {
								nanos += 1 + int64(rng.IntN(int(age)+2))
							}
							m.append(nanos)
						}
					case k < 5: // seek one
						x := fs[rng.IntN(nf)]
						tail := uint64(len(m.times))
						var o uint64
						switch rng.IntN(6) {
						case 0:
							o = x.model.lastEnd
						case 1:
							o = tail + uint64(rng.IntN(5))
						case 5: // far past the tail: past the slots of this ring
							o = tail + uint64(rng.IntN(3*count+40))
						case 2:
							o = uint64(rng.IntN(int(tail) + 1))
						default:
							o = m.head(tail) + uint64(rng.IntN(3)) - min(m.head(tail), 2)
						}
						x.f.seek(o)
						x.model.pos = o
					default: // read one
						i := rng.IntN(nf)
						x := fs[i]
						L := bufs[rng.IntN(len(bufs))]
						tail := uint64(len(m.times))
						head := m.head(tail)
						// The model of follower.read.
						mo := &x.model
						from := mo.pos
						if from != mo.lastEnd {
							mo.skipped = 0
						}
						o, sk := from, uint64(0)
						if o < head {
							sk, o = head-o, head
						}
						k := uint64(0)
						if o < tail {
							k = min(uint64(L), tail-o)
						}
						wantSkip := mo.skipped + sk
						buf := make([]Record[uint64], L)
						x.skips = x.skips[:0]
						n := x.f.read(buf)
						what := fmt.Sprintf("step %d follower %d read %d from %d (head %d tail %d)", step, i, L, from, head, tail)
						if uint64(n) != k {
							t.Fatalf("%s: read %d, want %d", what, n, k)
						}
						for j := range n {
							rec := buf[j]
							if rec.Offset != o+uint64(j) || rec.Value != rec.Offset {
								t.Fatalf("%s: record %d is offset %d value %d, want %d", what, j, rec.Offset, rec.Value, o+uint64(j))
							}
							want := uint64(0)
							if j == 0 {
								want = wantSkip
							}
							if rec.Skipped != want {
								t.Fatalf("%s: record %d (offset %d) Skipped %d, want %d", what, j, rec.Offset, rec.Skipped, want)
							}
						}
						if sk > 0 {
							if len(x.skips) != 1 || x.skips[0] != [2]uint64{from, sk} {
								t.Fatalf("%s: skip reports %v, want [%d %d]", what, x.skips, from, sk)
							}
						} else if len(x.skips) != 0 {
							t.Fatalf("%s: skip reports %v, want none", what, x.skips)
						}
						mo.pos = o + k
						mo.lastEnd = mo.pos
						mo.skipped = wantSkip
						if k > 0 {
							mo.skipped = 0
						}
						if got := x.f.pos.Load(); got != mo.pos {
							t.Fatalf("%s: position %d, want %d", what, got, mo.pos)
						}
						r := m.l.ring.Load()
						if x.f.size == r.n && x.f.slot != r.index(x.f.lastEnd) {
							t.Fatalf("%s: cached slot %d of %d in a ring of %d, want %d", what, x.f.slot, x.f.lastEnd, r.n, r.index(x.f.lastEnd))
						}
					}
				}
				m.check("at the end")
			})
		}
	}
}

// r11Tail returns the tail of T's log, loaded after whatever came before.
func r11Tail(b *Broker) uint64 { return b.logOf[r11V]().mu.tail() }

// r11CheckFollowed checks a batch a follower of b read (see checkFollowed).
func r11CheckFollowed(t *testing.T, what string, b *Broker, count uint64, prev *int64, recs []Record[r11V], seeks bool) bool {
	t.Helper()
	return checkFollowed(t, what, r11Tail(b), count, prev, recs, seeks)
}

// checkFollowed checks a batch a follower read: contiguous, values their
// offsets, the gap from the previous record the first one's Skipped (unless
// seeks moved it), and what it skipped gone by tailAfter, the tail loaded
// after the read (no spurious skip).
func checkFollowed[V ~uint64](t *testing.T, what string, tailAfter, count uint64, prev *int64, recs []Record[V], seeks bool) bool {
	t.Helper()
	for j, rec := range recs {
		if uint64(rec.Value) != rec.Offset {
			t.Errorf("%s: offset %d holds %d", what, rec.Offset, rec.Value)
			return false
		}
		if j > 0 && (rec.Offset != recs[j-1].Offset+1 || rec.Skipped != 0) {
			t.Errorf("%s: offset %d (Skipped %d) after %d in one read", what, rec.Offset, rec.Skipped, recs[j-1].Offset)
			return false
		}
	}
	if len(recs) == 0 {
		return true
	}
	r0 := recs[0]
	if r0.Skipped > r0.Offset {
		t.Errorf("%s: offset %d told %d skipped", what, r0.Offset, r0.Skipped)
		return false
	}
	if !seeks {
		if gap := int64(r0.Offset) - *prev - 1; gap != int64(r0.Skipped) {
			t.Errorf("%s: offset %d after %d, told %d skipped", what, r0.Offset, *prev, r0.Skipped)
			return false
		}
	}
	if r0.Skipped > 0 && r0.Offset-1+count >= tailAfter {
		t.Errorf("%s: offset %d told skipped (Skipped %d before %d) but kept at tail %d with count %d", what, r0.Offset-1, r0.Skipped, r0.Offset, tailAfter, count)
		return false
	}
	*prev = int64(recs[len(recs)-1].Offset)
	return true
}

// Attack: many followers (made before the ring grows; buffers 1, 7, 64 and
// 100) and Broker.Read loops (max 1, 3, 64, 65, MaxInt) read while one
// publisher laps small and large rings: every record is its offset, every
// gap is told as Skipped, nothing kept is told skipped, and each follower
// accounts for every offset (read or skipped).
func TestReview11ConcurrentReadersWhilePublishing(t *testing.T) {
	for _, count := range []int{1, 2, 3, 8, 9, 17, 64, 65, 129, 513, 1000} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[r11V](Retention{Count: count, NoTime: count%2 == 0})
			total := uint64(max(4000, 6*count))
			var done atomic.Bool
			var wg sync.WaitGroup
			for _, L := range []int{1, 7, 64, 100} {
				f := b.Follow(Replay[r11V](Earliest()))
				wg.Go(func() {
					defer f.Close()
					buf := make([]Record[r11V], L)
					prev := int64(-1)
					var got, skipped uint64
					for {
						fin := done.Load()
						n := f.Read(buf)
						if !r11CheckFollowed(t, fmt.Sprintf("follower buf %d", L), &b, uint64(count), &prev, buf[:n], false) {
							return
						}
						for _, r := range buf[:n] {
							got++
							skipped += r.Skipped
						}
						if n == 0 {
							if fin {
								break
							}
							runtime.Gosched()
						}
					}
					if got+skipped != total || f.Offset() != total {
						t.Errorf("follower buf %d: read %d, skipped %d, at %d; want %d in all", L, got, skipped, f.Offset(), total)
					}
				})
			}
			for _, max := range []int{1, 3, 64, 65, math.MaxInt} {
				wg.Go(func() {
					from := uint64(0)
					for !done.Load() {
						recs, next, skipped := b.Read[r11V](from, max)
						tailAfter := r11Tail(&b)
						what := fmt.Sprintf("Read(%d, %d)", from, max)
						if len(recs) > max {
							t.Errorf("%s: %d records", what, len(recs))
							return
						}
						if skipped > 0 && from+skipped-1+uint64(count) >= tailAfter {
							t.Errorf("%s: skipped %d, but %d was kept at tail %d", what, skipped, from+skipped-1, tailAfter)
							return
						}
						for j, r := range recs {
							if r.Offset != from+skipped+uint64(j) || uint64(r.Value) != r.Offset || r.Skipped != 0 {
								t.Errorf("%s (skipped %d): record %d is offset %d value %d Skipped %d", what, skipped, j, r.Offset, r.Value, r.Skipped)
								return
							}
						}
						if next != from+skipped+uint64(len(recs)) {
							t.Errorf("%s: next %d, skipped %d, %d records", what, next, skipped, len(recs))
							return
						}
						from = next
						if len(recs) == 0 {
							runtime.Gosched()
						}
						if from%5 == 0 && from > 0 {
							from-- // read again from below
						}
					}
				})
			}
			for o := range total {
				if got, ok := b.Append(r11V(o)); !ok || got != o {
					t.Fatalf("Append %d = %d, %v", o, got, ok)
				}
				if o%64 == 0 {
					runtime.Gosched()
				}
			}
			done.Store(true)
			wg.Wait()
		})
	}
}

// Attack: a follower reads while another goroutine seeks it anywhere
// (backwards, forwards, below the head, past the tail) as the ring grows and
// wraps: every batch is contiguous and right, and what it is told skipped
// was gone. Then, quiet, a Seek is obeyed exactly.
func TestReview11SeekFromAnotherGoroutineWhileReading(t *testing.T) {
	for _, count := range []int{1, 3, 9, 16, 65, 129, 512} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[r11V](Retention{Count: count})
			f := b.Follow(Replay[r11V](Earliest()))
			defer f.Close()
			total := uint64(max(6000, 10*count))
			var done atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() { // the reader
				buf := make([]Record[r11V], 13)
				prev := int64(-1)
				for !done.Load() {
					n := f.Read(buf)
					if !r11CheckFollowed(t, "seeked follower", &b, uint64(count), &prev, buf[:n], true) {
						return
					}
					if n == 0 {
						runtime.Gosched()
					}
				}
			})
			wg.Go(func() { // the seeker
				rng := rand.New(rand.NewPCG(uint64(count), 1))
				for !done.Load() {
					tail := r11Tail(&b)
					lo := tail - min(tail, 2*uint64(count))
					f.Seek(lo + rng.Uint64N(tail-lo+4))
					runtime.Gosched()
				}
			})
			for o := range total {
				b.Publish(r11V(o))
				if o%32 == 0 {
					runtime.Gosched()
				}
			}
			done.Store(true)
			wg.Wait()
			buf := make([]Record[r11V], 2*count+5)
			head := total - min(total, uint64(count))
			for _, o := range []uint64{total + 2, 0, head, total - 1, head + 1, 1, total} {
				f.Seek(o)
				n := f.Read(buf)
				from := max(o, head)
				want := min(total, total-min(total, from))
				if uint64(n) != want {
					t.Fatalf("Seek(%d): read %d, want %d", o, n, want)
				}
				for j, r := range buf[:n] {
					if r.Offset != from+uint64(j) || uint64(r.Value) != r.Offset {
						t.Fatalf("Seek(%d): record %d is offset %d value %d", o, j, r.Offset, r.Value)
					}
				}
				if n > 0 && buf[0].Skipped != from-o && o < head {
					t.Fatalf("Seek(%d): Skipped %d, want %d", o, buf[0].Skipped, from-o)
				}
			}
		})
	}
}

// r11Ack is the model of ackState.
type r11Ack struct {
	wait      int64
	reads     []readMark
	committed uint64
	replayTo  uint64          // where the re-read in progress ends
	owed      map[uint64]bool // the values it reads again, read before
}

func (a *r11Ack) redo(now int64, o uint64) uint64 {
	if len(a.reads) > 0 && now-a.reads[0].to > a.wait {
		owed := map[uint64]bool{}
		for _, m := range a.reads {
			for x := m.first; x < m.end; x++ {
				owed[x] = true
			}
		}
		for x := range a.owed {
			if x >= o {
				owed[x] = true
			}
		}
		a.owed, a.replayTo = owed, max(a.replayTo, o)
		o = min(o, a.reads[0].first)
		a.reads = a.reads[:0]
	}
	if o < a.replayTo {
		o = min(max(o, a.committed), a.replayTo)
	}
	return o
}

// skipped is how many of the offsets from o up to head a read tells as
// skipped: of a re-read, those it owes and those it never read.
func (a *r11Ack) skipped(o, head uint64) uint64 {
	n := uint64(0)
	for ; o < head; o++ {
		if o >= a.replayTo || a.owed[o] {
			n++
		}
	}
	return n
}

func (a *r11Ack) read(first, end uint64, now int64) {
	if first = max(first, a.committed); first >= end {
		return
	}
	if k := len(a.reads); k > 0 && a.reads[k-1].end == first && now-a.reads[k-1].from < a.wait/64 {
		a.reads[k-1].end, a.reads[k-1].to = end, now
		return
	}
	a.reads = append(a.reads, readMark{first: first, end: end, from: now, to: now})
}

func (a *r11Ack) commit(end uint64) {
	a.committed = max(a.committed, end)
	i := 0
	for i < len(a.reads) && a.reads[i].end <= end {
		i++
	}
	a.reads = append(a.reads[:0], a.reads[i:]...)
	if len(a.reads) > 0 && a.reads[0].first < end {
		a.reads[0].first = end
	}
}

// Attack: a named follower with AckWait reads, commits part, is redelivered
// after AckWait (its position moving backwards, off its cached slot), across
// the ring's growth and wrap and past what retention keeps: every read is
// exactly the model's, values their offsets. Fake clock: synctest.
func TestReview11AckWaitRedeliveryAcrossWrap(t *testing.T) {
	for _, count := range []int{1, 3, 8, 9, 17, 64, 65, 100, 129} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b Broker
				b.Retain[r11V](Retention{Count: count})
				t0 := time.Now()
				const wait = time.Minute
				f := b.Follow(Name[r11V]("w"), Replay[r11V](Earliest()), AckWait[r11V](wait))
				defer f.Close()
				rng := rand.New(rand.NewPCG(uint64(count), 2))
				ack := &r11Ack{wait: int64(wait)}
				var pos, delivered, tail uint64
				for step := range 400 {
					now := int64(time.Since(t0))
					switch k := rng.IntN(10); {
					case k < 3:
						for range 1 + rng.IntN(count+2) {
							b.Publish(r11V(tail))
							tail++
						}
					case k < 4:
						time.Sleep(wait + time.Second)
					case k < 5:
						time.Sleep(time.Duration(rng.IntN(3)) * time.Second)
					case k < 6:
						if delivered > 0 {
							c := rng.Uint64N(delivered)
							f.Commit(c)
							ack.commit(c + 1)
						}
					default:
						L := 1 + rng.IntN(2*count+2)
						head := tail - min(tail, uint64(count))
						o := ack.redo(now, pos)
						var sk uint64
						if o < head {
							sk, o = ack.skipped(o, head), head
						}
						k := uint64(0)
						if o < tail {
							k = min(uint64(L), tail-o)
						}
						buf := make([]Record[r11V], L)
						n := f.Read(buf)
						what := fmt.Sprintf("step %d: read %d from %d (head %d tail %d)", step, L, pos, head, tail)
						if uint64(n) != k {
							t.Fatalf("%s: read %d, want %d", what, n, k)
						}
						for j, r := range buf[:n] {
							want := uint64(0)
							if j == 0 {
								want = sk
							}
							if r.Offset != o+uint64(j) || uint64(r.Value) != r.Offset || r.Skipped != want {
								t.Fatalf("%s: record %d is offset %d value %d Skipped %d; want offset %d Skipped %d", what, j, r.Offset, r.Value, r.Skipped, o+uint64(j), want)
							}
						}
						pos = o + k
						if k > 0 {
							delivered = max(delivered, pos)
							ack.read(o, pos, now)
						}
						if f.Offset() != pos {
							t.Fatalf("%s: offset %d, want %d", what, f.Offset(), pos)
						}
					}
				}
			})
		})
	}
}

// Attack: replays (Earliest, Last, At; of T and of Record[T]) subscribed
// while a publisher laps the ring: each receives a gapless run of offsets,
// each value its offset, up to the last published.
func TestReview11ReplayWhilePublishing(t *testing.T) {
	for _, count := range []int{1, 2, 9, 64, 65, 513} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[r11V](Retention{Count: count})
			const total = 3000
			var done atomic.Bool
			go func() {
				for o := range uint64(total) {
					b.Publish(r11V(o))
					if o%16 == 0 {
						runtime.Gosched()
					}
				}
				done.Store(true)
			}()
			type rsub struct {
				recs   <-chan Record[r11V]
				vals   <-chan r11V
				cancel func()
			}
			var subs []rsub
			starts := []Start{Earliest(), Last(1), Last(count / 2), Last(count + 5), At(0), At(total / 2), Next()}
			for i := range 40 {
				for !done.Load() && r11Tail(&b) < uint64(i*total/40) {
					runtime.Gosched()
				}
				s := starts[i%len(starts)]
				if i%2 == 0 {
					ch, cancel := b.Subscribe(Replay[Record[r11V]](s), Buffer[Record[r11V]](total+count+10))
					subs = append(subs, rsub{recs: ch, cancel: cancel})
				} else {
					ch, cancel := b.Subscribe(Replay[r11V](s), Buffer[r11V](total+count+10))
					subs = append(subs, rsub{vals: ch, cancel: cancel})
				}
			}
			for !done.Load() {
				runtime.Gosched()
			}
			for i, s := range subs {
				prev := int64(-1)
				n := len(s.recs) + len(s.vals)
				for range n {
					var o uint64
					if s.recs != nil {
						r := <-s.recs
						if uint64(r.Value) != r.Offset {
							t.Fatalf("sub %d: record offset %d value %d", i, r.Offset, r.Value)
						}
						o = r.Offset
					} else {
						o = uint64(<-s.vals)
					}
					if prev >= 0 && o != uint64(prev)+1 {
						t.Fatalf("sub %d: offset %d after %d", i, o, prev)
					}
					prev = int64(o)
				}
				if n > 0 && prev != total-1 {
					t.Fatalf("sub %d: ends at %d, want %d", i, prev, total-1)
				}
				s.cancel()
			}
		})
	}
}

// Attack: Broker.Read with max -1, 0, 1, 2, 63..65, MaxInt, from 0, below
// the head, at it, inside, at chunk and ring boundaries, at and past the
// tail, at every publication while the ring grows and wraps: exactly the
// offsets kept from there, values their offsets, skipped what was below
// the head.
func TestReview11BrokerReadTable(t *testing.T) {
	t.Parallel()
	for _, count := range r11Counts {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[r11V](Retention{Count: count})
			total := uint64(2*count + 70)
			for tail := uint64(1); tail <= total; tail++ {
				b.Publish(r11V(tail - 1))
				if count > 100 && tail%5 != 0 && tail < total-3 {
					continue
				}
				head := tail - min(tail, uint64(count))
				froms := []uint64{0, head, head + 1, tail - 1, tail, tail + 1, tail + 1000, (head + tail) / 2}
				if head > 0 {
					froms = append(froms, head-1)
				}
				for _, c := range []uint64{1, 2, 8, 16, 64} {
					froms = append(froms, tail-min(tail, c), (head/c+1)*c)
				}
				for _, from := range froms {
					for _, mx := range []int{-1, 0, 1, 2, 63, 64, 65, math.MaxInt} {
						recs, next, skipped := b.Read[r11V](from, mx)
						start, wantSkip := from, uint64(0)
						if from < head {
							start, wantSkip = head, head-from
						}
						k := uint64(0)
						if start < tail && mx > 0 {
							k = min(uint64(mx), tail-start)
						}
						wantNext := start + k
						what := fmt.Sprintf("tail %d head %d: Read(%d, %d)", tail, head, from, mx)
						if uint64(len(recs)) != k || next != wantNext || skipped != wantSkip {
							t.Fatalf("%s = %d records, next %d, skipped %d; want %d, %d, %d", what, len(recs), next, skipped, k, wantNext, wantSkip)
						}
						for j, r := range recs {
							if r.Offset != start+uint64(j) || uint64(r.Value) != r.Offset || r.Skipped != 0 {
								t.Fatalf("%s: record %d is offset %d value %d Skipped %d", what, j, r.Offset, r.Value, r.Skipped)
							}
						}
					}
				}
			}
		})
	}
}

// Attack: Retention{Count, Age} on the fake clock: values published over
// time, some seconds apart, are read by Broker.Read, a follower and a
// replay exactly as the model keeps them (the newer of the count and the
// age bounds), across growth and wrap, with Skipped and skipped exact.
func TestReview11AgeRetentionExact(t *testing.T) {
	for _, count := range []int{1, 3, 9, 16, 17, 64, 65, 100, 129} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b Broker
				const age = 10*time.Second + 500*time.Millisecond
				b.Retain[r11V](Retention{Count: count, Age: age})
				t0 := time.Now()
				rng := rand.New(rand.NewPCG(uint64(count), 3))
				var times []time.Duration
				fs := []*Follower[r11V]{b.Follow(Replay[r11V](Earliest())), b.Follow(Replay[r11V](Earliest()))}
				type fm struct{ pos, skipped uint64 }
				models := make([]fm, len(fs))
				firstKept := func() uint64 {
					tail := uint64(len(times))
					h := tail - min(tail, uint64(count))
					now := time.Since(t0)
					for h < tail && times[h] < now-age {
						h++
					}
					return h
				}
				for step := range 300 {
					switch k := rng.IntN(10); {
					case k < 3:
						for range 1 + rng.IntN(count+1) {
							times = append(times, time.Since(t0))
							b.Publish(r11V(len(times) - 1))
						}
					case k < 5:
						time.Sleep(time.Duration(1+rng.IntN(4)) * time.Second)
					case k < 6:
						ch, cancel := b.Subscribe(Replay[Record[r11V]](Earliest()), Buffer[Record[r11V]](count+1))
						h, tail := firstKept(), uint64(len(times))
						if got := uint64(len(ch)); got != tail-h {
							t.Fatalf("step %d: replay of %d, want %d (%d to %d)", step, got, tail-h, h, tail)
						}
						for o := h; o < tail; o++ {
							if r := <-ch; r.Offset != o || uint64(r.Value) != o || !r.Time.Equal(t0.Add(times[o])) {
								t.Fatalf("step %d: replay record offset %d value %d time %v, want %d", step, r.Offset, r.Value, r.Time.Sub(t0), o)
							}
						}
						cancel()
					case k < 8:
						tail := uint64(len(times))
						from := uint64(rng.IntN(int(tail) + 2))
						mx := 1 + rng.IntN(count+2)
						h := firstKept()
						start, sk := from, uint64(0)
						if from < h {
							start, sk = h, h-from
						}
						kk := uint64(0)
						if start < tail {
							kk = min(uint64(mx), tail-start)
						}
						recs, next, skipped := b.Read[r11V](from, mx)
						if uint64(len(recs)) != kk || next != start+kk || skipped != sk {
							t.Fatalf("step %d (head %d tail %d): Read(%d, %d) = %d, %d, %d; want %d, %d, %d", step, h, tail, from, mx, len(recs), next, skipped, kk, start+kk, sk)
						}
						for j, r := range recs {
							if r.Offset != start+uint64(j) || uint64(r.Value) != r.Offset || !r.Time.Equal(t0.Add(times[r.Offset])) {
								t.Fatalf("step %d: Read record %d offset %d value %d", step, j, r.Offset, r.Value)
							}
						}
					default:
						i := rng.IntN(len(fs))
						L := 1 + rng.IntN(count+3)
						tail := uint64(len(times))
						h := firstKept()
						mo := &models[i]
						o, sk := mo.pos, uint64(0)
						if o < h {
							sk, o = h-o, h
						}
						kk := uint64(0)
						if o < tail {
							kk = min(uint64(L), tail-o)
						}
						buf := make([]Record[r11V], L)
						n := fs[i].Read(buf)
						want := mo.skipped + sk
						what := fmt.Sprintf("step %d: follower %d read %d from %d (head %d tail %d)", step, i, L, mo.pos, h, tail)
						if uint64(n) != kk {
							t.Fatalf("%s: %d records, want %d", what, n, kk)
						}
						for j, r := range buf[:n] {
							ws := uint64(0)
							if j == 0 {
								ws = want
							}
							if r.Offset != o+uint64(j) || uint64(r.Value) != r.Offset || r.Skipped != ws {
								t.Fatalf("%s: record %d offset %d value %d Skipped %d; want %d, Skipped %d", what, j, r.Offset, r.Value, r.Skipped, o+uint64(j), ws)
							}
						}
						mo.pos, mo.skipped = o+kk, want
						if kk > 0 {
							mo.skipped = 0
						}
					}
				}
				for _, f := range fs {
					f.Close()
				}
			})
		})
	}
}

// Attack: a reader pinned on the oldest value kept holds up the writer when
// it comes round to that chunk again, and no sooner than the spare chunk
// allows: while pinned, the pinned run keeps its values (a write into it is
// a race under -race), and the tail stops where the writer must enter the
// pinned chunk; once unpinned, the writer carries on.
func TestReview11PinnedReaderHoldsTheWriter(t *testing.T) {
	for _, count := range []int{1, 2, 3, 16, 100, 513} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			m := newR11Log(t, count, 0)
			for range 3*count + 5 {
				m.append(0)
			}
			l := m.l
			tail := l.mu.tail()
			r := l.ring.Load()
			h := l.head(tail)
			s, run, st := r.pin(h)
			if st != readOK {
				t.Fatalf("head %d reads %d", h, st)
			}
			first := h - s&r.last // the pinned chunk's first offset
			var wg sync.WaitGroup
			var wrote atomic.Uint64
			wg.Go(func() {
				for o := tail; o < tail+3*r.n; o++ {
					l.mu.Lock()
					l.appendLocked(o, 0)
					l.mu.Unlock()
					wrote.Store(o + 1)
				}
			})
			for i := 0; i < 3000 && wrote.Load() < first+r.n; i++ {
				runtime.Gosched()
			}
			for range 200 {
				for j := range run {
					if o := h + j; o < tail {
						if v := r.cells[s+j].v; v != o {
							t.Fatalf("pinned offset %d holds %d", o, v)
						}
					}
				}
				if got := l.mu.tail(); got > first+r.n {
					t.Fatalf("tail %d past %d with the chunk of %d (from %d) pinned", got, first+r.n, h, first)
				}
				runtime.Gosched()
			}
			r.unpin(s)
			wg.Wait()
			m.times = m.times[:0]
			for range l.mu.tail() {
				m.times = append(m.times, 0)
			}
			m.check("after unpinning")
		})
	}
}

// Attack: a reader pinned on a ring the log has since outgrown does not
// hold up the writer, and its values stay put while the writer laps the new
// ring twice.
func TestReview11PinnedOldRingAcrossGrowth(t *testing.T) {
	for _, count := range []int{9, 16, 17, 65, 1000} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			m := newR11Log(t, count, 0)
			for range 8 {
				m.append(0)
			}
			r := m.l.ring.Load()
			s, run, st := r.pin(0)
			if st != readOK || r.cap != 8 {
				t.Fatalf("pin(0) in a ring of %d: %d", r.cap, st)
			}
			for range 2*count + 200 {
				m.append(0)
			}
			for j := range run {
				if v := r.cells[s+j].v; v != j {
					t.Fatalf("old ring: offset %d holds %d", j, v)
				}
			}
			r.unpin(s)
			if m.l.ring.Load() == r {
				t.Fatalf("the ring did not grow")
			}
			m.check("after laps of the new ring")
		})
	}
}

// Attack: a chunk's readers count saturates at its bits without spilling
// into its offset: the next reader waits, then gets in once one leaves.
func TestReview11ReadersCountSaturates(t *testing.T) {
	m := newR11Log(t, 100, 0)
	for range 100 {
		m.append(0)
	}
	r := m.l.ring.Load()
	const o = 42
	w := &r.chunks[r.index(o)>>r.shift].word
	before := w.Load()
	for range slotReaders {
		if _, _, st := r.pin(o); st != readOK {
			t.Fatalf("pin: %d", st)
		}
	}
	if got := w.Load(); got>>slotShift != before>>slotShift || got&slotReaders != slotReaders {
		t.Fatalf("word %#x after %d pins, from %#x", got, slotReaders, before)
	}
	got := make(chan uint64)
	go func() {
		v, _, st := r.read(o)
		if st != readOK {
			v = math.MaxUint64
		}
		got <- v
	}()
	r.unpin(r.index(o))
	if v := <-got; v != o {
		t.Fatalf("the reader past saturation read %d", v)
	}
	for range slotReaders - 1 {
		r.unpin(r.index(o))
	}
	if got := w.Load(); got != before {
		t.Fatalf("word %#x after unpins, want %#x", got, before)
	}
	m.check("after saturation")
}

// Attack: many goroutines pin and copy the same few chunks (Read of the
// head, followers at the head) of tiny rings while the writer laps them,
// so that it must wait for readers at every chunk: no wrong value, no
// missing or spurious skip, and the writer finishes.
func TestReview11ManyReadersOnTinyRings(t *testing.T) {
	for _, count := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[r11V](Retention{Count: count, NoTime: true})
			const total = 20000
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var done atomic.Bool
			var wg sync.WaitGroup
			for i := range 8 {
				if i%2 == 0 {
					f := b.Follow(Replay[r11V](Earliest()))
					wg.Go(func() {
						defer f.Close()
						buf := make([]Record[r11V], 1+i)
						prev := int64(-1)
						for {
							fin := done.Load()
							n := f.Read(buf)
							if !r11CheckFollowed(t, "tiny follower", &b, uint64(count), &prev, buf[:n], false) {
								return
							}
							if n == 0 {
								if fin {
									return
								}
								if i == 0 {
									wctx, c := context.WithTimeout(ctx, time.Millisecond)
									f.Wait(wctx)
									c()
								}
							}
						}
					})
					continue
				}
				wg.Go(func() {
					for !done.Load() {
						recs, next, skipped := b.Read[r11V](0, count)
						for j, r := range recs {
							if uint64(r.Value) != r.Offset || r.Offset != skipped+uint64(j) {
								t.Errorf("Read(0): record %d offset %d value %d, skipped %d", j, r.Offset, r.Value, skipped)
								return
							}
						}
						if next != skipped+uint64(len(recs)) {
							t.Errorf("Read(0): next %d, skipped %d, %d records", next, skipped, len(recs))
							return
						}
					}
				})
			}
			for o := range uint64(total) {
				b.Publish(r11V(o))
			}
			done.Store(true)
			wg.Wait()
		})
	}
}

// Attack: a follower seeked far past the tail while the ring is small, read
// there (caching its slot in that ring), then read once the log, grown,
// reaches that offset: it reads exactly the offsets from there, from the
// slot of the grown ring.
func TestReview11SeekPastTailThenGrowth(t *testing.T) {
	t.Parallel()
	for _, count := range r11Counts {
		for _, ahead := range []uint64{1, 8, 9, 10, 17, 18, 19, 33, 40, 100, 600} {
			var b Broker
			b.Retain[r11V](Retention{Count: count})
			f := b.Follow[r11V]()
			buf := make([]Record[r11V], 4)
			pub := func(n uint64) {
				for range n {
					b.Publish(r11V(r11Tail(&b)))
				}
			}
			pub(3)
			target := 3 + ahead
			f.Seek(target)
			if n := f.Read(buf); n != 0 {
				t.Fatalf("count %d: read %d past the tail", count, n)
			}
			for tail := r11Tail(&b); tail <= target; tail = r11Tail(&b) {
				pub(min(1+tail%7, target+1-tail))
				if f.Read(buf[:0]) != 0 || f.Read(nil) != 0 {
					t.Fatalf("empty buffers read")
				}
			}
			tail := r11Tail(&b)
			head := tail - min(tail, uint64(count))
			n := f.Read(buf)
			from := max(target, head)
			if want := min(uint64(len(buf)), tail-from); uint64(n) != want {
				t.Fatalf("count %d, seek %d, tail %d: read %d, want %d", count, target, tail, n, want)
			}
			for j, r := range buf[:n] {
				if r.Offset != from+uint64(j) || uint64(r.Value) != r.Offset || (j == 0 && r.Skipped != from-target) {
					t.Fatalf("count %d, seek %d, tail %d: record %d offset %d value %d Skipped %d, want offset %d Skipped %d",
						count, target, tail, j, r.Offset, r.Value, r.Skipped, from+uint64(j), from-target)
				}
			}
			f.Close()
		}
	}
}

// Attack: the spare chunk. Readers pinned on every value kept (as readers
// that loaded the current tail may be) never hold up the next append: the
// chunk it enters holds only values retention has dropped. A writer that
// had to wait would wait forever here, as the pins are the caller's; the
// timer only turns that deadlock into a failure.
func TestReview11PinnedKeptValuesNeverBlockTheNextAppend(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	var failed atomic.Value
	var at atomic.Value
	logs := make([]*r11Log, len(r11Counts))
	go func() {
		defer close(done)
		for i, count := range r11Counts {
			m := newR11Log(t, count, 0)
			logs[i] = m
			l := m.l
			for range 3*count + 70 {
				tail := l.mu.tail()
				at.Store(fmt.Sprintf("count %d, tail %d", count, tail))
				r := l.ring.Load()
				var pinned []uint64
				for o := l.head(tail); o < tail; o++ {
					s, _, st := r.pin(o)
					if st != readOK {
						failed.Store(fmt.Sprintf("count %d, tail %d: kept offset %d reads %d", count, tail, o, st))
						return
					}
					pinned = append(pinned, s)
				}
				m.append(0)
				for _, s := range pinned {
					r.unpin(s)
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
