package topic

// Tests of seq's starvation mode: once a woken contender has waited longer
// than seqStarveAfter, those that never parked park too, so that the lock
// goes to the parked ones in the order they parked. The scenarios are placed by holding
// the seqPark's mu (an unlock then swaps and waits to signal) and by
// sleeping only to make a contender's wait at least seqStarveAfter: a
// longer sleep only makes that more true. Timeouts detect a hang; none
// decides a pass.

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// takeLog records, under the seq itself, who took it and whether the seq was
// starving as it held it.
type takeLog struct {
	who      []string
	starving []bool
}

// takeLogged takes q, records name, and lets go.
//
//go:noinline
func takeLogged(q *seq, l *takeLog, name string) {
	q.Lock()
	l.who = append(l.who, name)
	l.starving = append(l.starving, q.starving.Load())
	q.next++
	q.Unlock()
}

// takeAsNewcomer is takeLogged under a name that a goroutine dump shows.
//
//go:noinline
func takeAsNewcomer(q *seq, l *takeLog, name string) { takeLogged(q, l, name) }

// newcomerBlockedOnMu reports whether a goroutine in takeAsNewcomer is in
// lockSlow, blocked to take the seqPark's mu (not parked on the cond).
func newcomerBlockedOnMu() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		s := string(g)
		if strings.Contains(s, "takeAsNewcomer") && strings.Contains(s, "(*seq).lockSlow") &&
			strings.Contains(s, "sync.(*Mutex).Lock") && !strings.Contains(s, "(*Cond).Wait") {
			return true
		}
	}
	return false
}

// makeStarving parks A, then B (each after the other has waited at least
// seqStarveAfter if longB, else only A), behind the test holding q; then
// lets go with the signal held back, takes q again as a barger and lets the
// signal go: A, woken, finds q held after waiting >= seqStarveAfter, sets
// starving and parks again. On return the test holds q, starving is set,
// and A and B are parked.
func makeStarving(t *testing.T, q *seq, l *takeLog, wg *sync.WaitGroup, longB bool) *seqPark {
	t.Helper()
	q.Lock()
	wg.Go(func() { takeLogged(q, l, "A") })
	waitParked(t, q, 1)
	time.Sleep(2 * seqStarveAfter)
	wg.Go(func() { takeLogged(q, l, "B") })
	waitParked(t, q, 2)
	if longB {
		time.Sleep(2 * seqStarveAfter)
	}
	p := q.park.Load()
	p.mu.Lock()
	var ug sync.WaitGroup
	ug.Go(q.Unlock) // swaps, then waits for mu to signal
	waitFor(t, "the swap", func() bool { return q.w.Load()&seqLocked == 0 })
	if q.starving.Load() {
		t.Fatal("starving before any woken contender found the lock held")
	}
	barge(t, q) // nothing is starving yet
	p.mu.Unlock()
	ug.Wait() // A is signalled (the longest parked), finds the barger
	waitFor(t, "starving, set by the woken A", q.starving.Load)
	if n := q.parked(); n != 2 { // mu: A has parked again
		t.Fatalf("%d parked after A lost to the barger, want 2", n)
	}
	if w := q.w.Load(); w&seqWaiting == 0 {
		t.Fatalf("A parked again without the waiting bit: %b", w&3)
	}
	return p
}

// TestSeqStarvingServesTheParkedInTheOrderTheyParked: the doc says
// that once starving, the lock goes to the parked ones in the order they
// parked. A parked first and has waited longest; woken, it lost to a barger
// and parked again. So A must get the lock before B, which parked after it.
// (sync.Mutex queues a woken waiter that lost at the head, for this reason.)
// seq's A calls cond.Wait again and so queues behind B: B, whose wait may be
// short, takes the lock and may clear starving with A still parked, and A
// may lose to a barger again, and again.
func TestSeqStarvingServesTheParkedInTheOrderTheyParked(t *testing.T) {
	for round := range 5 {
		var q seq
		var l takeLog
		var wg sync.WaitGroup
		makeStarving(t, &q, &l, &wg, false)
		q.Unlock()
		waitDone(t, &wg, "after the barger let go")
		if !slices.Equal(l.who, []string{"A", "B"}) {
			t.Fatalf("round %d: starving, the lock went to %v; A parked first and waited longest", round, l.who)
		}
	}
}

// TestSeqStarvingStaysWhileALongWaiterIsParked: A and B have both
// waited longer than seqStarveAfter. Whichever takes the lock first must
// leave starving set (the other still waits, long), the last must clear it,
// and it stays clear once all are done.
func TestSeqStarvingStaysWhileALongWaiterIsParked(t *testing.T) {
	for round := range 5 {
		var q seq
		var l takeLog
		var wg sync.WaitGroup
		makeStarving(t, &q, &l, &wg, true)
		q.Unlock()
		waitDone(t, &wg, "after the barger let go")
		if len(l.who) != 2 {
			t.Fatalf("round %d: takers %v", round, l.who)
		}
		if !l.starving[0] {
			t.Fatalf("round %d: %s took the lock with %s still parked after a long wait, and starving was cleared", round, l.who[0], l.who[1])
		}
		if q.starving.Load() {
			t.Fatalf("round %d: starving still set after the last parked contender took the lock (takers %v, starving as each held it %v)", round, l.who, l.starving)
		}
		if w := q.w.Load(); w&3 != 0 {
			t.Fatalf("round %d: bits %b after all let go", round, w&3)
		}
		// Contention has ended: the next Lock takes the fast path.
		q.Lock()
		q.next++
		q.Unlock()
		if q.starving.Load() {
			t.Fatalf("round %d: starving set by an uncontended Lock", round)
		}
	}
}

// TestSeqANewcomerLeavesAFreeLockToTheParkedWhileStarving: starving,
// with A and B parked, the lock is let go of with its signal held back. A
// newcomer finds it free: it must not take it (not by the fast path, not
// by yielding, not once it has mu) but park, and the parked ones get it
// before the newcomer; everyone gets through; starving ends cleared.
func TestSeqANewcomerLeavesAFreeLockToTheParkedWhileStarving(t *testing.T) {
	for round := range 20 {
		var q seq
		var l takeLog
		var wg sync.WaitGroup
		p := makeStarving(t, &q, &l, &wg, true)
		p.mu.Lock()
		var ug sync.WaitGroup
		ug.Go(q.Unlock) // swaps; the signal waits for mu
		waitFor(t, "the swap", func() bool { return q.w.Load()&seqLocked == 0 })
		var took atomic.Bool
		wg.Go(func() {
			takeAsNewcomer(&q, &l, "N")
			took.Store(true)
		})
		// Either the newcomer takes the free lock (wrong) or it
		// reaches mu to park (right).
		waitFor(t, "the newcomer taking the lock or blocking on mu", func() bool {
			return took.Load() || newcomerBlockedOnMu()
		})
		if took.Load() {
			p.mu.Unlock()
			t.Fatalf("round %d: a newcomer took the free lock while starving, two parked", round)
		}
		if w := q.w.Load(); w&seqLocked != 0 {
			t.Fatalf("round %d: lock taken while all are held back: %b", round, w&3)
		}
		p.mu.Unlock() // the signal, and the newcomer, go
		ug.Wait()
		waitDone(t, &wg, fmt.Sprintf("round %d: after the newcomer", round))
		if len(l.who) != 3 || l.who[2] != "N" {
			t.Fatalf("round %d: starving, the lock went to %v; the newcomer N must come after the parked A and B", round, l.who)
		}
		if q.starving.Load() {
			t.Fatalf("round %d: starving still set after all took the lock (%v, %v)", round, l.who, l.starving)
		}
		if w := q.w.Load(); w&3 != 0 {
			t.Fatalf("round %d: bits %b after all let go", round, w&3)
		}
	}
}

// TestSeqNewcomersParkOnAFreeLockAndAllGetThrough: many newcomers
// arrive while starving and the lock is free (the signal held back): those
// that reach mu park on the free lock; once the signal goes, every one of
// them is woken in turn, and starving ends cleared with the bits clear.
func TestSeqNewcomersParkOnAFreeLockAndAllGetThrough(t *testing.T) {
	for round := range 10 {
		var q seq
		var l takeLog
		var wg sync.WaitGroup
		p := makeStarving(t, &q, &l, &wg, true)
		p.mu.Lock()
		var ug sync.WaitGroup
		ug.Go(q.Unlock)
		waitFor(t, "the swap", func() bool { return q.w.Load()&seqLocked == 0 })
		n := 3 + round%4
		for i := range n {
			wg.Go(func() { takeAsNewcomer(&q, &l, fmt.Sprint("N", i)) })
		}
		time.Sleep(time.Millisecond) // let some reach mu: not needed to pass
		p.mu.Unlock()
		ug.Wait()
		waitDone(t, &wg, fmt.Sprintf("round %d", round))
		if len(l.who) != n+2 {
			t.Fatalf("round %d: %d took the lock, want %d", round, len(l.who), n+2)
		}
		if q.starving.Load() {
			t.Fatalf("round %d: starving still set after all took the lock (%v)", round, l.who)
		}
		if w := q.w.Load(); w&3 != 0 {
			t.Fatalf("round %d: bits %b after all let go", round, w&3)
		}
		if got := q.tail(); got != uint64(n+2) {
			t.Fatalf("round %d: tail %d, want %d", round, got, n+2)
		}
	}
}

// hogLocker is what the hog harness runs against: seq, or sync.Mutex for
// comparison.
type hogLocker interface {
	Lock()
	Unlock()
}

// runHogs runs hogs goroutines that take the lock in a loop (holding it for
// a little work, now and then across a yield, so that some park), beside a
// victim that takes it rounds times; it returns the victim's sorted waits.
// A victim's Lock that does not return in 10 s fails the test (starved or
// hung). check runs in each section, alone.
func runHogs(t *testing.T, mu hogLocker, hogs, rounds int, check func()) []time.Duration {
	t.Helper()
	var stop atomic.Bool
	var hg sync.WaitGroup
	var sink atomic.Int64
	for h := range hogs {
		hg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				mu.Lock()
				check()
				x := 0
				for j := range 200 {
					x += j
				}
				sink.Add(int64(x))
				if (i+h)%32 == 0 {
					runtime.Gosched()
				}
				mu.Unlock()
			}
		})
	}
	defer func() { stop.Store(true); hg.Wait() }()
	waits := make([]time.Duration, 0, rounds)
	for k := range rounds {
		time.Sleep(200 * time.Microsecond)
		start := time.Now()
		done := make(chan struct{})
		go func() {
			mu.Lock()
			check()
			mu.Unlock()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the victim waited 10 s beside %d hogs (worst so far %v)", k, hogs, slices.Max(append(waits, 0)))
		}
		waits = append(waits, time.Since(start))
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	return waits
}

func percentiles(w []time.Duration) string {
	return fmt.Sprintf("p50 %v p99 %v max %v", w[len(w)/2], w[len(w)*99/100], w[len(w)-1])
}

// TestSeqHogsDoNotStarveAVictim: with starvation mode, a victim beside
// hogs (more than cores) must get the lock within the hang detector every
// time; its waits are logged beside sync.Mutex's in the same harness. After
// the hogs stop, the sections all ran alone, and starving is clear.
func TestSeqHogsDoNotStarveAVictim(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for _, hogs := range []int{1, 2, 2 * runtime.GOMAXPROCS(0), 4*runtime.GOMAXPROCS(0) + 1} {
		t.Run(fmt.Sprint("hogs=", hogs), func(t *testing.T) {
			var q seq
			var inside atomic.Int32
			var sections int64
			check := func() {
				if inside.Add(1) != 1 {
					t.Error("two in a section")
				}
				sections++ // plain: the race detector checks exclusion
				q.next++
				inside.Add(-1)
			}
			waits := runHogs(t, &q, hogs, rounds, check)
			var m sync.Mutex
			mwaits := runHogs(t, &m, hogs, rounds, func() {})
			t.Logf("victim's wait beside %d hogs: seq %s; sync.Mutex %s", hogs, percentiles(waits), percentiles(mwaits))
			if q.starving.Load() {
				t.Fatal("starving still set after every goroutine let go")
			}
			if w := q.w.Load(); w&3 != 0 {
				t.Fatalf("bits %b after every goroutine let go", w&3)
			}
			if q.tail() != uint64(sections) {
				t.Fatalf("tail %d, %d sections", q.tail(), sections)
			}
			if n := q.parked(); n != 0 {
				t.Fatalf("%d parked after every goroutine let go", n)
			}
		})
	}
}

// TestSeqStarvingEndsWhenContentionEnds: rounds of heavy contention
// (sections held across yields, so that woken contenders wait long and set
// starving), each followed by quiet: once all have let go, starving is
// clear, no one is parked, and the next Lock takes the fast path.
func TestSeqStarvingEndsWhenContentionEnds(t *testing.T) {
	var q seq
	var plain int
	var set atomic.Int64 // rounds in which starving was seen set
	rounds, each := 20, 300
	if testing.Short() {
		rounds = 5
	}
	for r := range rounds {
		var wg sync.WaitGroup
		var progress atomic.Int64
		n := 3*runtime.GOMAXPROCS(0) + r%4
		var seen atomic.Bool
		for g := range n {
			wg.Go(func() {
				for i := range each {
					q.Lock()
					plain++
					q.next++
					if q.starving.Load() {
						seen.Store(true)
					}
					if (i+g)%8 == 0 {
						time.Sleep(50 * time.Microsecond) // long section: waits pass 1 ms
					}
					q.Unlock()
					progress.Add(1)
				}
			})
		}
		waitProgress(t, &wg, &progress, fmt.Sprintf("round %d", r))
		if seen.Load() {
			set.Add(1)
		}
		if q.starving.Load() {
			t.Fatalf("round %d: starving still set after contention ended", r)
		}
		if n := q.parked(); n != 0 {
			t.Fatalf("round %d: %d parked after all let go", r, n)
		}
		if w := q.w.Load(); w&3 != 0 {
			t.Fatalf("round %d: bits %b after all let go", r, w&3)
		}
	}
	if got, want := q.tail(), uint64(plain); got != want {
		t.Fatalf("tail %d, %d sections", got, want)
	}
	t.Logf("starving seen set in %d of %d rounds", set.Load(), rounds)
}

// barge takes q as a contender that never parks: the test may hold the
// seqPark's mu, which parking would wait for. It fails after 10 s.
func barge(t *testing.T, q *seq) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if w := q.w.Load(); w&seqLocked == 0 && q.w.CompareAndSwap(w, w|seqLocked) {
			q.next = w >> seqShift
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("barging: the lock not free for 10 s")
		}
		runtime.Gosched()
	}
}

// yieldUntil is waitFor without sleeping, where a contender's wait is
// meant to stay short: it yields until cond holds, failing after 10 s.
func yieldUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
		runtime.Gosched()
	}
}

// TestSeqALongWaiterIsNotPassedOverForever: A has waited longer than
// seqStarveAfter. In each cycle a contender B parks behind A; the holder
// lets go and a barger takes the lock before A's signal arrives; A, woken,
// finds it held and sets starving. From then on the lock must go to A
// first, the one parked longest: the cycle must end with A holding it. If
// instead B (parked after A) is served first, B, whose own wait is short,
// clears starving, and the next barger beats A again: A is passed over
// without bound. The test fails after 200 such cycles. (It passes at once
// when A is served first; if B's wait happens to pass seqStarveAfter, B
// leaves starving set and A gets the lock next, which also ends it.)
func TestSeqALongWaiterIsNotPassedOverForever(t *testing.T) {
	const cycles = 200
	var q seq
	var wg sync.WaitGroup
	var aDone atomic.Bool
	q.Lock() // the test holds it
	wg.Go(func() { q.Lock(); aDone.Store(true); q.next++; q.Unlock() })
	waitParked(t, &q, 1)
	time.Sleep(2 * seqStarveAfter)
	p := q.park.Load()
	release := q.Unlock // lets go of the lock as its current holder
	var gates []func()  // each lets a B's section end, once
	defer func() {
		for _, g := range gates {
			g()
		}
		waitDone(t, &wg, "the contenders")
		if q.starving.Load() {
			t.Error("starving still set after all let go")
		}
	}()
	passed, start, why := 0, time.Now(), ""
	for ; passed < cycles; passed++ {
		gate, got := make(chan struct{}), make(chan struct{})
		open := sync.OnceFunc(func() { close(gate) })
		gates = append(gates, open)
		wg.Go(func() { q.Lock(); q.next++; close(got); <-gate; q.Unlock() })
		yieldUntil(t, "B parked behind A", func() bool { return q.parked() == 2 })
		p.mu.Lock()
		var ug sync.WaitGroup
		ug.Go(release) // swaps; its signal waits for mu
		yieldUntil(t, "the swap", func() bool { return q.w.Load()&seqLocked == 0 })
		if q.starving.Load() {
			// The last B left starving set: A is served next.
			why = "B left starving set (its wait passed seqStarveAfter)"
			p.mu.Unlock()
			ug.Wait()
			break
		}
		barge(t, &q) // before A's signal; starving is clear
		p.mu.Unlock()
		ug.Wait()
		yieldUntil(t, "A, woken, finding the barger", q.starving.Load)
		if n := q.parked(); n != 2 {
			t.Fatalf("cycle %d: %d parked, want A and B", passed, n)
		}
		q.Unlock() // starving: to A, parked first
		yieldUntil(t, "A or B taking the lock", func() bool {
			select {
			case <-got:
				return true
			default:
				return aDone.Load()
			}
		})
		if aDone.Load() {
			why = "A was served before B"
			break
		}
		// B holds it, having cleared starving (its wait was short): the
		// next cycle lets go of it as B.
		release = open
	}
	if passed == cycles {
		t.Fatalf("A, parked first and starving, was passed over %d times in %v by contenders that parked after it", passed, time.Since(start))
	}
	t.Logf("A got the lock after being passed over %d times: %s", passed, why)
}

// starveVal is the retained type of
// TestSeqAPublisherInALoopDoesNotStarveAnother.
type starveVal struct{ P, I int }

// TestSeqAPublisherInALoopDoesNotStarveAnother: one goroutine
// publishes a retained type in a loop, each publication holding the
// sequencing point while it sends to many subscriptions of Record[T];
// another publishes now and then, each time once the first is publishing
// again. It counts the looping publications made while one of the other's
// waited: with sync.Mutex (whose starvation mode hands the lock to a waiter
// after 1 ms) a few; a contender that is only woken to race a publisher
// that takes the lock again the moment it lets go waits for hundreds. The
// bound is on that count, not on time; the 60 s timeout only detects a hang.
func TestSeqAPublisherInALoopDoesNotStarveAnother(t *testing.T) {
	var b Broker
	b.Retain[starveVal](Retention{Count: 64, NoTime: true})
	// Each publication must last long beside the scheduler's wake-ups,
	// which the wait before the hand-over adds to its millisecond: 64
	// publications are the bound. To 5,000 subscriptions, without the
	// race detector, on a 2-core VM whose idle cores are slow to wake, a
	// wait of 4 ms spanned 89 publications and failed it in half the
	// runs; to 20,000 a publication is four times as long. The detector
	// slows each publication more than that, and -short runs it so.
	subs := 20000
	if testing.Short() && raceEnabled {
		subs = 5000
	}
	for range subs {
		_, c := b.Subscribe[Record[starveVal]](Buffer[Record[starveVal]](1))
		defer c()
	}
	var stop atomic.Bool
	var published atomic.Int64
	var hg sync.WaitGroup
	hg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			b.Publish(starveVal{0, i})
			published.Add(1)
		}
	})
	defer func() { stop.Store(true); hg.Wait() }()
	const rounds, fair = 50, 64
	deadline := time.Now().Add(60 * time.Second)
	var worst time.Duration
	for k := range rounds {
		// Wait for the looping publisher to publish twice more: it is
		// taking the lock again as it lets go of it.
		for p := published.Load(); published.Load() < p+2; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the looping publisher stalled", k)
			}
			time.Sleep(50 * time.Microsecond)
		}
		// Counted from within the other publisher's goroutine, around its
		// Publish alone: not the time the goroutine takes to start, or the
		// test to see it end, which a loaded machine stretches.
		var start, end time.Time
		var before, after int64
		done := make(chan struct{})
		go func() {
			start, before = time.Now(), published.Load()
			b.Publish(starveVal{1, k})
			after, end = published.Load(), time.Now()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("round %d: the other publisher never got through (worst wait %v) beside one publishing in a loop (%d publications): starved", k, worst, published.Load())
		}
		wait := end.Sub(start)
		worst = max(worst, wait)
		if n := after - before; n > fair {
			t.Fatalf("round %d: one publication waited %v, while the looping publisher published %d times (more than %d): starved", k, wait, n, fair)
		}
	}
	t.Logf("%d publications beside the loop, worst wait %v; the loop published %d", rounds, worst, published.Load())
}
