package topic

// Adversarial review of the publish guard (first written for the design
// whose publishers counted out into counters of their Ps, 6ee31f5 and its
// rework; kept for the slots that replaced it): each test attacks how a wait
// covers every section, or how cancel and Shutdown meet publications on
// every path, or what the guard does to the scheduler.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type (
	rgInt int
	rgOut int
	rgStr int
)

func (v rgStr) String() string { return "rgStr" }

// rgState stands for what a route lists: a publisher inside the guard that
// loaded it uses it until it leaves; a canceller that replaced it and waited
// for the guard must find nobody using it any more.
type rgState struct {
	users  atomic.Int64
	closed atomic.Bool
}

// rgStorm is what rgGuardStorm saw.
type rgStorm struct {
	violations int64 // sections that used a state after a wait that should have outlasted them
	waits      int   // waits the canceller made
}

// rgGuardStorm runs publishers in sections against a canceller that
// replaces the state, waits for the guard and then checks that nobody uses
// the old state (and marks it closed, which a publisher still inside would
// see), for d and at least minWaits waits, once every publisher has made a
// section. Every fourth section has a section within it, which finds its
// slot held and counts into a set, so that both ways are waited for. During
// the run, churn (if not nil) is called in a loop on a goroutine of its own.
func rgGuardStorm(t *testing.T, g *guard, publishers int, d time.Duration, minWaits int, churn func(i int)) rgStorm {
	t.Helper()
	var cur atomic.Pointer[rgState]
	cur.Store(new(rgState))
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
			old := cur.Swap(new(rgState))
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
	return rgStorm{bad.Load(), waits}
}

func rgRounds(long, short int) int {
	if testing.Short() {
		return short
	}
	return long
}

func rgDuration() time.Duration {
	if testing.Short() {
		return 100 * time.Millisecond
	}
	return 400 * time.Millisecond
}

// rgCheckStorm reports what a storm found wrong, and a storm that tested
// nothing: no wait, no section on a slot, or none counted into a set.
func rgCheckStorm(t *testing.T, g *guard, st rgStorm) {
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
// publishers and the canceller (the guard of 6ee31f5 had counters per P,
// made for the Ps there were when it was made; the slots are per stripe, and
// the test stays).
func TestReviewGuardWaitCoversEverySectionWhileGOMAXPROCSIsRaisedAndLowered(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	g := newGuard()
	runtime.GOMAXPROCS(6)
	procs := []int{6, 1, 3, 8, 2, 5}
	st := rgGuardStorm(t, g, 8, rgDuration(), 200, func(i int) {
		runtime.GOMAXPROCS(procs[i%len(procs)])
		time.Sleep(50 * time.Microsecond)
	})
	rgCheckStorm(t, g, st)
}

// Far more Ps than stripes (the runtime allows Ps beyond the CPUs): every
// slot is contended, and many sections count into the sets.
func TestReviewGuardWithManyMorePsThanStripesCoversEverySection(t *testing.T) {
	procs := 8 * guardStripes
	prev := runtime.GOMAXPROCS(procs)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	g := newGuard()
	// Few waits: with hundreds of Ps on a few CPUs, a section's thread is
	// often descheduled by the OS, and a wait lasts that long.
	st := rgGuardStorm(t, g, procs, rgDuration()/2, 1, nil)
	rgCheckStorm(t, g, st)
}

// Many more publishers than stripes: goroutines that share a stripe take
// turns on its slot, and the plain increment that gives it back must never
// lose another's take (a slot that drifts either stays odd, and the wait
// hangs, or turns even too early, and the wait returns too soon).
func TestReviewGuardCountersStayExactWithManyMorePublishersThanPs(t *testing.T) {
	g := newGuard()
	st := rgGuardStorm(t, g, 32*runtime.GOMAXPROCS(0), rgDuration(), 200, nil)
	rgCheckStorm(t, g, st)
}

// A publisher may read the epoch, then be held up (preempted, or its thread
// descheduled) before it counts itself in: meanwhile a whole wait may pass,
// and it then counts into the set of an epoch that is no longer current, and
// loads the route. The next wait must still wait for it: that is why a wait
// flips twice. The test plays that publisher step by step (on the sets, as
// when its slot is held), counting out through exit and on another stripe
// (its stack moved meanwhile).
func TestReviewGuardWaitOutlastsAPublisherThatCountedInAfterAWholeWaitPassed(t *testing.T) {
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

// rgWithin calls f and fails the test if it has not returned within d (a
// guard counter that never drains makes a cancel wait for ever).
func rgWithin(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// rgSubOf returns the subscription whose channel is ch.
func rgSubOf[T any](b *Broker, ch <-chan T) *sub[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	var found *sub[T]
	each := func(s subscriber) {
		if x, ok := s.(*sub[T]); ok && (<-chan T)(x.ch) == ch {
			found = x
		}
	}
	for _, e := range b.all {
		e.edit.eachLocked(e, each)
	}
	for s := range b.held {
		each(s)
	}
	return found
}

// rgPath is a way a publication reaches a subscription: build subscribes
// what stays for the whole run on b, and returns the publication and a
// function that makes the subscription that is cancelled again and again,
// returning its channel and cancellation.
type rgPath struct {
	name  string
	build func(b *Broker) (publish func(i int), churn func() (<-chan int, func()))
}

// rgConvert makes a subscription of rgOut look like one of int to rgChurn.
func rgConvert[T ~int](ch <-chan T, cancel func()) (<-chan int, func()) {
	out := make(chan int, 16)
	go func() {
		defer close(out)
		for v := range ch {
			select {
			case out <- int(v):
			default:
			}
		}
	}()
	return out, cancel
}

func rgPaths() []rgPath {
	fanout := func(n int) rgPath {
		return rgPath{fmt.Sprintf("direct fan-out of %d", n), func(b *Broker) (func(int), func() (<-chan int, func())) {
			for range n - 1 {
				b.Subscribe(Buffer[rgInt](1)) // full after the first publication: counts drops
			}
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgInt](4)))
			}
		}}
	}
	return []rgPath{
		{"direct", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgInt](4)))
			}
		}},
		{"direct unbuffered", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgInt](0)))
			}
		}},
		fanout(64),
		{"boxed interface subscriptions only", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Subscribe(Buffer[fmt.Stringer](1))
			return func(i int) { b.Publish(rgStr(i)) }, func() (<-chan int, func()) {
				ch, cancel := b.Subscribe(Buffer[fmt.Stringer](4))
				out := make(chan int, 16)
				go func() {
					defer close(out)
					for range ch {
						select {
						case out <- 0:
						default:
						}
					}
				}()
				return out, cancel
			}
		}},
		{"plain and boxed together (sendPlain)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Subscribe(Buffer[any](1))
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgInt](4)))
			}
		}},
		{"plain and boxed together, the boxed one cancelled (sendPlain)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Subscribe(Buffer[rgStr](1))
			for range 32 {
				b.Subscribe(Buffer[fmt.Stringer](1)) // sent to before the one cancelled
			}
			return func(i int) { b.Publish(rgStr(i)) }, func() (<-chan int, func()) {
				ch, cancel := b.Subscribe(Buffer[fmt.Stringer](4))
				out := make(chan int, 16)
				go func() {
					defer close(out)
					for range ch {
						select {
						case out <- 0:
						default:
						}
					}
				}()
				return out, cancel
			}
		}},
		{"From source (solo)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgOut](2), From[rgOut](func(v rgInt) (rgOut, bool) { return rgOut(v), v%3 != 0 })))
			}
		}},
		{"DropOldest (offerTo evicting)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgInt](1), Overflow[rgInt](DropOldest)))
			}
		}},
		{"OnLoss beside plain ones (sendPlain then offer)", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Subscribe(Buffer[rgInt](1))
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgInt](1), OnLoss(func(Loss[rgInt]) {})))
			}
		}},
		{"retained, ordered sends", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Retain[rgInt](Retention{Count: 8})
			b.Subscribe(Buffer[any](1))
			b.Subscribe(Buffer[rgInt](1), Overflow[rgInt](DropOldest))
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgInt](2)))
			}
		}},
		{"retained, replayed to each new subscription", func(b *Broker) (func(int), func() (<-chan int, func())) {
			b.Retain[rgInt](Retention{Count: 8})
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				return rgConvert(b.Subscribe(Buffer[rgInt](2), Replay[rgInt](Earliest())))
			}
		}},
		{"handler", func(b *Broker) (func(int), func() (<-chan int, func())) {
			return func(i int) { b.Publish(rgInt(i)) }, func() (<-chan int, func()) {
				out := make(chan int)
				close(out) // a handler has no channel of the test's: its stop waits for its worker
				stop := b.Handle(func(context.Context, rgInt) error { return nil }, Buffer[rgInt](2))
				return out, stop
			}
		}},
	}
}

// Cancels race publications on every path a publication takes: plain sends
// (to one subscription and to many), boxed sends, From sources, DropOldest
// and OnLoss (offerTo), retained types. A send after the cancel closed the
// channel panics; a cancel that returned with a publisher still inside would
// let it. The channel must be closed once cancel returns.
func TestReviewCancelNeverRacesAPublicationOnAnyPath(t *testing.T) {
	d := 100 * time.Millisecond
	if testing.Short() {
		d = 40 * time.Millisecond
	}
	for _, p := range rgPaths() {
		t.Run(p.name, func(t *testing.T) {
			var b Broker
			publish, churn := p.build(&b)
			var stop atomic.Bool
			t.Cleanup(func() { stop.Store(true) }) // a failed test leaves no publisher running
			var wg sync.WaitGroup
			// More publishers than Ps, so that some are preempted in the
			// middle of a publication while a cancel runs.
			for w := range 2*runtime.GOMAXPROCS(0) + 1 {
				wg.Go(func() {
					for i := w; !stop.Load(); i++ {
						publish(i)
					}
				})
			}
			rounds := 0
			for start := time.Now(); rounds < 8 || time.Since(start) < d; rounds++ {
				ch, cancel := churn()
				if rounds%4 == 1 {
					time.Sleep(20 * time.Microsecond)
				}
				rgWithin(t, 10*time.Second, "cancel", cancel)
				timeout := time.After(5 * time.Second)
			drain:
				for {
					select {
					case _, ok := <-ch:
						if !ok {
							break drain
						}
					case <-timeout:
						stop.Store(true)
						t.Fatalf("round %d: the channel was not closed 5 s after cancel returned", rounds)
					}
				}
			}
			stop.Store(true)
			wg.Wait()
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkDrained(t, b.table.Load().guard)
			t.Logf("%d cancels", rounds)
		})
	}
}

// Shutdown races publications on every path: nothing may be sent on a
// channel it closed, and every channel is closed once it returns.
func TestReviewShutdownNeverRacesAPublicationOnAnyPath(t *testing.T) {
	d := 120 * time.Millisecond
	if testing.Short() {
		d = 50 * time.Millisecond
	}
	for _, p := range rgPaths() {
		t.Run(p.name, func(t *testing.T) {
			start := time.Now()
			drained, cut := 0, 0
			for r := 0; r < 2 || time.Since(start) < d; r++ {
				var b Broker
				publish, churn := p.build(&b)
				chs := make([]<-chan int, 0, 4)
				for range 3 {
					ch, _ := churn()
					chs = append(chs, ch)
				}
				var stop atomic.Bool
				t.Cleanup(func() { stop.Store(true) }) // a failed test leaves no publisher running
				var wg sync.WaitGroup
				for w := range 2 * runtime.GOMAXPROCS(0) {
					wg.Go(func() {
						for i := w; !stop.Load(); i++ {
							publish(i)
						}
					})
				}
				// The publishers here never stop. Where there are handlers,
				// they may keep a queue from ever being found empty twice in
				// a row: the drain is theirs to prolong (see Shutdown), and
				// only a context ends it, sealing at once. Either way the
				// seal races the publications, which is what is tested.
				b.mu.Lock()
				drains := len(b.handlers) > 0
				b.mu.Unlock()
				limit := 5 * time.Second
				if drains {
					limit = 100 * time.Millisecond
				}
				time.Sleep(time.Duration(r%4) * 50 * time.Microsecond)
				ctx, cancelCtx := context.WithTimeout(context.Background(), limit)
				began := time.Now()
				err := b.Shutdown(ctx)
				cancelCtx()
				switch {
				case err == nil:
					drained++
				case drains && errors.Is(err, context.DeadlineExceeded):
					cut++
					if late := time.Since(began) - limit; late > 5*time.Second {
						stop.Store(true)
						t.Fatalf("round %d: Shutdown returned %v after its context ended", r, late)
					}
				default:
					stop.Store(true)
					t.Fatalf("round %d: Shutdown: %v", r, err)
				}
				for i, ch := range chs {
					timeout := time.After(5 * time.Second)
				drain:
					for {
						select {
						case _, ok := <-ch:
							if !ok {
								break drain
							}
						case <-timeout:
							stop.Store(true)
							t.Fatalf("round %d: subscription %d not closed 5 s after Shutdown returned", r, i)
						}
					}
				}
				stop.Store(true)
				wg.Wait()
				checkDrained(t, b.table.Load().guard)
				if err != nil {
					// Cut short, the handlers discard what remains and end;
					// a later call waits for that and returns the same.
					rgWithin(t, 5*time.Second, "Shutdown after the cut", func() {
						if again := b.Shutdown(context.Background()); again != err {
							t.Errorf("round %d: Shutdown after the cut: %v, want %v", r, again, err)
						}
					})
				}
			}
			t.Logf("%d drains ended, %d cut short by their contexts", drained, cut)
		})
	}
}

// Once a cancel has returned, the subscription's loss counts are final (see
// Broker.Watch): a publisher still counting a drop after that would make
// Watch report a count that later changes. Each case keeps the
// subscription's buffer full, with more publishers than Ps so that some are
// preempted in the middle of a publication, cancels it, reads its counts,
// then stops the publishers and reads them again.
func TestReviewLossCountsAreFinalOnceCancelReturns(t *testing.T) {
	d := 600 * time.Millisecond
	if testing.Short() {
		d = 250 * time.Millisecond
	}
	cases := []struct {
		name string
		sub  func(b *Broker) (<-chan rgInt, func())
	}{
		{"the only subscription, full: no guard (countFull)", func(b *Broker) (<-chan rgInt, func()) {
			return b.Subscribe(Buffer[rgInt](1))
		}},
		{"beside one with room: counted inside the guard", func(b *Broker) (<-chan rgInt, func()) {
			b.Subscribe(Buffer[rgInt](0)) // unbuffered: has room for hasRoom, never takes
			return b.Subscribe(Buffer[rgInt](1))
		}},
		{"OnLoss (offerTo)", func(b *Broker) (<-chan rgInt, func()) {
			return b.Subscribe(Buffer[rgInt](1), OnLoss(func(Loss[rgInt]) {}))
		}},
		{"DropOldest (offerTo evicting)", func(b *Broker) (<-chan rgInt, func()) {
			return b.Subscribe(Buffer[rgInt](1), Overflow[rgInt](DropOldest))
		}},
		{"beside a boxed one (sendPlain)", func(b *Broker) (<-chan rgInt, func()) {
			b.Subscribe(Buffer[any](0))
			return b.Subscribe(Buffer[rgInt](1))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			changed, rounds := 0, 0
			var first string
			for start := time.Now(); rounds < 4 || time.Since(start) < d; rounds++ {
				r := rounds
				var b Broker
				ch, cancel := c.sub(&b)
				s := rgSubOf(&b, ch)
				if s == nil {
					t.Fatal("the subscription was not found")
				}
				var stop atomic.Bool
				t.Cleanup(func() { stop.Store(true) }) // a failed test leaves no publisher running
				var wg sync.WaitGroup
				for w := range 4 * runtime.GOMAXPROCS(0) {
					wg.Go(func() {
						for i := w; !stop.Load(); i++ {
							b.Publish(rgInt(i))
						}
					})
				}
				time.Sleep(time.Duration(1+r%3) * 200 * time.Microsecond)
				rgWithin(t, 10*time.Second, "cancel", cancel)
				atCancel := s.lost.load()
				time.Sleep(200 * time.Microsecond)
				stop.Store(true)
				wg.Wait()
				if later := s.lost.load(); later != atCancel {
					changed++
					if first == "" {
						first = fmt.Sprintf("round %d: %+v once cancel returned, %+v once the publishers stopped", r, atCancel, later)
					}
				}
			}
			if changed > 0 {
				t.Errorf("the counts changed after cancel returned in %d of %d rounds; first: %s", changed, rounds, first)
			}
		})
	}
}

// Publications and cancels inside a synctest bubble: Ps' counters there,
// cancellers spinning with Gosched while they wait, subscriptions of every
// policy made and cancelled, then Shutdown. No send may reach a closed
// channel, every channel must be closed once its cancel returns, and the
// bubble must end (nothing left durably blocked). (The fake clock does not
// move while the publishers run: nothing here sleeps.)
func TestReviewGuardWorksInsideASynctestBubble(t *testing.T) {
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
					b.Publish(rgInt(i))
				}
			})
		}
		for r := range rgRounds(60, 20) {
			var opts []Option[rgInt]
			switch r % 3 {
			case 1:
				opts = append(opts, Overflow[rgInt](DropOldest))
			case 2:
				opts = append(opts, OnLoss(func(Loss[rgInt]) {}))
			}
			ch, cancel := b.Subscribe(append(opts, Buffer[rgInt](2))...)
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

// rgMedian returns the median of ds.
func rgMedian(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// rgBeside runs loop on a goroutine of its own until measure returns, and
// returns what measure returned.
func rgBeside(loop func(stop *atomic.Bool), measure func() []time.Duration) []time.Duration {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(&stop)
	}()
	time.Sleep(2 * time.Millisecond) // running
	ds := measure()
	stop.Store(true)
	<-done
	return ds
}

// rgSpin is a loop the runtime can preempt anywhere: the baseline.
func rgSpin(stop *atomic.Bool) {
	for n := 0; !stop.Load(); n++ {
	}
}

// rgPublishing is a loop publishing to 64 unbuffered subscriptions without
// receivers: each publication is one guard section of 64 sends that fail at
// once.
func rgPublishing() func(stop *atomic.Bool) {
	var b Broker
	for range 64 {
		b.Subscribe(Buffer[rgInt](0))
	}
	return func(stop *atomic.Bool) {
		for i := 0; !stop.Load(); i++ {
			b.Publish(rgInt(i))
		}
	}
}

// A stop of the world (a GC's start and end, ReadMemStats, GOMAXPROCS) must
// preempt every running goroutine: beside one publishing in a loop it must
// not take much longer than beside one spinning. It did, 27 times as long,
// when a publisher stayed pinned to its P across its sends (6ee31f5): a
// preemption request that reached it then was dropped (a call inside the
// section saw it in its prologue and could not preempt, and procUnpin, unlike
// releasem, does not restore it), so the stop waited for the runtime's
// retries to land between two sections. A publisher now pins itself only for
// one increment, with no call in between.
func TestReviewGuardAGoroutinePublishingInALoopDoesNotHoldOffAStopOfTheWorld(t *testing.T) {
	prev := runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))) // a P for the loop and one for the stop
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	samples := rgRounds(60, 30)
	stw := func() []time.Duration {
		var ms runtime.MemStats
		ds := make([]time.Duration, 0, samples)
		for range samples {
			t0 := time.Now()
			runtime.ReadMemStats(&ms)
			ds = append(ds, time.Since(t0))
			time.Sleep(200 * time.Microsecond)
		}
		return ds
	}
	base := rgMedian(rgBeside(rgSpin, stw))
	pub := rgMedian(rgBeside(rgPublishing(), stw))
	t.Logf("median ReadMemStats: %v beside a spinning loop, %v beside a loop publishing to 64 subscriptions", base, pub)
	if pub > time.Millisecond && pub > 8*base {
		t.Errorf("a stop of the world beside a goroutine publishing in a loop took %v (median of %d), %.0fx as long as beside a spinning loop (%v)", pub, samples, float64(pub)/float64(base), base)
	}
}
