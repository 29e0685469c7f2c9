package topic

// Second adversarial review of the publish guard of c749731 (publishers
// counted in on striped counters, out on their P's own counter, pinned for
// the one increment; now they take a slot, see guard) and of freezeFull, the
// Full count a subscription's close freezes. Each test says which mutant or
// bug it catches.

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

type r2Int int

// r2Route returns the route of T's entry in b, as a publisher loads it
// before it enters the guard; nil if there is none.
func r2Route[T any](b *Broker) *route[T] {
	t := b.table.Load()
	if t == nil {
		return nil
	}
	e := t.find(keyOf[T](), nil)
	if e == nil {
		return nil
	}
	return (*route[T])(unsafe.Pointer(e.route.Load()))
}

// r2Plain subscribes to r2Int with a buffer of one, fills it, and returns
// the subscription's cancel and the outlet that lists it on the route: what
// a publisher that loaded the route then holds.
func r2Plain(t *testing.T, b *Broker) (*outlet[r2Int], <-chan r2Int, func()) {
	t.Helper()
	ch, cancel := b.Subscribe(Buffer[r2Int](1))
	b.Publish(r2Int(0)) // the buffer is full from now on
	r := r2Route[r2Int](b)
	if r == nil || len(r.direct) != 1 || r.direct[0].channel() == nil || (<-chan r2Int)(r.direct[0].sub.ch) != ch {
		t.Fatal("the subscription is not the one live outlet of its route")
	}
	return &r.direct[0], ch, cancel
}

// A subscription's close freezes its Full count (freezeFull) because a
// publication that finds every buffer full counts its drop outside the
// guard (countFull): a publisher that found the outlet live before the
// cancel buried it may be held up there (preempted, its thread descheduled)
// and count the drop once the cancel has returned. freezeFull loads the
// count, then stores it: a drop counted between the two is not in the frozen
// count, but a read of the counts (Subscriptions and Watch read them without
// Broker.mu, and so concurrently with a cancel) that lands between them
// still sees it, and reports more than the final count. The Full count then
// goes down, and Watch, which reports differences (Lost.minus), reports the
// subscription's last incident as a Full of nearly 2^64.
//
// Each round plays the held-up publishers (they count a drop on the outlet
// they found live, as countFull does) interleaved with such a reader, while
// the subscription is cancelled. The loss counts are striped, as they are
// once two publishers of the saturated subscription met (addStriped): the
// load in freezeFull then reads every stripe, and the gap is wide. Catches
// the bug in loss.go at c749731 (fails there).
func TestReview2AFullCountReadDuringACancelIsNeverMoreThanTheFinalOne(t *testing.T) {
	// It ends at the first round that finds the bug: at c749731, within
	// 0.7 s in each of 5 runs (within 0.02 s with -race).
	d := 3 * time.Second
	if testing.Short() {
		d = 1500 * time.Millisecond
	}
	rounds, bad := 0, 0
	var first string
	for start := time.Now(); bad == 0 && (rounds < 100 || time.Since(start) < d); rounds++ {
		var b Broker
		o, _, cancel := r2Plain(t, &b)
		s := o.sub
		s.lost.addStriped(Full) // as the first two drops counted at once do
		var seen Lost
		var reads atomic.Int64
		var halt atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !halt.Load() {
				o.sub.lost.addFull() // a held-up publisher's drop (countFull)
				if l := s.stats().Lost; l.Full > seen.Full {
					seen = l // as Subscriptions and Watch read it
				}
				reads.Add(1)
			}
		}()
		for n := reads.Load(); reads.Load() < n+1+int64(rounds%4); {
			runtime.Gosched()
		}
		cancel()
		halt.Store(true)
		<-done
		final := s.stats().Lost
		if seen.Full > final.Full {
			bad++
			first = fmt.Sprintf("round %d: Full read as %d during the cancel, %d once it returned; Watch would report the last incident as Lost %+v",
				rounds, seen.Full, final.Full, final.minus(seen))
		}
	}
	if bad > 0 {
		t.Errorf("a Full count read while a cancel froze it was more than the frozen count, after %d rounds: %s", rounds, first)
	}
}

// The frozen Full count must keep every drop of a publication that returned
// before the cancel, also once the counts are striped, and hide a drop
// counted after the cancel by a publisher held up since it found the outlet
// live; the seal of Shutdown freezes Full alike but not Closed, which
// publications after Shutdown still count. Catches the mutants: no
// freezeFull (the late drop shows); freezeFull reading the base counters
// only (striped drops lost); freezeFull storing the count without its +1 (one
// drop lost, or the count not frozen when it is 0); a freeze of every cause
// (Closed no longer counted after Shutdown).
func TestReview2AFrozenFullCountKeepsEveryEarlierDropAndNoLaterOne(t *testing.T) {
	for _, striped := range []bool{false, true} {
		var b Broker
		o, ch, cancel := r2Plain(t, &b)
		s := o.sub
		want := uint64(0)
		if striped {
			s.lost.addStriped(Full) // a drop counted on the stripes
			want++
		}
		for i := range 9 {
			b.Publish(r2Int(i + 1)) // dropped: the buffer is full
		}
		want += 9
		cancel()
		if got := s.stats().Lost.Full; got != want {
			t.Errorf("striped %v: Full is %d once the cancel returned, want %d", striped, got, want)
		}
		o.sub.lost.addFull() // a publisher held up in countFull since before the cancel
		if got := s.stats().Lost.Full; got != want {
			t.Errorf("striped %v: Full is %d after a drop counted once the cancel returned, want %d (frozen)", striped, got, want)
		}
		if v, ok := <-ch; !ok || v != 0 {
			t.Errorf("striped %v: received %v, %v; want the value queued before the cancel", striped, v, ok)
		}
		if _, ok := <-ch; ok {
			t.Errorf("striped %v: the channel is open after the cancel", striped)
		}
	}

	var b Broker
	b.Subscribe(Buffer[r2Int](1))
	for i := range 3 {
		b.Publish(r2Int(i)) // one queued, two dropped
	}
	if err := b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.Publish(r2Int(3)) // reaches the sealed subscription: Closed
	b.Publish(r2Int(4))
	found := false
	for _, st := range b.Subscriptions() {
		if st.Type != reflect.TypeFor[r2Int]() {
			continue
		}
		found = true
		if st.Lost.Full != 2 || st.Lost.Closed != 2 {
			t.Errorf("after Shutdown and two more publications: Lost %+v, want Full 2 and Closed 2", st.Lost)
		}
	}
	if !found {
		t.Error("Subscriptions does not list the subscription Shutdown closed")
	}
}

// A publication that found the buffer full before Shutdown closed the
// subscription, and counts its drop without the guard only after (a
// publisher held up in countFull, or in sendDirect's drop path), is counted
// as Closed: Shutdown counts every publication it ended, so that once the
// publishers stop the values published equal those received plus those
// lost. The Full count stays what the close froze. (The frozen Full count
// used to hide such a drop, counted nowhere: a review found publishers
// racing Shutdown one to three values short in about one round of five.)
// Catches the mutants: a seal that freezes as a cancel does (the drop is
// lost), and a load that adds the late drops to Full instead.
func TestReview2ADropCountedAfterShutdownClosedTheSubscriptionIsClosed(t *testing.T) {
	for _, striped := range []bool{false, true} {
		var b Broker
		o, ch, _ := r2Plain(t, &b)
		s := o.sub
		want := Lost{Full: 1}
		if striped {
			s.lost.addStriped(Full) // a drop counted on the stripes
			want.Full++
		}
		b.Publish(r2Int(1)) // dropped: the buffer is full
		if err := b.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := s.stats().Lost; got != want {
			t.Errorf("striped %v: Lost %+v once Shutdown returned, want %+v", striped, got, want)
		}
		s.lost.addFull() // two publishers held up since before the seal
		s.lost.addStriped(Full)
		b.Publish(r2Int(2)) // after the seal: Closed
		want.Closed = 3
		if got := s.stats().Lost; got != want {
			t.Errorf("striped %v: Lost %+v after two drops counted late and a publication, want %+v", striped, got, want)
		}
		if v, ok := <-ch; !ok || v != 0 {
			t.Errorf("striped %v: received %v, %v; want the value queued before Shutdown", striped, v, ok)
		}
		if _, ok := <-ch; ok {
			t.Errorf("striped %v: the channel is open after Shutdown", striped)
		}
	}
}

// A handler stopped before Shutdown keeps the rule of a cancel: its stop
// froze its Full count, unmarked, and Shutdown, which still waits for the
// handler to finish its queue, does not freeze it again. So a drop that a
// publisher held up since before the stop counts late, outside the guard,
// stays hidden, before and after Shutdown: it is one of a publication after
// the stop. (Counted as Closed, it would count a publication the handler's
// stop, not Shutdown, ended.)
func TestReview2ALateDropOnAHandlerStoppedBeforeShutdownStaysHidden(t *testing.T) {
	var b Broker
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	stop := b.Handle(func(ctx context.Context, v r2Int) error {
		if v == 1 {
			started <- struct{}{}
			<-release
		}
		return nil
	}, Buffer[r2Int](1))
	b.Publish(r2Int(1)) // taken by the worker, which waits
	<-started
	b.Publish(r2Int(2)) // queued
	b.Publish(r2Int(3)) // dropped: the queue is full
	r := r2Route[r2Int](&b)
	if r == nil || len(r.direct) != 1 {
		t.Fatal("the handler's subscription is not the one outlet of its route")
	}
	s := r.direct[0].sub // held by a publisher that loaded the route before the stop
	stopped := make(chan struct{})
	go func() {
		stop() // waits for the worker, which waits for release
		close(stopped)
	}()
	for s.lost.full.Load() == 0 || s.lost.full.Load() == frozeNow {
		runtime.Gosched() // until the stop's close has frozen the count
	}
	want := Lost{Full: 1}
	s.lost.addFull() // the held-up publisher counts its drop
	if got := s.stats().Lost; got != want {
		t.Errorf("Lost %+v after a drop counted late once the stop closed the queue, want %+v", got, want)
	}
	close(release)
	if err := b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-stopped
	s.lost.addFull() // another, counted after Shutdown
	if got := s.stats().Lost; got != want {
		t.Errorf("Lost %+v after Shutdown and another late drop, want %+v", got, want)
	}
	if got := s.stats().Handler; got == nil || got.Handled != 2 {
		t.Errorf("handler stats %+v, want the two values accepted before the stop handled", got)
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
func TestReview2AWaitDoesNotReturnWhileHeldUpPublishersComeAndGoBesideOneStillInside(t *testing.T) {
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
				r2Work(n % 64)
				g.exit(c)
				stale.Add(1)
				r2Work(1 << (n % 13))
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

var r2Sink atomic.Int64

// r2Work spins for about n loads.
func r2Work(n int) {
	for range n {
		r2Sink.Load()
	}
}

// r2SleepLatency returns the median time a sleep of 100 µs takes beside
// loop, running on a goroutine of its own (rgBeside), at GOMAXPROCS 1: the
// sleeper wakes only once the runtime preempts the loop. It gives up after
// about two seconds.
func r2SleepLatency(loop func(stop *atomic.Bool)) time.Duration {
	return rgMedian(rgBeside(loop, func() []time.Duration {
		var ds []time.Duration
		for start := time.Now(); len(ds) < 9 && time.Since(start) < 2*time.Second; {
			t0 := time.Now()
			time.Sleep(100 * time.Microsecond)
			ds = append(ds, time.Since(t0))
		}
		return ds
	}))
}

// With one P, a goroutine publishing in a loop holds it until the runtime
// preempts it: a preemption request the publisher dropped (pinned while it
// made a call) leaves every other goroutine waiting for the next one. A
// sleeper must wake about as soon beside the publisher as beside a loop that
// only spins, for publications to 64 plain subscriptions (one section of 64
// sends each), to 64 interface subscriptions (sendBoxedDirect), and to a
// full subscription (no section: countFull). Catches the design of 6ee31f5
// (pinned across the sends): played in the guard alone, the sleeps took 2.6
// to 3.2 s there, against 20 ms beside the spinning loop.
func TestReview2AGoroutinePublishingInALoopOnTheOnlyPLetsOthersRun(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	publishing := func(subscribe func(b *Broker)) func(stop *atomic.Bool) {
		var b Broker
		subscribe(&b)
		return func(stop *atomic.Bool) {
			for i := 0; !stop.Load(); i++ {
				b.Publish(r2Int(i))
			}
		}
	}
	base := r2SleepLatency(rgSpin)
	for _, c := range []struct {
		name      string
		subscribe func(b *Broker)
	}{
		{"64 plain", func(b *Broker) {
			for range 64 {
				b.Subscribe(Buffer[r2Int](0))
			}
		}},
		{"64 interface", func(b *Broker) {
			for range 64 {
				b.Subscribe(Buffer[any](0))
			}
		}},
		{"one full", func(b *Broker) {
			b.Subscribe(Buffer[r2Int](1))
		}},
	} {
		got := r2SleepLatency(publishing(c.subscribe))
		t.Logf("%s: median sleep %v beside the publisher, %v beside a spinning loop", c.name, got, base)
		if got > 100*time.Millisecond && got > 4*base {
			t.Errorf("%s: a sleep beside a goroutine publishing in a loop at GOMAXPROCS 1 took %v (median), %.0fx as long as beside a spinning loop (%v)",
				c.name, got, float64(got)/float64(base), base)
		}
	}
}
