package topic

// Tests of reading a retained log while its chunked ring grows, wraps and
// is trimmed: followers (follower.read and its cached slot, Seek, AckWait),
// Broker.Read and replays (retain.go: trimLocked, eachLocked). Every value
// is its offset, so a copy from the wrong slot, or a slot written while
// copied, shows as a value that is not its offset (or as a race under
// -race).

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

// offsetVal is the retained type of the tests through the public API: its
// value is its offset.
type offsetVal uint64

// followerModel is the model of a follower's position and untold skips.
type followerModel struct{ pos, lastEnd, skipped uint64 }

// Followers (made before the ring grows, with buffers from 1 to
// 200) read, seek backwards and forwards (to their own position, past the
// tail, below the head) and read again while the log grows, wraps and trims
// by age, one step at a time: each read returns exactly the model's
// records, values and Skipped, reports exactly its skips, and leaves the
// cached slot naming the slot of its position.
func TestRingFollowerMatchesItsModel(t *testing.T) {
	t.Parallel()
	bufs := []int{1, 2, 3, 7, 8, 9, 63, 64, 65, 200}
	for _, count := range ringCounts {
		for _, age := range []int64{0, 11} {
			t.Run(fmt.Sprintf("count=%d/age=%d", count, age), func(t *testing.T) {
				m := newModelLog(t, count, age)
				rng := rand.New(rand.NewPCG(uint64(count)+7, uint64(age)))
				const nf = 4
				type fol struct {
					f     *follower[uint64]
					model followerModel
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
				nanos := ageBase
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
						if x.f.size == r.Size() && x.f.slot != r.Index(x.f.lastEnd) {
							t.Fatalf("%s: cached slot %d of %d in a ring of %d, want %d", what, x.f.slot, x.f.lastEnd, r.Size(), r.Index(x.f.lastEnd))
						}
					}
				}
				m.check("at the end")
			})
		}
	}
}

// offsetTail returns the tail of T's log, loaded after whatever came before.
func offsetTail(b *Broker) uint64 { return b.logOf[offsetVal]().mu.tail() }

// checkOffsetsFollowed checks a batch a follower of b read (see checkFollowed).
func checkOffsetsFollowed(t *testing.T, what string, b *Broker, count uint64, prev *int64, recs []Record[offsetVal], seeks bool) bool {
	t.Helper()
	return checkFollowed(t, what, offsetTail(b), count, prev, recs, seeks)
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

// Many followers (made before the ring grows; buffers 1, 7, 64 and
// 100) and Broker.Read loops (max 1, 3, 64, 65, MaxInt) read while one
// publisher laps small and large rings: every record is its offset, every
// gap is told as Skipped, nothing kept is told skipped, and each follower
// accounts for every offset (read or skipped).
func TestRingReadersWhilePublishingAccountForEveryOffset(t *testing.T) {
	for _, count := range []int{1, 2, 3, 8, 9, 17, 64, 65, 129, 513, 1000} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[offsetVal](Retention{Count: count, NoTime: count%2 == 0})
			total := uint64(roundsFor(max(4000, 6*count), max(1000, 3*count)))
			var done atomic.Bool
			var wg sync.WaitGroup
			for _, L := range []int{1, 7, 64, 100} {
				f := b.Follow(Replay[offsetVal](Earliest()))
				wg.Go(func() {
					defer f.Close()
					buf := make([]Record[offsetVal], L)
					prev := int64(-1)
					var got, skipped uint64
					for {
						fin := done.Load()
						n := f.Read(buf)
						if !checkOffsetsFollowed(t, fmt.Sprintf("follower buf %d", L), &b, uint64(count), &prev, buf[:n], false) {
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
						recs, next, skipped := b.Read[offsetVal](from, max)
						tailAfter := offsetTail(&b)
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
				if got, ok := b.Append(offsetVal(o)); !ok || got != o {
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

// A follower reads while another goroutine seeks it anywhere
// (backwards, forwards, below the head, past the tail) as the ring grows and
// wraps: every batch is contiguous and right, and what it is told skipped
// was gone. Then, quiet, a Seek is obeyed exactly.
func TestRingFollowerSeekedFromAnotherGoroutineReadsRight(t *testing.T) {
	for _, count := range []int{1, 3, 9, 16, 65, 129, 512} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[offsetVal](Retention{Count: count})
			f := b.Follow(Replay[offsetVal](Earliest()))
			defer f.Close()
			total := uint64(max(6000, 10*count))
			var done atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() { // the reader
				buf := make([]Record[offsetVal], 13)
				prev := int64(-1)
				for !done.Load() {
					n := f.Read(buf)
					if !checkOffsetsFollowed(t, "seeked follower", &b, uint64(count), &prev, buf[:n], true) {
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
					tail := offsetTail(&b)
					lo := tail - min(tail, 2*uint64(count))
					f.Seek(lo + rng.Uint64N(tail-lo+4))
					runtime.Gosched()
				}
			})
			for o := range total {
				b.Publish(offsetVal(o))
				if o%32 == 0 {
					runtime.Gosched()
				}
			}
			done.Store(true)
			wg.Wait()
			buf := make([]Record[offsetVal], 2*count+5)
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

// ackModel is the model of ackState.
type ackModel struct {
	wait      int64
	reads     []readMark
	committed uint64
	replayTo  uint64          // where the re-read in progress ends
	owed      map[uint64]bool // the values it reads again, read before
}

func (a *ackModel) redo(now int64, o uint64) uint64 {
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
func (a *ackModel) skipped(o, head uint64) uint64 {
	n := uint64(0)
	for ; o < head; o++ {
		if o >= a.replayTo || a.owed[o] {
			n++
		}
	}
	return n
}

func (a *ackModel) read(first, end uint64, now int64) {
	if first = max(first, a.committed); first >= end {
		return
	}
	if k := len(a.reads); k > 0 && a.reads[k-1].end == first && now-a.reads[k-1].from < a.wait/64 {
		a.reads[k-1].end, a.reads[k-1].to = end, now
		return
	}
	a.reads = append(a.reads, readMark{first: first, end: end, from: now, to: now})
}

func (a *ackModel) commit(end uint64) {
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

// A named follower with AckWait reads, commits part, is redelivered
// after AckWait (its position moving backwards, off its cached slot), across
// the ring's growth and wrap and past what retention keeps: every read is
// exactly the model's, values their offsets. Fake clock: synctest.
func TestRingAckWaitRedeliversAcrossWrap(t *testing.T) {
	for _, count := range []int{1, 3, 8, 9, 17, 64, 65, 100, 129} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b Broker
				b.Retain[offsetVal](Retention{Count: count})
				t0 := time.Now()
				const wait = time.Minute
				f := b.Follow(Name[offsetVal]("w"), Replay[offsetVal](Earliest()), AckWait[offsetVal](wait))
				defer f.Close()
				rng := rand.New(rand.NewPCG(uint64(count), 2))
				ack := &ackModel{wait: int64(wait)}
				var pos, delivered, tail uint64
				for step := range 400 {
					now := int64(time.Since(t0))
					switch k := rng.IntN(10); {
					case k < 3:
						for range 1 + rng.IntN(count+2) {
							b.Publish(offsetVal(tail))
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
						buf := make([]Record[offsetVal], L)
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

// Replays (Earliest, Last, At; of T and of Record[T]) subscribed
// while a publisher laps the ring: each receives a gapless run of offsets,
// each value its offset, up to the last published.
func TestRingReplayWhilePublishingHasNoGap(t *testing.T) {
	for _, count := range []int{1, 2, 9, 64, 65, 513} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[offsetVal](Retention{Count: count})
			const total = 3000
			var done atomic.Bool
			go func() {
				for o := range uint64(total) {
					b.Publish(offsetVal(o))
					if o%16 == 0 {
						runtime.Gosched()
					}
				}
				done.Store(true)
			}()
			type rsub struct {
				recs   <-chan Record[offsetVal]
				vals   <-chan offsetVal
				cancel func()
			}
			var subs []rsub
			starts := []Start{Earliest(), Last(1), Last(count / 2), Last(count + 5), At(0), At(total / 2), Next()}
			for i := range 40 {
				for !done.Load() && offsetTail(&b) < uint64(i*total/40) {
					runtime.Gosched()
				}
				s := starts[i%len(starts)]
				if i%2 == 0 {
					ch, cancel := b.Subscribe(Replay[Record[offsetVal]](s), Buffer[Record[offsetVal]](total+count+10))
					subs = append(subs, rsub{recs: ch, cancel: cancel})
				} else {
					ch, cancel := b.Subscribe(Replay[offsetVal](s), Buffer[offsetVal](total+count+10))
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

// Broker.Read with max -1, 0, 1, 2, 63..65, MaxInt, from 0, below
// the head, at it, inside, at chunk and ring boundaries, at and past the
// tail, at every publication while the ring grows and wraps: exactly the
// offsets kept from there, values their offsets, skipped what was below
// the head.
func TestRingBrokerReadReturnsExactlyTheOffsetsKept(t *testing.T) {
	t.Parallel()
	for _, count := range sweep(ringCounts) {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[offsetVal](Retention{Count: count})
			total := uint64(2*count + 70)
			for tail := uint64(1); tail <= total; tail++ {
				b.Publish(offsetVal(tail - 1))
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
						recs, next, skipped := b.Read[offsetVal](from, mx)
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

// Retention{Count, Age} on the fake clock: values published over
// time, some seconds apart, are read by Broker.Read, a follower and a
// replay exactly as the model keeps them (the newer of the count and the
// age bounds), across growth and wrap, with Skipped and skipped exact.
func TestRingAgeRetentionIsExact(t *testing.T) {
	for _, count := range []int{1, 3, 9, 16, 17, 64, 65, 100, 129} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b Broker
				const age = 10*time.Second + 500*time.Millisecond
				b.Retain[offsetVal](Retention{Count: count, Age: age})
				t0 := time.Now()
				rng := rand.New(rand.NewPCG(uint64(count), 3))
				var times []time.Duration
				fs := []*Follower[offsetVal]{b.Follow(Replay[offsetVal](Earliest())), b.Follow(Replay[offsetVal](Earliest()))}
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
							b.Publish(offsetVal(len(times) - 1))
						}
					case k < 5:
						time.Sleep(time.Duration(1+rng.IntN(4)) * time.Second)
					case k < 6:
						ch, cancel := b.Subscribe(Replay[Record[offsetVal]](Earliest()), Buffer[Record[offsetVal]](count+1))
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
						recs, next, skipped := b.Read[offsetVal](from, mx)
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
						buf := make([]Record[offsetVal], L)
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

// Many goroutines pin and copy the same few chunks (Read of the
// head, followers at the head) of tiny rings while the writer laps them,
// so that it must wait for readers at every chunk: no wrong value, no
// missing or spurious skip, and the writer finishes.
func TestRingManyReadersOnTinyRingsSeeNoWrongValue(t *testing.T) {
	for _, count := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
			var b Broker
			b.Retain[offsetVal](Retention{Count: count, NoTime: true})
			const total = 20000
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var done atomic.Bool
			var wg sync.WaitGroup
			for i := range 8 {
				if i%2 == 0 {
					f := b.Follow(Replay[offsetVal](Earliest()))
					wg.Go(func() {
						defer f.Close()
						buf := make([]Record[offsetVal], 1+i)
						prev := int64(-1)
						for {
							fin := done.Load()
							n := f.Read(buf)
							if !checkOffsetsFollowed(t, "tiny follower", &b, uint64(count), &prev, buf[:n], false) {
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
						recs, next, skipped := b.Read[offsetVal](0, count)
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
				b.Publish(offsetVal(o))
			}
			done.Store(true)
			wg.Wait()
		})
	}
}

// A follower seeked far past the tail while the ring is small, read
// there (caching its slot in that ring), then read once the log, grown,
// reaches that offset: it reads exactly the offsets from there, from the
// slot of the grown ring.
func TestRingFollowerSeekedPastTheTailReadsAfterGrowth(t *testing.T) {
	t.Parallel()
	for _, count := range ringCounts {
		for _, ahead := range []uint64{1, 8, 9, 10, 17, 18, 19, 33, 40, 100, 600} {
			var b Broker
			b.Retain[offsetVal](Retention{Count: count})
			f := b.Follow[offsetVal]()
			buf := make([]Record[offsetVal], 4)
			pub := func(n uint64) {
				for range n {
					b.Publish(offsetVal(offsetTail(&b)))
				}
			}
			pub(3)
			target := 3 + ahead
			f.Seek(target)
			if n := f.Read(buf); n != 0 {
				t.Fatalf("count %d: read %d past the tail", count, n)
			}
			for tail := offsetTail(&b); tail <= target; tail = offsetTail(&b) {
				pub(min(1+tail%7, target+1-tail))
				if f.Read(buf[:0]) != 0 || f.Read(nil) != 0 {
					t.Fatalf("empty buffers read")
				}
			}
			tail := offsetTail(&b)
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
