package topic

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestGuardPinsShortSectionsOnly(t *testing.T) {
	g := newGuard()
	if len(g.pins) == 0 {
		t.Fatal("a guard has no pinned counters")
	}
	for _, c := range []struct {
		sends  int
		pinned bool
	}{{0, true}, {1, true}, {pinnedMax, true}, {pinnedMax + 1, false}, {10000, false}} {
		s := g.enter(c.sends)
		if s.pinned != c.pinned {
			t.Errorf("a section of %d sends pinned: %v, want %v", c.sends, s.pinned, c.pinned)
		}
		if got := atomic.LoadInt64(s.n); got != 1 {
			t.Errorf("a section of %d sends: its counter is %d inside, want 1", c.sends, got)
		}
		s.exit()
		if got := atomic.LoadInt64(s.n); got != 0 {
			t.Errorf("a section of %d sends: its counter is %d after exit, want 0", c.sends, got)
		}
	}
	// A P without a counter of its own (GOMAXPROCS raised after the guard
	// was made) enters the striped counters.
	g = &guard{}
	s := g.enter(1)
	if s.pinned {
		t.Error("a section pinned with no pinned counters")
	}
	s.exit()
	g.wait()
}

// TestGuardPinnedCounterHasOneWriterAtATime runs more goroutines than Ps in
// pinned sections: each must find its counter at one inside, its own count
// alone, or exit's plain store would lose another's. (Under the race
// detector it also checks that exit's decrement is ordered before the next
// section's increment on that P.)
func TestGuardPinnedCounterHasOneWriterAtATime(t *testing.T) {
	rounds := 100000
	if testing.Short() {
		rounds = 10000
	}
	g := newGuard()
	var shared atomic.Int64
	var wg sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for range rounds {
				s := g.enter(1)
				if n := atomic.LoadInt64(s.n); s.pinned && n != 1 {
					shared.Add(1)
				}
				s.exit()
			}
		})
	}
	wg.Wait()
	if n := shared.Load(); n != 0 {
		t.Errorf("%d sections found another inside their pinned counter", n)
	}
	for i := range g.pins {
		if n := atomic.LoadInt64(&g.pins[i].n); n != 0 {
			t.Errorf("pinned counter %d is %d after every section ended", i, n)
		}
	}
}

// TestGuardWaitOutlastsEverySectionThatSawTheRoute runs publishers that, in
// short (pinned) and long (striped) sections, load a route and send on the
// channel it holds, against a canceller that replaces the route, waits and
// closes the channel it replaced: a wait that returned while a section that
// loaded the old route was still inside would let that section send on a
// closed channel, which panics.
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
	for i := range max(2, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			sends := 1
			if i%2 == 1 {
				sends = pinnedMax + 1 // a long section: striped
			}
			for n := 0; !stop.Load(); n++ {
				s := g.enter(sends)
				ch := *route.Load()
				select {
				case ch <- n:
					sent.Add(1)
				default:
				}
				s.exit()
				if n%64 == 0 {
					runtime.Gosched() // let the canceller run on one P too
				}
			}
		})
	}
	for range rounds {
		next := make(chan int, 1)
		old := route.Swap(&next)
		g.wait()
		close(*old)
	}
	stop.Store(true)
	wg.Wait()
	for i := range g.pins {
		if n := atomic.LoadInt64(&g.pins[i].n); n != 0 {
			t.Errorf("pinned counter %d is %d after every section ended", i, n)
		}
	}
	for s := range g.sets {
		for i := range g.sets[s] {
			if n := atomic.LoadInt64(&g.sets[s][i].n); n != 0 {
				t.Errorf("striped counter %d of set %d is %d after every section ended", i, s, n)
			}
		}
	}
	if sent.Load() == 0 {
		t.Error("no section sent anything: the test tested nothing")
	}
}
