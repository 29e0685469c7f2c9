package topic

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// guardSums returns what set e of g counted in and out.
func guardSums(g *guard, e int) (in, out int64) {
	for i := range g.out[e] {
		out += atomic.LoadInt64(&g.out[e][i].n)
	}
	for i := range g.in[e] {
		in += atomic.LoadInt64(&g.in[e][i].n)
	}
	return in, out
}

// guardSlots returns how many sections g's slots have ended (each took its
// slot from even to odd and gave it back) and how many slots are held.
func guardSlots(g *guard) (ended, held int64) {
	for i := range g.own {
		n := atomic.LoadInt64(&g.own[i].n)
		ended += n / 2
		held += n & 1
	}
	return ended, held
}

// checkDrained fails t unless every section of g has ended: no slot held,
// and every set has counted out every publisher it counted in.
func checkDrained(t *testing.T, g *guard) {
	t.Helper()
	if _, held := guardSlots(g); held != 0 {
		t.Errorf("%d slots held after every section ended", held)
	}
	for e := range 2 {
		if in, out := guardSums(g, e); in != out {
			t.Errorf("set %d counted %d publishers in and %d out after every section ended", e, in, out)
		}
	}
}

// guardWaitReturns reports whether g.wait returns within d, and if not,
// returns a channel closed when it does.
func guardWaitReturns(g *guard, d time.Duration) (bool, <-chan struct{}) {
	returned := make(chan struct{})
	go func() {
		g.wait()
		close(returned)
	}()
	select {
	case <-returned:
		return true, returned
	case <-time.After(d):
		return false, returned
	}
}

// checkWaitOutlasts fails t if a wait of g returns within 50 ms while
// inside is inside the guard, or not within 5 s once leave has let it out.
func checkWaitOutlasts(t *testing.T, g *guard, inside string, leave func()) {
	t.Helper()
	returned, done := guardWaitReturns(g, 50*time.Millisecond)
	if returned {
		t.Errorf("a wait returned while %s was inside", inside)
		return
	}
	leave()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the wait did not return 5 s after %s left", inside)
	}
}

func TestGuardSectionHoldsItsSlotAndASectionWithinItCountsIntoTheSet(t *testing.T) {
	g := newGuard()
	c := g.enter()
	if c >= inSet {
		t.Fatalf("the first section of a guard counted into set %d: its slot was free", c-inSet)
	}
	if n := atomic.LoadInt64(&g.own[c].n); n != 1 {
		t.Errorf("inside: the slot is %d, want 1 (held)", n)
	}
	// A section within it finds its slot held: it counts into the set.
	inner := g.enter()
	e := int(g.epoch.Load() & 1)
	if inner != inSet+section(e) {
		t.Fatalf("a section within a section is %d, want the current set %d", inner, inSet+section(e))
	}
	if in, out := guardSums(g, e); in != 1 || out != 0 {
		t.Errorf("inside both: set %d counted %d in and %d out, want 1 and 0", e, in, out)
	}
	if g.drained(uint32(e)) {
		t.Error("a set with a publisher inside is drained")
	}
	g.exit(inner)
	if in, out := guardSums(g, e); in != 1 || out != 1 {
		t.Errorf("after the inner exit: set %d counted %d in and %d out, want 1 and 1", e, in, out)
	}
	checkWaitOutlasts(t, g, "a section that held its slot", func() { g.exit(c) })
	if n := atomic.LoadInt64(&g.own[c].n); n != 2 {
		t.Errorf("after exit: the slot is %d, want 2 (given back)", n)
	}
	checkDrained(t, g)
}

// Every slot held (by other goroutines of the same stripes): a section
// counts into the current set, and a wait outlasts it there.
func TestGuardSectionCountsIntoTheSetWhenItsSlotIsHeld(t *testing.T) {
	g := newGuard()
	for i := range g.own {
		g.own[i].n = 1
	}
	c := g.enter()
	e := g.epoch.Load() & 1
	if c != inSet+section(e) {
		t.Fatalf("a section whose slot is held is %d, want the current set %d", c, inSet+section(e))
	}
	for i := range g.own {
		if n := g.own[i].n; n != 1 {
			t.Errorf("slot %d is %d, want 1: a section took a held slot", i, n)
		}
		g.own[i].n = 2 // the holders leave
	}
	checkWaitOutlasts(t, g, "a section counted into a set", func() { g.exit(c) })
	checkDrained(t, g)
}

// TestGuardCountsEveryPublisherOutExactly runs more goroutines than Ps in
// and out of the guard: the plain increment that gives a slot back must
// never lose another section's, so that every section is counted once, on
// its slot or in and out of a set. (Under the race detector it also checks
// that a slot's give-back is ordered after its take.)
func TestGuardCountsEveryPublisherOutExactly(t *testing.T) {
	rounds := 100000
	if testing.Short() {
		rounds = 10000
	}
	g := newGuard()
	var wg sync.WaitGroup
	goroutines := 4 * runtime.GOMAXPROCS(0)
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				g.exit(g.enter())
			}
		})
	}
	wg.Wait()
	ended, held := guardSlots(g)
	var in, out int64
	for e := range 2 {
		i, o := guardSums(g, e)
		in, out = in+i, out+o
	}
	if want := int64(goroutines * rounds); held != 0 || in != out || ended+in != want {
		t.Errorf("%d sections ended on slots, %d held, %d counted in and %d out of the sets: want %d sections, none held", ended, held, in, out, want)
	}
}

// TestGuardWaitOutlastsEverySectionThatSawTheRoute runs publishers that load
// a route inside the guard and send on the channel it holds, against a
// canceller that replaces the route, waits and closes the channel it
// replaced: a wait that returned while a section that loaded the old route
// was still inside would let that section send on a closed channel, which
// panics.
func TestGuardWaitOutlastsEverySectionThatSawTheRoute(t *testing.T) {
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	g := newGuard()
	var route atomic.Pointer[chan int]
	first := make(chan int, 1)
	route.Store(&first)
	var stop atomic.Bool
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				e := g.enter()
				ch := *route.Load()
				select {
				case ch <- n:
					sent.Add(1)
				default:
				}
				g.exit(e)
				if n%64 == 0 {
					runtime.Gosched() // let the canceller run on one P too
				}
			}
		})
	}
	// The rounds take a few milliseconds: they start once a publisher has
	// sent, and go on until one has sent during them, however late the
	// publishers are scheduled (on a P another test's goroutine keeps busy,
	// the rounds once seemed to end before any publisher ran: the test
	// failed in 0.00 s).
	for sent.Load() == 0 {
		runtime.Gosched()
	}
	before := sent.Load()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < rounds || sent.Load() == before && time.Now().Before(deadline); i++ {
		next := make(chan int, 1)
		old := route.Swap(&next)
		g.wait()
		close(*old)
	}
	stop.Store(true)
	wg.Wait()
	checkDrained(t, g)
	if sent.Load() == before {
		t.Error("no section sent anything during the rounds: the test tested nothing")
	}
}

// stormState stands for what a route lists: a publisher inside the guard that
// loaded it uses it until it leaves; a canceller that replaced it and waited
// for the guard must find nobody using it any more.
type stormState struct {
	users  atomic.Int64
	closed atomic.Bool
}

// stormResult is what guardStorm saw.
type stormResult struct {
	violations int64 // sections that used a state after a wait that should have outlasted them
	waits      int   // waits the canceller made
}

// guardStorm runs publishers in sections against a canceller that
// replaces the state, waits for the guard and then checks that nobody uses
// the old state (and marks it closed, which a publisher still inside would
// see), for d and at least minWaits waits, once every publisher has made a
// section. Every fourth section has a section within it, which finds its
// slot held and counts into a set, so that both ways are waited for. During
// the run, churn (if not nil) is called in a loop on a goroutine of its own.
func guardStorm(t *testing.T, g *guard, publishers int, d time.Duration, minWaits int, churn func(i int)) stormResult {
	t.Helper()
	var cur atomic.Pointer[stormState]
	cur.Store(new(stormState))
	var stop atomic.Bool
	var bad atomic.Int64
	var started sync.WaitGroup
	var wg sync.WaitGroup
	for range publishers {
		started.Add(1)
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				e := g.enter()
				var inner section
				if n%4 == 0 {
					inner = g.enter()
				}
				st := cur.Load()
				st.users.Add(1)
				// Some work inside, as a fan-out would do, so that a
				// wait that returns early finds the state in use.
				for range 4 {
					if st.closed.Load() {
						bad.Add(1)
					}
				}
				st.users.Add(-1)
				if n%4 == 0 {
					g.exit(inner)
				}
				g.exit(e)
				if n == 0 {
					started.Done()
				}
				if n%128 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	started.Wait()
	if churn != nil {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				churn(i)
			}
		})
	}
	waits := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for start := time.Now(); waits < minWaits || time.Since(start) < d; waits++ {
			old := cur.Swap(new(stormState))
			g.wait()
			if old.users.Load() != 0 {
				bad.Add(1)
			}
			old.closed.Store(true)
		}
	}()
	select {
	case <-done:
	case <-time.After(d + 20*time.Second):
		stop.Store(true)
		t.Fatalf("the canceller's waits did not end within 20 s of the run: a set never drained")
	}
	stop.Store(true)
	wg.Wait()
	checkDrained(t, g)
	return stormResult{bad.Load(), waits}
}

func roundsFor(long, short int) int {
	if testing.Short() {
		return short
	}
	return long
}

func stormDuration() time.Duration {
	if testing.Short() {
		return 100 * time.Millisecond
	}
	return 400 * time.Millisecond
}

// checkStorm reports what a storm found wrong, and a storm that tested
// nothing: no wait, no section on a slot, or none counted into a set.
func checkStorm(t *testing.T, g *guard, st stormResult) {
	t.Helper()
	if st.violations != 0 {
		t.Errorf("%d times a section still used a state after the wait that should have outlasted it", st.violations)
	}
	slots, _ := guardSlots(g)
	var sets int64
	for e := range 2 {
		in, _ := guardSums(g, e)
		sets += in
	}
	if st.waits == 0 || slots == 0 || sets == 0 {
		t.Errorf("the storm tested too little: %d waits, %d sections on slots, %d counted into the sets", st.waits, slots, sets)
	}
	t.Logf("%d waits, %d sections on slots, %d counted into the sets", st.waits, slots, sets)
}

// A wait must cover every section while GOMAXPROCS keeps changing under the
// publishers and the canceller (a guard with counters per P, made for the
// Ps there were when it was made, would miss the sections of Ps added
// since; the slots are per stripe, and the test stays).
func TestGuardWaitCoversEverySectionWhileGOMAXPROCSIsRaisedAndLowered(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	g := newGuard()
	runtime.GOMAXPROCS(6)
	procs := []int{6, 1, 3, 8, 2, 5}
	st := guardStorm(t, g, 8, stormDuration(), 200, func(i int) {
		runtime.GOMAXPROCS(procs[i%len(procs)])
		time.Sleep(50 * time.Microsecond)
	})
	checkStorm(t, g, st)
}

// Far more Ps than stripes (the runtime allows Ps beyond the CPUs): every
// slot is contended, and many sections count into the sets.
func TestGuardWithManyMorePsThanStripesCoversEverySection(t *testing.T) {
	procs := 8 * guardStripes
	prev := runtime.GOMAXPROCS(procs)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	g := newGuard()
	// Few waits: with hundreds of Ps on a few CPUs, a section's thread is
	// often descheduled by the OS, and a wait lasts that long.
	st := guardStorm(t, g, procs, stormDuration()/2, 1, nil)
	checkStorm(t, g, st)
}

// Many more publishers than stripes: goroutines that share a stripe take
// turns on its slot, and the plain increment that gives it back must never
// lose another's take (a slot that drifts either stays odd, and the wait
// hangs, or turns even too early, and the wait returns too soon).
func TestGuardCountersStayExactWithManyMorePublishersThanPs(t *testing.T) {
	g := newGuard()
	st := guardStorm(t, g, 32*runtime.GOMAXPROCS(0), stormDuration(), 200, nil)
	checkStorm(t, g, st)
}

// A publisher may read the epoch, then be held up (preempted, or its thread
// descheduled) before it counts itself in: meanwhile a whole wait may pass,
// and it then counts into the set of an epoch that is no longer current, and
// loads the route. The next wait must still wait for it: that is why a wait
// flips twice. The test plays that publisher step by step (on the sets, as
// when its slot is held), counting out through exit and on another stripe
// (its stack moved meanwhile).
func TestGuardWaitOutlastsAPublisherThatCountedInAfterAWholeWaitPassed(t *testing.T) {
	for _, viaExit := range []bool{true, false} {
		g := newGuard()
		g.wait()                          // any epoch
		e := g.epoch.Load() & 1           // the publisher reads the epoch, and is held up
		g.wait()                          // a whole wait passes: it was not inside yet
		atomic.AddInt64(&g.in[e][0].n, 1) // it counts itself in, and then loads the route
		returned := make(chan struct{})
		go func() {
			g.wait() // the next canceller, who stored a route without the subscription
			close(returned)
		}()
		select {
		case <-returned:
			t.Errorf("exit %v: a wait returned while a publisher that counted in after the wait before it was still inside", viaExit)
		case <-time.After(50 * time.Millisecond):
		}
		if viaExit { // it leaves
			g.exit(inSet + section(e))
		} else {
			atomic.AddInt64(&g.out[e][guardStripes-1].n, 1)
		}
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatalf("exit %v: the wait did not return 5 s after the publisher left", viaExit)
		}
	}
}

// drained must read the outs before the ins: a publisher may read the
// epoch, be held up while a canceller flips it, and then count into the set
// the canceller waits on, load the route, send and count out, all while the
// canceller reads the counters. Read the other way round, the ins of a scan
// miss such a publisher that the outs then count, and one of them makes up
// for a publisher still inside: the wait returns early. Here one publisher
// stays inside for the whole test while a stream of such held-up publishers
// (one goroutine playing many, on every stripe, paced from none to a few
// microseconds apart so that now and then one lands in a scan) goes through
// the same set. Catches the mutant of drained that sums the ins first (it
// failed 10 runs of 10, with -short too, and 5 of 5 with -race).
func TestGuardWaitDoesNotReturnWhileHeldUpPublishersComeAndGoBesideOneStillInside(t *testing.T) {
	d := 300 * time.Millisecond
	if testing.Short() {
		d = 150 * time.Millisecond
	}
	g := newGuard()
	// One publisher inside a set for the whole test (its slot was held).
	e := g.epoch.Load() & 1
	atomic.AddInt64(&g.in[e][0].n, 1)
	c := inSet + section(e)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var stale atomic.Int64
	for w := range max(1, runtime.GOMAXPROCS(0)-1) { // a P left for the canceller
		wg.Go(func() {
			for n := w; !stop.Load(); n++ {
				// A publisher that read the epoch before the flip, held
				// up until now: it counts in, loads the route, sends,
				// counts out.
				atomic.AddInt64(&g.in[e][n%guardStripes].n, 1) // publishers of many stacks
				spinWork(n % 64)
				g.exit(c)
				stale.Add(1)
				spinWork(1 << (n % 13))
			}
		})
	}
	returned := make(chan struct{})
	go func() {
		g.wait()
		close(returned)
	}()
	select {
	case <-returned:
		t.Errorf("a wait returned while a publisher was still inside (after %d held-up publishers came and went)", stale.Load())
	case <-time.After(d):
	}
	stop.Store(true)
	wg.Wait()
	g.exit(c)
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not return 5 s after the last publisher left")
	}
	checkDrained(t, g)
}

var workSink atomic.Int64

// spinWork spins for about n loads.
func spinWork(n int) {
	for range n {
		workSink.Load()
	}
}

// Publications and cancels inside a synctest bubble: Ps' counters there,
// cancellers spinning with Gosched while they wait, subscriptions of every
// policy made and cancelled, then Shutdown. No send may reach a closed
// channel, every channel must be closed once its cancel returns, and the
// bubble must end (nothing left durably blocked). (The fake clock does not
// move while the publishers run: nothing here sleeps.)
func TestGuardWorksInsideASynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Broker
		for range 8 {
			b.Subscribe(Buffer[any](1)) // boxed beside the plain ones
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		// No more publishers than Ps: a canceller's Gosched waits behind
		// every runnable publisher's time slice.
		for w := range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for i := w; !stop.Load(); i++ {
					b.Publish(raceInt(i))
				}
			})
		}
		for r := range roundsFor(60, 20) {
			var opts []Option[raceInt]
			switch r % 3 {
			case 1:
				opts = append(opts, Overflow[raceInt](DropOldest))
			case 2:
				opts = append(opts, OnLoss(func(Loss[raceInt]) {}))
			}
			ch, cancel := b.Subscribe(append(opts, Buffer[raceInt](2))...)
			done := make(chan int)
			go func() {
				n := 0
				for range ch {
					n++
				}
				done <- n
			}()
			for range r % 5 {
				runtime.Gosched()
			}
			cancel()
			<-done // the channel is closed
		}
		stop.Store(true)
		wg.Wait()
		if err := b.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		checkDrained(t, b.table.Load().guard)
	})
}
