package topic

// Tests of sendDirect, the path of a plain route of one outlet, which sends
// to that outlet inside the guard without reloading it when the route is
// unchanged. A publisher of such a route loads the route r before the
// guard, checks the buffer, enters the guard, loads the channel of r's
// outlet, reloads the route, and sends on that channel only if the route is
// still r; otherwise it falls through to the general path. The tests play
// stale publishers (they load the route themselves and call sendDirect
// later), publishers held inside the guard while a cancel or Shutdown runs,
// and publishers racing churn and Shutdown.

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

type (
	directInt   int
	directOther int
)

// staleRoute returns the entry of T and its route, as Publish loads them
// before sendDirect, and checks that the route is a plain route of one
// outlet.
func staleRoute[T any](t *testing.T, b *Broker) (*entry, *route[T]) {
	t.Helper()
	e := b.table.Load().find(keyOf[T](), nil)
	if e == nil {
		t.Fatal("no entry")
	}
	r := (*route[T])(unsafe.Pointer(e.route.Load()))
	if r == nil || !r.plain || len(r.direct) != 1 {
		t.Fatalf("the route is not a plain route of one outlet: %+v", r)
	}
	return e, r
}

// routeNow returns e's current route.
func routeNow[T any](e *entry) *route[T] {
	return (*route[T])(unsafe.Pointer(e.route.Load()))
}

// routeOf returns the route of T's entry in b, as a publisher loads it
// before it enters the guard; nil if there is none.
func routeOf[T any](b *Broker) *route[T] {
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

// trySendDirect calls sendDirect and returns what it panicked with, if it did.
func trySendDirect[T any](b *Broker, e *entry, r *route[T], v T) (p any) {
	defer func() { p = recover() }()
	sendDirect(b.table.Load().guard, e, r, v)
	return nil
}

// drainNow returns what ch holds and whether it is closed, without waiting
// for more.
func drainNow[T any](ch <-chan T) (got []T, closed bool) {
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return got, true
			}
			got = append(got, v)
		default:
			return got, false
		}
	}
}

// waitUntil fails the test if cond does not hold within 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); runtime.Gosched() {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

type staleInt int

// A publisher of a plain route of one subscription loads the route before
// it enters the guard and, inside it, sends on that outlet's channel only if
// the route is still the one it loaded (sendDirect). Each case plays a
// publisher that loaded the route, then was held up while subscriptions
// changed, and checks that it sends where the route now says. Catches a
// sendDirect that sends on the outlet it found first without checking the
// route again: the new subscriptions would miss the value, and a send on a
// cancelled channel would panic or be lost.
func TestDirectSendOfAStaleRouteGoesWhereTheRouteNowSays(t *testing.T) {
	// stale returns the entry of staleInt and its route, as Publish loads
	// them before sendDirect (see staleRoute).
	stale := staleRoute[staleInt]
	// got returns what ch holds, without waiting.
	got := func(ch <-chan staleInt) (v staleInt, ok, open bool) {
		select {
		case v, open = <-ch:
			return v, true, open
		default:
			return 0, false, true
		}
	}

	t.Run("the route is unchanged", func(t *testing.T) {
		var b Broker
		ch, cancel := b.Subscribe[staleInt]()
		defer cancel()
		e, r := stale(t, &b)
		sendDirect(b.table.Load().guard, e, r, 1)
		if v, ok, open := got(ch); !ok || !open || v != 1 {
			t.Errorf("received %v (value %v, open %v), want 1", v, ok, open)
		}
	})

	t.Run("a subscription was added", func(t *testing.T) {
		var b Broker
		ch1, cancel1 := b.Subscribe[staleInt]()
		defer cancel1()
		e, r := stale(t, &b)
		ch2, cancel2 := b.Subscribe[staleInt]()
		defer cancel2()
		sendDirect(b.table.Load().guard, e, r, 2)
		for i, ch := range []<-chan staleInt{ch1, ch2} {
			if v, ok, open := got(ch); !ok || !open || v != 2 {
				t.Errorf("subscription %d received %v (value %v, open %v), want 2", i+1, v, ok, open)
			}
		}
	})

	t.Run("the subscription was cancelled", func(t *testing.T) {
		var b Broker
		ch, cancel := b.Subscribe[staleInt]()
		e, r := stale(t, &b)
		cancel()
		sendDirect(b.table.Load().guard, e, r, 3) // no send on the closed channel
		if v, ok, open := got(ch); !ok || open {
			t.Errorf("received %v (value %v, open %v), want the channel closed and empty", v, ok, open)
		}
		if got := b.Subscriptions(); len(got) != 0 {
			t.Errorf("%d subscriptions listed after the cancel, want none", len(got))
		}
	})

	t.Run("the subscription was replaced", func(t *testing.T) {
		var b Broker
		ch1, cancel1 := b.Subscribe[staleInt]()
		e, r := stale(t, &b)
		cancel1()
		ch2, cancel2 := b.Subscribe[staleInt]()
		defer cancel2()
		sendDirect(b.table.Load().guard, e, r, 4)
		if v, ok, open := got(ch1); !ok || open {
			t.Errorf("the cancelled subscription received %v (value %v, open %v), want its channel closed and empty", v, ok, open)
		}
		if v, ok, open := got(ch2); !ok || !open || v != 4 {
			t.Errorf("the new subscription received %v (value %v, open %v), want 4", v, ok, open)
		}
		if l := b.Subscriptions()[0].Lost; l != (Lost{}) {
			t.Errorf("the new subscription lost %+v, want nothing", l)
		}
	})
}

// Shutdown's seal replaces the routes but does not bury their outlets: the
// outlet of a route loaded before Shutdown still holds the channel Shutdown
// closed. Only the reload of the route inside the guard keeps a publisher
// held up since before Shutdown from sending on it. Each case plays such a
// publisher once Shutdown has returned: it must not panic, and it must count
// its value as Closed (the buffer had room, or the drop it found before the
// guard is counted after the freeze). Catches a sendDirect that sends on the
// outlet's channel without comparing the route (panics: send on closed
// channel).
func TestDirectSendOfAStaleRouteAfterShutdownDoesNotSendOnTheClosedChannel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		buffer int
		fill   bool
	}{
		{"room in the buffer", 2, false},
		{"full buffer", 1, true},
		{"unbuffered", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Broker
			ch, _ := b.Subscribe(Buffer[directInt](tc.buffer))
			if tc.fill {
				b.Publish(directInt(0))
			}
			e, r := staleRoute[directInt](t, &b)
			s := r.direct[0].sub
			if err := b.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			if r.direct[0].channel() == nil {
				t.Log("Shutdown buried the stale outlet: the case no longer depends on the route reload")
			}
			if p := trySendDirect(&b, e, r, 5); p != nil {
				t.Fatalf("the stale publication panicked: %v", p)
			}
			if got, want := s.stats().Lost, (Lost{Closed: 1}); got != want {
				t.Errorf("Lost %+v, want %+v", got, want)
			}
			got, closed := drainNow(ch)
			var want []directInt
			if tc.fill {
				want = []directInt{0}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || !closed {
				t.Errorf("received %v (closed %v), want %v and the channel closed", got, closed, want)
			}
		})
	}
}

// A route of one outlet is copied, not shared, when a subscription is added
// to it (its list has no spare capacity) or when its tombstones are
// compacted: cancelling the subscription on the later route buries the copy
// and leaves the stale route's outlet holding the channel the cancel
// closed. A publisher held up with the stale route must then fall through to
// the route as it is now, and send exactly once to each live subscription.
// Catches a sendDirect that sends on the stale outlet without comparing the
// route (panic: send on closed channel) and one that sends there and then
// falls through too (the live subscription receives the value twice).
func TestDirectSendOfAStaleRouteWhoseOutletWasCopiedReachesEachLiveSubscriptionOnce(t *testing.T) {
	t.Run("cancelled on the route that added a subscription", func(t *testing.T) {
		var b Broker
		chA, cancelA := b.Subscribe(Buffer[directInt](2))
		e, r1 := staleRoute[directInt](t, &b)
		sA := r1.direct[0].sub
		chB, cancelB := b.Subscribe(Buffer[directInt](2))
		if r2 := routeNow[directInt](e); &r2.direct[0] == &r1.direct[0] {
			t.Fatal("the later route shares the stale route's outlet")
		}
		cancelA()
		if r1.direct[0].channel() == nil {
			t.Log("the stale outlet was buried: the case no longer depends on the route reload")
		}
		if p := trySendDirect(&b, e, r1, 6); p != nil {
			t.Fatalf("the stale publication panicked: %v", p)
		}
		if got, closed := drainNow(chA); len(got) != 0 || !closed {
			t.Errorf("the cancelled subscription received %v (closed %v), want nothing and closed", got, closed)
		}
		if got, _ := drainNow(chB); fmt.Sprint(got) != "[6]" {
			t.Errorf("the live subscription received %v, want [6]", got)
		}
		if l := sA.stats().Lost; l != (Lost{}) {
			t.Errorf("the cancelled subscription lost %+v, want nothing", l)
		}
		cancelB() // not deferred: after a panic inside the guard it would wait forever
	})

	t.Run("cancelled on a route whose compaction made a route of one", func(t *testing.T) {
		var b Broker
		chA, cancelA := b.Subscribe(Buffer[directInt](2))
		e, r1 := staleRoute[directInt](t, &b)
		_, cancelB := b.Subscribe(Buffer[directInt](2))
		chC, cancelC := b.Subscribe(Buffer[directInt](2))
		cancelB() // [A, B†, C]: one tombstone of three
		cancelA() // two of three: compacted to [C]
		r4 := routeNow[directInt](e)
		if r4 == nil || len(r4.direct) != 1 || !r4.plain {
			t.Fatalf("the route after the compaction is %+v, want a plain route of one outlet", r4)
		}
		if p := trySendDirect(&b, e, r1, 7); p != nil {
			t.Fatalf("the stale publication panicked: %v", p)
		}
		if got, closed := drainNow(chA); len(got) != 0 || !closed {
			t.Errorf("the cancelled subscription received %v (closed %v), want nothing and closed", got, closed)
		}
		if got, _ := drainNow(chC); fmt.Sprint(got) != "[7]" {
			t.Errorf("the live subscription received %v, want [7]", got)
		}
		// And the route of one that the compaction published, loaded and
		// used while unchanged, sends on its own outlet.
		if p := trySendDirect(&b, e, r4, 8); p != nil {
			t.Fatalf("the publication panicked: %v", p)
		}
		if got, _ := drainNow(chC); fmt.Sprint(got) != "[8]" {
			t.Errorf("the live subscription received %v, want [8]", got)
		}
		cancelC()
	})

	t.Run("still live, beside a tombstone", func(t *testing.T) {
		var b Broker
		chA, cancelA := b.Subscribe(Buffer[directInt](2))
		e, r1 := staleRoute[directInt](t, &b)
		sA := r1.direct[0].sub
		_, cancelB := b.Subscribe(Buffer[directInt](2))
		cancelB() // [A, B†]: not compacted, the route stays one of two
		if r := routeNow[directInt](e); r == r1 || len(r.direct) != 2 {
			t.Fatalf("the route is %+v, want one of two outlets", r)
		}
		if p := trySendDirect(&b, e, r1, 9); p != nil {
			t.Fatalf("the stale publication panicked: %v", p)
		}
		if got, _ := drainNow(chA); fmt.Sprint(got) != "[9]" {
			t.Errorf("received %v, want [9] once", got)
		}
		if l := sA.stats().Lost; l != (Lost{}) {
			t.Errorf("lost %+v, want nothing", l)
		}
		cancelA()
	})
}

// A route that stopped being plain after the publisher loaded it (a source
// that is not a plain subscription of T was added, or T became retained):
// the stale publication must reach the plain subscription once and the new
// source once, through the general path. Catches a sendDirect that sends on
// the stale outlet only, or that sends there and falls through as well.
func TestDirectSendOfAStaleRouteThatStoppedBeingPlainReachesEverySourceOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(b *Broker) (got func() string, cancel func())
		want string
	}{
		{"a DropOldest subscription", func(b *Broker) (func() string, func()) {
			ch, cancel := b.Subscribe(Buffer[directInt](1), Overflow[directInt](DropOldest))
			return func() string { v, _ := drainNow(ch); return fmt.Sprint(v) }, cancel
		}, "[10]"},
		{"a subscription with OnLoss", func(b *Broker) (func() string, func()) {
			ch, cancel := b.Subscribe(Buffer[directInt](1), OnLoss(func(Loss[directInt]) {}))
			return func() string { v, _ := drainNow(ch); return fmt.Sprint(v) }, cancel
		}, "[10]"},
		{"a From source", func(b *Broker) (func() string, func()) {
			ch, cancel := b.Subscribe(Buffer[directOther](1), From(func(x directInt) (directOther, bool) { return directOther(x), true }))
			return func() string { v, _ := drainNow(ch); return fmt.Sprint(v) }, cancel
		}, "[10]"},
		{"a subscription of any", func(b *Broker) (func() string, func()) {
			ch, cancel := b.Subscribe(Buffer[any](1))
			return func() string { v, _ := drainNow(ch); return fmt.Sprint(v) }, cancel
		}, "[10]"},
		{"retention of T", func(b *Broker) (func() string, func()) {
			b.Retain[directInt](Retention{Count: 4})
			ch, cancel := b.Subscribe(Buffer[Record[directInt]](1)) // sent what the log sequences
			return func() string {
				rs, _ := drainNow(ch)
				var vs []directInt
				for _, r := range rs {
					vs = append(vs, r.Value)
				}
				return fmt.Sprint(vs)
			}, cancel
		}, "[10]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Broker
			ch, cancel := b.Subscribe(Buffer[directInt](2))
			e, r := staleRoute[directInt](t, &b)
			s := r.direct[0].sub
			got, cancel2 := tc.add(&b)
			if routeNow[directInt](e).plain {
				t.Fatal("the route is still plain")
			}
			if p := trySendDirect(&b, e, r, 10); p != nil {
				t.Fatalf("the stale publication panicked: %v", p)
			}
			if v, _ := drainNow(ch); fmt.Sprint(v) != "[10]" {
				t.Errorf("the plain subscription received %v, want [10]", v)
			}
			if g := got(); g != tc.want {
				t.Errorf("the new source received %v, want %v", g, tc.want)
			}
			if l := s.stats().Lost; l != (Lost{}) {
				t.Errorf("the plain subscription lost %+v, want nothing", l)
			}
			cancel2()
			cancel()
		})
	}
}

// A publisher inside the guard (the test holds a guard section open, as a
// publisher that entered it does) while Shutdown seals the route: Shutdown
// stores the sealed route, then waits for the guard. A publication with the
// route loaded before the seal then finds the channel open but the route
// changed: it must account for its value once (received or Closed) and not
// panic; once the guard is left, Shutdown closes the channel. And while the
// test holds the guard, Shutdown must not return.
func TestADirectPublisherInsideTheGuardHoldsShutdownAndAccountsForItsValueOnce(t *testing.T) {
	var b Broker
	ch, _ := b.Subscribe(Buffer[directInt](2))
	e, r := staleRoute[directInt](t, &b)
	s := r.direct[0].sub
	g := b.table.Load().guard
	c := g.enter()
	done := make(chan error, 1)
	go func() { done <- b.Shutdown(context.Background()) }()
	waitUntil(t, "Shutdown sealing the route", func() bool { return routeNow[directInt](e) != r })
	if p := trySendDirect(&b, e, r, 11); p != nil {
		g.exit(c)
		t.Fatalf("the publication panicked: %v", p)
	}
	select {
	case err := <-done:
		t.Errorf("Shutdown returned (%v) while a publisher was inside the guard", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.exit(c)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, closed := drainNow(ch)
	l := s.stats().Lost
	if !closed || uint64(len(got))+l.Closed != 1 || l.Full != 0 {
		t.Errorf("received %v (closed %v), Lost %+v: want the value received or counted Closed, once, and the channel closed", got, closed, l)
	}
	t.Logf("received %v, Lost %+v", got, l)
}

// A publisher inside the guard while a cancel buries the only outlet and
// publishes the route without it: the cancel waits for the guard; the stale
// publication sends nothing and counts nothing (the subscription is gone),
// and does not panic.
func TestADirectPublisherInsideTheGuardHoldsACancelAndSendsNothing(t *testing.T) {
	for _, fill := range []bool{false, true} {
		t.Run(fmt.Sprintf("full %v", fill), func(t *testing.T) {
			var b Broker
			ch, cancel := b.Subscribe(Buffer[directInt](1))
			if fill {
				b.Publish(directInt(0))
			}
			e, r := staleRoute[directInt](t, &b)
			s := r.direct[0].sub
			g := b.table.Load().guard
			c := g.enter()
			done := make(chan struct{})
			go func() { cancel(); close(done) }()
			waitUntil(t, "the cancel publishing the route without the outlet", func() bool { return routeNow[directInt](e) != r })
			if p := trySendDirect(&b, e, r, 12); p != nil {
				g.exit(c)
				t.Fatalf("the publication panicked: %v", p)
			}
			select {
			case <-done:
				t.Error("the cancel returned while a publisher was inside the guard")
			case <-time.After(50 * time.Millisecond):
			}
			g.exit(c)
			<-done
			got, closed := drainNow(ch)
			var want []directInt
			if fill {
				want = []directInt{0}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || !closed {
				t.Errorf("received %v (closed %v), want %v and closed", got, closed, want)
			}
			if l := s.stats().Lost; l != (Lost{}) {
				t.Errorf("Lost %+v, want nothing", l)
			}
		})
	}
}

// Publishers of a type with one steady plain subscription S race a goroutine
// that adds and cancels other subscriptions of the type (plain ones, making
// the route one of two or back to one, and ones that make it not plain),
// a goroutine that changes GOMAXPROCS, and finally Shutdown. No publication
// may panic, every channel must end closed, and S must account for every
// publication exactly once: received, or counted Full or Closed.
func TestDirectPublishersRacingChurnAndShutdownAccountForEveryValue(t *testing.T) {
	d := time.Second
	if testing.Short() {
		d = 250 * time.Millisecond
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rounds := 0
	for start := time.Now(); rounds < 4 || time.Since(start) < d; rounds++ {
		directChurnRound(t, rounds)
		if t.Failed() {
			t.Fatalf("failed in round %d", rounds)
		}
	}
	t.Logf("%d rounds", rounds)
}

func directChurnRound(t *testing.T, round int) {
	var b Broker
	buffer := []int{0, 1, 4}[round%3]
	ch, _ := b.Subscribe(Buffer[directInt](buffer))
	e := b.table.Load().find(keyOf[directInt](), nil)
	s := routeNow[directInt](e).direct[0].sub

	var received atomic.Int64
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for i := 0; ; i++ {
			if _, ok := <-ch; !ok {
				return
			}
			received.Add(1)
			if i%64 == 0 {
				time.Sleep(10 * time.Microsecond) // let the buffer fill now and then
			}
		}
	}()

	var published atomic.Int64
	var stop atomic.Bool
	var pubs sync.WaitGroup
	panics := make(chan any, 8)
	for p := range 3 {
		pubs.Go(func() {
			defer func() {
				if x := recover(); x != nil {
					panics <- x
				}
			}()
			for i := 0; !stop.Load(); i++ {
				b.Publish(directInt(i))
				published.Add(1)
				if (i+p)%256 == 0 {
					runtime.Gosched()
				}
			}
		})
	}

	var churn sync.WaitGroup
	var churnStop atomic.Bool
	churn.Go(func() {
		defer func() {
			if x := recover(); x != nil {
				panics <- x
			}
		}()
		for i := 0; !churnStop.Load(); i++ {
			var drain func() bool // reports whether the channel is closed
			var cancel func()
			switch i % 6 {
			case 0, 1, 2: // plain: the route goes to two outlets and back to one
				c, cl := b.Subscribe(Buffer[directInt](i % 3))
				drain, cancel = func() bool { _, closed := drainNow(c); return closed }, cl
			case 3:
				c, cl := b.Subscribe(Buffer[directInt](1), Overflow[directInt](DropOldest))
				drain, cancel = func() bool { _, closed := drainNow(c); return closed }, cl
			case 4:
				c, cl := b.Subscribe(Buffer[directOther](1), From(func(x directInt) (directOther, bool) { return directOther(x), x%2 == 0 }))
				drain, cancel = func() bool { _, closed := drainNow(c); return closed }, cl
			case 5:
				c, cl := b.Subscribe(Buffer[any](1))
				drain, cancel = func() bool { _, closed := drainNow(c); return closed }, cl
			}
			for range i % 4 {
				runtime.Gosched()
			}
			cancel()
			if !drain() {
				t.Errorf("churn %d: the channel is open after its cancel returned", i)
				return
			}
		}
	})

	var procs sync.WaitGroup
	procs.Go(func() {
		for i := 0; !churnStop.Load(); i++ {
			runtime.GOMAXPROCS([]int{1, 2, 5, 3}[i%4])
			time.Sleep(200 * time.Microsecond)
		}
	})

	time.Sleep(time.Duration(5+round%20) * time.Millisecond)
	churnStop.Store(true)
	churn.Wait()
	procs.Wait()
	// Shutdown while the publishers still publish.
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	stop.Store(true)
	pubs.Wait()
	<-consumed
	close(panics)
	for p := range panics {
		t.Errorf("round %d: panic: %v", round, p)
	}
	if err := unaccounted(published.Load(), received.Load(), s.stats().Lost); err != nil {
		t.Errorf("round %d (buffer %d): %v", round, buffer, err)
	}
}

// unaccounted returns an error unless each of n publications to one
// subscription was received (got of them) or counted lost Full or Closed,
// exactly once, and no loss of another kind was counted.
func unaccounted(n, got int64, l Lost) error {
	if uint64(got)+l.Full+l.Closed != uint64(n) || l.Evicted+l.Failed+l.Skipped != 0 {
		return fmt.Errorf("%d published, %d received, Lost %+v: %d unaccounted",
			n, got, l, n-got-int64(l.Full)-int64(l.Closed))
	}
	return nil
}

// Publishers that never yield of their own accord, more of them than Ps, so
// that the runtime preempts them asynchronously, anywhere in sendDirect,
// race Shutdown. The subscription is unbuffered with no receiver waiting:
// every publication passes the check before the guard and enters it (and
// counts Full there). A publisher preempted between its load of the route
// and its count into the guard resumes after Shutdown has closed the
// channel, which the seal does not bury: it must still find the route
// changed, inside the guard. No publication may panic, and every one must be
// counted once, Full or Closed. Catches, by chance, a sendDirect that
// compares the route before it enters the guard rather than inside it
// ("send on closed channel" in 3 of 8 runs of 4 s, on 2 CPUs shared with
// another job); no deterministic test reaches that window.
func TestPreemptedDirectPublishersRacingShutdownCountEveryValueOnce(t *testing.T) {
	d := time.Second
	if testing.Short() {
		d = 250 * time.Millisecond
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rounds := 0
	for start := time.Now(); rounds < 4 || time.Since(start) < d; rounds++ {
		var b Broker
		ch, _ := b.Subscribe(Buffer[directInt](0)) // never received from
		e := b.table.Load().find(keyOf[directInt](), nil)
		s := routeNow[directInt](e).direct[0].sub
		var published atomic.Int64
		var stop atomic.Bool
		var pubs sync.WaitGroup
		panics := make(chan any, 16)
		for range 8 {
			pubs.Go(func() {
				defer func() {
					if x := recover(); x != nil {
						panics <- x
					}
				}()
				n := int64(0)
				for !stop.Load() {
					b.Publish(directInt(n))
					n++
				}
				published.Add(n)
			})
		}
		time.Sleep(time.Duration(10+rounds%3*10) * time.Millisecond) // preemptions, at 10 ms slices
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		stop.Store(true) // a publisher held up in a Publish still finishes it
		pubs.Wait()
		close(panics)
		for p := range panics {
			t.Fatalf("round %d: a publication panicked: %v", rounds, p)
		}
		if got, closed := drainNow(ch); len(got) != 0 || !closed {
			t.Fatalf("round %d: received %d values (closed %v), want none and closed", rounds, len(got), closed)
		}
		l := s.stats().Lost
		if n := published.Load(); l.Full+l.Closed != uint64(n) || l.Total() != uint64(n) {
			t.Fatalf("round %d: %d published, Lost %+v", rounds, n, l)
		}
	}
	t.Logf("%d rounds", rounds)
}
