package topic

// Tests of seq, the sequencing point in one word (seq.go), and of its users
// in retain.go (appendLocked, sendOrdered's publish, replay), follow.go and
// logs.go. Timeouts only detect a hang (a parked contender never woken),
// never decide a pass.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// parked returns how many contenders are parked on q.
func (q *seq) parked() int {
	p := q.park.Load()
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.parked
}

// waitParked waits until n contenders are parked on q.
func waitParked(t *testing.T, q *seq, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.parked() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d contenders parked, want %d", q.parked(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitDone waits for wg, failing if it takes longer than a lost wake-up
// could be mistaken for.
func waitDone(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: a parked contender was never woken", what)
	}
}

// TestSeqExcludesAndCountsEveryAppend appends from more goroutines than
// cores, so that some park: each append's plain read-modify-write of next
// and of a counter is exclusive (the race detector checks it), and the tail
// ends at the number of appends.
func TestSeqExcludesAndCountsEveryAppend(t *testing.T) {
	var q seq
	var plain int
	n, each := 4*runtime.GOMAXPROCS(0)+3, 2000
	if testing.Short() {
		each = 200
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := range each {
				q.Lock()
				if q.next != uint64(plain) {
					t.Errorf("next %d, want %d", q.next, plain)
				}
				plain++
				q.next++
				if i%64 == 0 {
					runtime.Gosched() // hold it across a yield: contenders park
				}
				q.Unlock()
			}
		})
	}
	waitDone(t, &wg, "appends")
	if got, want := q.tail(), uint64(n*each); got != want || plain != n*each {
		t.Fatalf("tail %d, counter %d, want %d", got, plain, want)
	}
	if w := q.w.Load(); w&(seqLocked|seqWaiting) != 0 {
		t.Fatalf("word %b after the last unlock, want neither bit", w&3)
	}
	if q.starving.Load() {
		t.Fatal("starving after the last contender took the lock")
	}
}

// TestSeqWakesEveryParkedContender parks contenders behind a holder, then
// lets go: each unlock wakes the next, none is forgotten.
func TestSeqWakesEveryParkedContender(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		var q seq
		q.Lock()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				q.Lock()
				q.next++
				q.Unlock()
			})
		}
		waitParked(t, &q, n)
		if q.w.Load()&seqWaiting == 0 {
			t.Fatalf("n=%d: contenders parked without the waiting bit", n)
		}
		q.Unlock()
		waitDone(t, &wg, "after one unlock")
		if got := q.tail(); got != uint64(n) {
			t.Fatalf("n=%d: tail %d, want %d", n, got, n)
		}
	}
}

// TestSeqPublishKeepsTheLockAndTheWaitingBit publishes a tail while holding
// the lock with contenders parked: readers see the tail, the contenders stay
// parked, and the unlock after it still wakes them.
func TestSeqPublishKeepsTheLockAndTheWaitingBit(t *testing.T) {
	var q seq
	q.Lock()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			q.Lock()
			q.next++ // after the test's 9: ends at 12
			q.Unlock()
		})
	}
	waitParked(t, &q, 3)
	q.next = 7
	q.publish()
	if got := q.tail(); got != 7 {
		t.Fatalf("tail %d after publish, want 7", got)
	}
	if w := q.w.Load(); w&seqLocked == 0 || w&seqWaiting == 0 {
		t.Fatalf("publish left bits %b, want locked and waiting", w&3)
	}
	if got := q.parked(); got != 3 {
		t.Fatalf("%d parked after publish, want 3", got)
	}
	q.next = 9
	q.Unlock()
	waitDone(t, &wg, "after publish and unlock")
	if got := q.tail(); got != 12 {
		t.Fatalf("tail %d, want 12", got)
	}
}

// TestSeqReadersSeeOnlyWrittenValues: a reader that loads the tail finds
// every value below it written, while writers append under the lock.
func TestSeqReadersSeeOnlyWrittenValues(t *testing.T) {
	const size = 1 << 12
	var q seq
	var cells [size]uint64 // offset+1 once written; read below the tail only
	n := 2000
	if testing.Short() {
		n = 500
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range n {
				q.Lock()
				if q.next < size {
					cells[q.next] = q.next + 1
					q.next++
				}
				q.Unlock()
			}
		})
	}
	stop := make(chan struct{})
	var rg sync.WaitGroup
	rg.Go(func() {
		for seen := uint64(0); ; {
			select {
			case <-stop:
				return
			default:
			}
			tail := q.tail()
			for o := seen; o < tail; o++ {
				if cells[o] != o+1 {
					t.Errorf("offset %d below tail %d reads %d", o, tail, cells[o])
					return
				}
			}
			seen = tail
		}
	})
	waitDone(t, &wg, "writers")
	close(stop)
	rg.Wait()
}

// TestSeqParksInsideAndOutsideSynctestBubbles: contenders park on one seq
// outside a testing/synctest bubble, then inside one, then outside again. A
// channel made in a bubble may not be used outside it (the runtime stops
// the process), so no parked contender's place may outlive its park.
func TestSeqParksInsideAndOutsideSynctestBubbles(t *testing.T) {
	var q seq
	contend := func(wait func()) {
		q.Lock()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				q.Lock()
				q.next++
				q.Unlock()
			})
		}
		wait()
		q.Unlock()
		wg.Wait()
	}
	outside := func() { waitParked(t, &q, 3) }
	contend(outside)
	synctest.Test(t, func(t *testing.T) { contend(synctest.Wait) })
	contend(outside)
	if got := q.tail(); got != 9 {
		t.Fatalf("tail %d, want 9", got)
	}
}

// waitFor polls cond until it holds, failing after 10 s: a detector of a
// hang, never a pass condition.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// waitProgress waits for wg, failing if progress stands still for 10 s
// (a lost wake-up), however long the whole takes under -race.
func waitProgress(t *testing.T, wg *sync.WaitGroup, progress *atomic.Int64, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last, at := progress.Load(), time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if p := progress.Load(); p != last {
			last, at = p, time.Now()
		} else if time.Since(at) > 10*time.Second {
			t.Fatalf("%s: no progress for 10 s at %d (a parked contender never woken?)", what, p)
		}
	}
}

// TestSeqWokenContenderThatLosesToABargerParksAgain: the unlock that
// finds the waiting bit clears it and signals; the signalled contender then
// finds the lock taken by one that never parked. It must set the bit again
// before it parks, or the barger's unlock wakes no one. The test holds the
// seqPark's mu to place the barger between the swap and the signal.
func TestSeqWokenContenderThatLosesToABargerParksAgain(t *testing.T) {
	for round := range 20 {
		var q seq
		q.Lock()
		var got atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			q.Lock()
			q.next++
			got.Store(true)
			q.Unlock()
		})
		waitParked(t, &q, 1)
		p := q.park.Load()
		p.mu.Lock() // the unlock below swaps, then waits here to signal
		var ug sync.WaitGroup
		ug.Go(q.Unlock)
		waitFor(t, "the swap", func() bool { return q.w.Load()&seqLocked == 0 })
		if w := q.w.Load(); w&seqWaiting != 0 {
			t.Fatalf("round %d: the unlocking swap left the waiting bit: %b", round, w&3)
		}
		q.Lock() // the barger, between the swap and the signal
		if got.Load() {
			t.Fatalf("round %d: the parked contender took the lock from its holder", round)
		}
		p.mu.Unlock()
		ug.Wait() // signalled: the contender finds the barger holding it
		waitFor(t, "the woken contender's waiting bit", func() bool { return q.w.Load()&seqWaiting != 0 })
		if got.Load() {
			t.Fatalf("round %d: the woken contender took the barger's lock", round)
		}
		q.next += 10
		q.Unlock()
		waitDone(t, &wg, "after the barger let go")
		if tail := q.tail(); tail != 11 {
			t.Fatalf("round %d: tail %d, want 11", round, tail)
		}
	}
}

// TestSeqBargersAndParkersWhileSignalsAreHeldAllGetTheLock: the test holds the
// seqPark's mu while several unlocks swap and queue their signals, while
// bargers take and let go of the lock meanwhile and new contenders queue to
// park: once mu is let go, every contender gets the lock.
func TestSeqBargersAndParkersWhileSignalsAreHeldAllGetTheLock(t *testing.T) {
	for round := range 10 {
		var q seq
		q.Lock()
		var wg sync.WaitGroup
		var done atomic.Int64
		first := 3
		for range first {
			wg.Go(func() { q.Lock(); q.next++; done.Add(1); q.Unlock() })
		}
		waitParked(t, &q, first)
		p := q.park.Load()
		p.mu.Lock()
		// The holder lets go: its signal waits for mu.
		var ug sync.WaitGroup
		ug.Go(q.Unlock)
		waitFor(t, "the swap", func() bool { return q.w.Load()&seqLocked == 0 })
		// Later contenders yield, then queue for mu to park.
		late := 2 + round%3
		for range late {
			wg.Go(func() { q.Lock(); q.next++; done.Add(1); q.Unlock() })
		}
		// Bargers take and let go of it meanwhile; none parks (mu is ours),
		// and none of their unlocks finds the waiting bit (the swap cleared
		// it, and no contender can set it without mu).
		for range 5 {
			// Not q.Lock: a late contender may take the lock as it
			// yields, and a barger that then parks would wait for the
			// mu this test holds, forever.
			barge(t, &q)
			q.next++
			if q.w.Load()&seqWaiting != 0 {
				t.Fatalf("round %d: waiting bit set with mu held by the test", round)
			}
			q.Unlock()
		}
		p.mu.Unlock()
		ug.Wait()
		waitDone(t, &wg, fmt.Sprintf("round %d", round))
		if n := done.Load(); n != int64(first+late) {
			t.Fatalf("round %d: %d contenders got the lock, want %d", round, n, first+late)
		}
		if tail, want := q.tail(), uint64(first+late+5); tail != want {
			t.Fatalf("round %d: tail %d, want %d", round, tail, want)
		}
		if w := q.w.Load(); w&3 != 0 {
			t.Fatalf("round %d: bits %b after the last unlock", round, w&3)
		}
	}
}

// TestSeqPublishRacingParkersKeepsTheWaitingBit publishes the tail in a tight loop,
// holding the lock, while contenders set the waiting bit with their CAS:
// publish's CAS must keep a bit set meanwhile, or the unlock wakes no one.
func TestSeqPublishRacingParkersKeepsTheWaitingBit(t *testing.T) {
	for round := range 30 {
		var q seq
		q.Lock()
		n := 1 + round%5
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { q.Lock(); q.next++; q.Unlock() })
		}
		deadline := time.Now().Add(10 * time.Second)
		for q.parked() != n {
			q.next++
			q.publish()
			if tail := q.tail(); tail != q.next {
				t.Fatalf("round %d: tail %d after publishing %d", round, tail, q.next)
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d parked, want %d", round, q.parked(), n)
			}
		}
		for range 100 {
			q.next++
			q.publish()
		}
		if w := q.w.Load(); w&seqLocked == 0 || w&seqWaiting == 0 {
			t.Fatalf("round %d: bits %b with %d parked, want locked and waiting", round, w&3, n)
		}
		want := q.next + uint64(n)
		q.Unlock()
		waitDone(t, &wg, fmt.Sprintf("round %d", round))
		if tail := q.tail(); tail != want {
			t.Fatalf("round %d: tail %d, want %d", round, tail, want)
		}
	}
}

// TestSeqSectionsStayAloneUnderMixedStress: more contenders than cores, some holding the
// lock across yields (so that others park), some publishing mid-section,
// some bargers in tight loops; a reader checks that the tail only grows and
// that every value below it is written. Each section checks that it is alone
// (a plain counter, under -race) and that the tail it took is the tail
// published; the test fails if progress stops for 10 s.
func TestSeqSectionsStayAloneUnderMixedStress(t *testing.T) {
	const size = 1 << 16
	var q seq
	cells := make([]uint64, size) // offset+1 once written
	var plain int
	var progress atomic.Int64
	workers, each := 3*runtime.GOMAXPROCS(0)+2, 1500
	if testing.Short() {
		each = 300
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range each {
				q.Lock()
				if tail := q.tail(); tail != q.next {
					t.Errorf("worker %d: took next %d with tail %d", w, q.next, tail)
				}
				plain++
				k := rng.IntN(16)
				if q.next < size {
					cells[q.next] = q.next + 1
					q.next++
				}
				switch {
				case k == 0:
					runtime.Gosched() // held across a yield: others park
				case k == 1 && q.next < size:
					q.publish()
					if tail := q.tail(); tail != q.next {
						t.Errorf("worker %d: tail %d after publishing %d", w, tail, q.next)
					}
					cells[q.next] = q.next + 1 // a second value, after the publish
					q.next++
				case k == 2:
					for range 3 {
						runtime.Gosched()
					}
				}
				q.Unlock()
				progress.Add(1)
				if w%3 == 0 && i%100 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	stop := make(chan struct{})
	var rg sync.WaitGroup
	rg.Go(func() {
		seen := uint64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			tail := q.tail()
			if tail < seen {
				t.Errorf("tail went back from %d to %d", seen, tail)
				return
			}
			for o := seen; o < tail; o++ {
				if cells[o] != o+1 {
					t.Errorf("offset %d below tail %d reads %d", o, tail, cells[o])
					return
				}
			}
			seen = tail
		}
	})
	waitProgress(t, &wg, &progress, "mixed stress")
	close(stop)
	rg.Wait()
	if plain != workers*each {
		t.Fatalf("%d sections, want %d", plain, workers*each)
	}
	if w := q.w.Load(); w&3 != 0 {
		t.Fatalf("bits %b after the last unlock", w&3)
	}
}

// TestSeqAHogDoesNotStarveAContender: one goroutine takes and lets go
// of the lock in a tight loop; another must still get it, many times. A
// woken contender that loses to the hog parks again; nothing hands the lock
// over (sync.Mutex has its starvation mode), so this asks only that it gets
// through within the hang detector; the worst wait is logged.
func TestSeqAHogDoesNotStarveAContender(t *testing.T) {
	for _, hogs := range []int{1, 2} {
		t.Run(fmt.Sprint("hogs=", hogs), func(t *testing.T) {
			var q seq
			var stop atomic.Bool
			var hg sync.WaitGroup
			for range hogs {
				hg.Go(func() {
					for !stop.Load() {
						q.Lock()
						q.next++
						q.Unlock()
					}
				})
			}
			var wg sync.WaitGroup
			var progress atomic.Int64
			var worst atomic.Int64
			n := 2000
			wg.Go(func() {
				for range n {
					start := time.Now()
					q.Lock()
					q.next++
					q.Unlock()
					if d := int64(time.Since(start)); d > worst.Load() {
						worst.Store(d)
					}
					progress.Add(1)
				}
			})
			waitProgress(t, &wg, &progress, "the contender beside the hog")
			stop.Store(true)
			hg.Wait()
			t.Logf("%d hogs: the contender's worst wait for the lock %v", hogs, time.Duration(worst.Load()))
		})
	}
}

// TestSeqTailAtTheTopOf62BitsSurvivesLockPublishAndUnlock: a tail just below 2^62 survives lock,
// publish and unlock with contenders parked.
func TestSeqTailAtTheTopOf62BitsSurvivesLockPublishAndUnlock(t *testing.T) {
	const top = uint64(1)<<62 - 1
	var q seq
	q.w.Store((top - 4) << seqShift)
	q.Lock()
	if q.next != top-4 {
		t.Fatalf("next %d, want %d", q.next, top-4)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { q.Lock(); q.next++; q.Unlock() })
	}
	waitParked(t, &q, 2)
	q.next++
	q.publish()
	if got := q.tail(); got != top-3 {
		t.Fatalf("tail %d after publish, want %d", got, top-3)
	}
	q.next++
	q.Unlock()
	waitDone(t, &wg, "at the top")
	if got := q.tail(); got != top {
		t.Fatalf("tail %d, want %d", got, top)
	}
}

// seqVal is the retained type of the tests through the public API:
// publisher and sequence.
type seqVal struct{ P, I int }

// TestSeqARecordReceivedIsReadAtOnce: a subscription to Record[T]
// receives records while the publisher still holds the sequencing point
// (sending to the many subscriptions after it); each record it receives is
// at once in Read and in a follower's Read, with its value; a subscription
// to T, received in offset order, finds the k-th value at offset k-1 in Read.
func TestSeqARecordReceivedIsReadAtOnce(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprint("keyed=", keyed), func(t *testing.T) {
			const publishers, each = 4, 1500
			const total = publishers * each
			var b Broker
			if keyed {
				b.RetainLatest(func(v seqVal) seqVal { return v }, Retention{Count: 2 * total, NoTime: true})
			} else {
				b.Retain[seqVal](Retention{Count: 2 * total, NoTime: true})
			}
			recs, cancel := b.Subscribe[Record[seqVal]](Buffer[Record[seqVal]](total))
			defer cancel()
			vals, vcancel := b.Subscribe[seqVal](Buffer[seqVal](total))
			defer vcancel()
			// Padding: the publisher sends to these after the checkers, so it
			// holds the sequencing point a while after they receive.
			for range 50 {
				_, c := b.Subscribe[Record[seqVal]](Buffer[Record[seqVal]](1))
				defer c()
			}
			f := b.Follow[seqVal]()
			defer f.Close()
			var wg sync.WaitGroup
			var progress atomic.Int64
			for p := range publishers {
				wg.Go(func() {
					for i := range each {
						b.Publish(seqVal{p, i})
						progress.Add(1)
					}
				})
			}
			wg.Go(func() {
				buf := make([]Record[seqVal], 1)
				for range total {
					rec := <-recs
					got, next, _ := b.Read[seqVal](rec.Offset, 1)
					if len(got) != 1 || got[0].Offset != rec.Offset || got[0].Value != rec.Value {
						t.Errorf("received record %d (%v); Read of it at once gives %v (next %d, tail %d)",
							rec.Offset, rec.Value, got, next, b.logOf[seqVal]().mu.tail())
						return
					}
					f.Seek(rec.Offset)
					if n := f.Read(buf); n != 1 || buf[0].Offset != rec.Offset || buf[0].Value != rec.Value {
						t.Errorf("received record %d (%v); a follower seeking it reads %d: %v", rec.Offset, rec.Value, n, buf[:n])
						return
					}
					progress.Add(1)
				}
			})
			wg.Go(func() {
				for k := range uint64(total) {
					v := <-vals
					got, _, _ := b.Read[seqVal](k, 1)
					if len(got) != 1 || got[0].Value != v {
						t.Errorf("received value %d (%v); Read of offset %d at once gives %v", k, v, k, got)
						return
					}
					progress.Add(1)
				}
			})
			waitProgress(t, &wg, &progress, "publishers and checkers")
		})
	}
}

// TestSeqFollowerIsWokenForEveryValue plays ping-pong between
// publishers and a follower waiting in Next: each publication must wake the
// follower (the swap or publish of the tail, then the load of the waiters,
// against the follower's add, then its load of the tail), with and without
// subscriptions sent to in order (sendOrdered publishes before it unlocks).
func TestSeqFollowerIsWokenForEveryValue(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprint("ordered=", ordered), func(t *testing.T) {
			var b Broker
			b.Retain[seqVal](Retention{Count: 16, NoTime: true})
			if ordered {
				_, c := b.Subscribe[Record[seqVal]](Buffer[Record[seqVal]](1))
				defer c()
			}
			f := b.Follow[seqVal]()
			defer f.Close()
			n := 3000
			if testing.Short() {
				n = 500
			}
			echo := make(chan uint64)
			go func() {
				for {
					rec, err := f.Next(context.Background())
					if err != nil {
						return
					}
					echo <- rec.Offset
				}
			}()
			for i := range n {
				var wg sync.WaitGroup
				// Two publishers race for it; the follower must see both.
				wg.Go(func() { b.Publish(seqVal{0, i}) })
				wg.Go(func() { b.Publish(seqVal{1, i}) })
				wg.Wait()
				for k := range 2 {
					select {
					case o := <-echo:
						if want := uint64(2*i + k); o != want {
							t.Fatalf("follower read offset %d, want %d", o, want)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("round %d: the follower was not woken for offset %d", i, 2*i+k)
					}
				}
			}
		})
	}
}

// TestSeqEveryKindOfContenderParksAndIsWoken holds a log's sequencing
// point from the test while publishers, keyed reads, keyed follower
// creation and reads, stats, a replay and Shutdown queue for it, many of
// them parking: once let go, every one gets through.
func TestSeqEveryKindOfContenderParksAndIsWoken(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprint("keyed=", keyed), func(t *testing.T) {
			var b Broker
			if keyed {
				b.RetainLatest(func(v seqVal) int { return v.I % 7 }, Retention{Count: 100, NoTime: true})
			} else {
				b.Retain[seqVal](Retention{Count: 100, NoTime: true})
			}
			for i := range 10 {
				b.Publish(seqVal{9, i})
			}
			f := b.Follow[seqVal](Replay[seqVal](Earliest()), Name[seqVal]("durable"))
			l := b.logOf[seqVal]()
			l.mu.Lock()
			var wg sync.WaitGroup
			var progress atomic.Int64
			contenders := 0
			add := func(f func()) {
				contenders++
				wg.Go(func() { f(); progress.Add(1) })
			}
			for p := range 5 {
				add(func() {
					for i := range 20 {
						b.Append(seqVal{p, i})
					}
				})
			}
			replayed := make(chan []Record[seqVal], 1)
			add(func() {
				ch, c := b.Subscribe[Record[seqVal]](Replay[Record[seqVal]](Earliest()), Buffer[Record[seqVal]](1000))
				defer c()
				var got []Record[seqVal]
				for len(got) == 0 || got[len(got)-1].Offset < 10+5*20-1 {
					got = append(got, <-ch)
				}
				replayed <- got
			})
			add(func() { b.Read[seqVal](0, 100) })
			add(func() { b.Logs() })
			add(func() {
				g := b.Follow[seqVal](Replay[seqVal](Earliest()))
				buf := make([]Record[seqVal], 8)
				g.Read(buf)
				g.Close()
			})
			add(func() {
				buf := make([]Record[seqVal], 4)
				f.Read(buf)
				f.Commit(buf[0].Offset)
				b.Subscriptions()
			})
			if keyed {
				// The keyed contenders must park behind the test's hold.
				waitFor(t, "contenders parked", func() bool { return l.mu.parked() >= 5+4 })
			} else {
				waitFor(t, "publishers parked", func() bool { return l.mu.parked() >= 5 })
			}
			l.mu.Unlock()
			waitProgress(t, &wg, &progress, "contenders")
			got := <-replayed
			for i, r := range got {
				if i > 0 && !keyed && r.Offset != got[i-1].Offset+1 {
					t.Fatalf("replay gap: %d after %d", r.Offset, got[i-1].Offset)
				}
			}
			if tail := l.mu.tail(); tail != 10+5*20 {
				t.Fatalf("tail %d, want %d", tail, 10+5*20)
			}
			f.Close()
			// Shutdown while publishers park.
			l.mu.Lock()
			var sg sync.WaitGroup
			for p := range 4 {
				sg.Go(func() {
					for i := range 20 {
						b.Publish(seqVal{p + 10, i})
					}
				})
			}
			waitFor(t, "publishers parked before Shutdown", func() bool { return l.mu.parked() >= 4 })
			shut := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				shut <- b.Shutdown(ctx)
			}()
			l.mu.Unlock()
			done := make(chan struct{})
			go func() { sg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("publishers parked across Shutdown never got through")
			}
			select {
			case err := <-shut:
				if err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Shutdown never returned")
			}
		})
	}
}
