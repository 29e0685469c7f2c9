package topic

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// guardSums returns what set e of g counted in, and out on the Ps' own
// counters and on the striped ones.
func guardSums(g *guard, e int) (in, outPinned, outStriped int64) {
	for i := e; i < len(g.pins); i += 2 {
		outPinned += atomic.LoadInt64(&g.pins[i].n)
	}
	for i := range g.out[e] {
		outStriped += atomic.LoadInt64(&g.out[e][i].n)
	}
	for i := range g.in[e] {
		in += atomic.LoadInt64(&g.in[e][i].n)
	}
	return in, outPinned, outStriped
}

// checkDrained fails t unless every set of g has counted out every
// publisher it counted in.
func checkDrained(t *testing.T, g *guard) {
	t.Helper()
	for e := range 2 {
		if in, p, s := guardSums(g, e); in != p+s {
			t.Errorf("set %d counted %d publishers in and %d out (%d on the Ps' counters, %d striped) after every section ended", e, in, p+s, p, s)
		}
	}
}

func TestGuardCountsOutOnTheCounterOfItsP(t *testing.T) {
	g := newGuard()
	if len(g.pins) != 2*min(runtime.GOMAXPROCS(0), maxPins) {
		t.Fatalf("a guard has %d counters of Ps, want two for each of the %d Ps", len(g.pins), runtime.GOMAXPROCS(0))
	}
	e := g.enter()
	if in, p, s := guardSums(g, int(e)); in != 1 || p+s != 0 {
		t.Errorf("inside: counted %d in and %d out, want 1 and 0", in, p+s)
	}
	if g.drained(e) {
		t.Error("a set with a publisher inside is drained")
	}
	g.exit(e)
	if in, p, s := guardSums(g, int(e)); in != 1 || p != 1 || s != 0 {
		t.Errorf("after exit: counted %d in, %d out on the Ps' counters and %d striped, want 1, 1 and 0", in, p, s)
	}
	if !g.drained(e) {
		t.Error("a set every publisher left is not drained")
	}
	// A P without a counter of its own (GOMAXPROCS raised after the guard
	// was made) counts out into the striped counters.
	g = &guard{}
	e = g.enter()
	g.exit(e)
	if in, p, s := guardSums(g, int(e)); in != 1 || p != 0 || s != 1 {
		t.Errorf("with no counters of Ps: counted %d in, %d out on the Ps' counters and %d striped, want 1, 0 and 1", in, p, s)
	}
	g.wait()
}

// TestGuardCountsEveryPublisherOutExactly runs more goroutines than Ps in
// and out of the guard: the plain increment of a P's counter must never lose
// another goroutine's, so that the counts out add up to the counts in. (Under
// the race detector it also checks that a P's increments are ordered.)
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
	var in, out int64
	for e := range 2 {
		i, p, s := guardSums(g, e)
		in, out = in+i, out+p+s
	}
	if want := int64(goroutines * rounds); in != want || out != want {
		t.Errorf("counted %d in and %d out, want %d each", in, out, want)
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
