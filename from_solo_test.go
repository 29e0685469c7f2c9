package topic

// Tests of the solo From path: a route whose only source is a From source
// is delivered to by Publish through the source's own closure
// (route.soloFn), whose deferred recover turns a panic of the From function
// into a Failed loss and counts a runtime.Goexit the same way; the deferred
// closure reads the value through a pointer to the closure's parameter.
// The tests check that each test's route really takes that path
// (sfWantSoloFn), then check the recover (panic kinds, Goexit, a From
// function that changes its parameter), re-entrancy (a From function that
// subscribes, cancels, publishes), routes switching in and out of the path
// under concurrent publishers and Shutdown, allocations, a handler's
// re-drive of dead letters and an interface Sub.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type (
	sfVal struct {
		N int
		A [8]int
		S string
	}
	sfBig   [64]int
	sfC     int
	sfD     int
	sfRec   int
	sfJob   int
	sfShut  int
	sfAlloc int
	sfTr    int
)

type sfStringer struct{ s string }

func (v sfStringer) String() string { return v.s }

var errSF = errors.New("sf: boom")

// sfWantSoloFn fails unless T's route is delivered to through soloFn.
func sfWantSoloFn[T any](t *testing.T, b *Broker, want bool) {
	t.Helper()
	r := routeOf[T](b)
	if got := r != nil && r.soloFn != nil; got != want {
		t.Fatalf("route of %T: soloFn set %v, want %v (route %+v)", *new(T), got, want, r)
	}
}

// sfLost returns the Lost counts of the subscription named name.
func sfLost(t *testing.T, b *Broker, name string) (Lost, SubscriptionStats) {
	t.Helper()
	for _, st := range b.Subscriptions() {
		if st.Name == name {
			return st.Lost, st
		}
	}
	t.Fatalf("no subscription named %q", name)
	return Lost{}, SubscriptionStats{}
}

// sfLosses collects what an OnLoss function is given.
type sfLosses[T any] struct {
	mu sync.Mutex
	l  []Loss[T]
}

func (s *sfLosses[T]) hook(l Loss[T]) {
	s.mu.Lock()
	s.l = append(s.l, l)
	s.mu.Unlock()
}

func (s *sfLosses[T]) all() []Loss[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Loss[T](nil), s.l...)
}

type soloInt int

// A route whose only source is a From source calls that source's closure
// straight from Publish (route.soloFn), and only then: a route that gains a
// second source, or whose only source is a subscription with an OnLoss
// function, takes the other paths, and a cancel that leaves the From source
// alone again restores it. Publications reach the From function on each of
// them. Catches a store that leaves soloFn set beside other sources (the
// plain subscription would miss publications) or never sets it.
func TestARouteOfOneFromSourceCallsItsClosure(t *testing.T) {
	var b Broker
	load := func() *route[soloInt] { return routeOf[soloInt](&b) }
	var called int
	from, c1 := b.Subscribe(Buffer[int](8), From(func(v soloInt) (int, bool) {
		called++
		return int(v), true
	}))
	defer c1()
	if r := load(); r == nil || r.soloFn == nil || r.solo == nil {
		t.Fatalf("one From source: route %+v, want solo and soloFn set", r)
	}
	b.Publish(soloInt(1))

	plain, c2 := b.Subscribe(Buffer[soloInt](8))
	if r := load(); r.soloFn != nil || r.solo != nil {
		t.Fatalf("a From source and a plain subscription: route %+v, want neither solo nor soloFn", r)
	}
	b.Publish(soloInt(2))
	c2()
	if got, closed := drainNow(plain); len(got) != 1 || got[0] != 2 || !closed {
		t.Errorf("the plain subscription received %v (closed %v), want [2], closed", got, closed)
	}
	if r := load(); r.soloFn == nil {
		t.Fatalf("the From source alone again: route %+v, want soloFn set", r)
	}
	b.Publish(soloInt(3))
	c1()
	if got, _ := drainNow(from); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 || called != 3 {
		t.Errorf("the From subscription received %v after %d calls, want [1 2 3] after 3", got, called)
	}

	var lost []Loss[soloInt]
	own, c3 := b.Subscribe(Buffer[soloInt](1), OnLoss(func(l Loss[soloInt]) { lost = append(lost, l) }))
	defer c3()
	if r := load(); r.solo == nil || r.soloFn != nil {
		t.Fatalf("one subscription with OnLoss: route %+v, want solo set and soloFn nil", r)
	}
	b.Publish(soloInt(4))
	b.Publish(soloInt(5))
	if got, _ := drainNow(own); len(got) != 1 || got[0] != 4 || len(lost) != 1 || lost[0].Value != 5 {
		t.Errorf("the OnLoss subscription received %v and lost %+v, want [4] and 5", got, lost)
	}
}

// A From function alone on its route that panics, whatever with (a value,
// nil, a runtime error, an error), after changing its parameter: each value
// is lost once, counted as Failed, and reported to OnLoss with the value as
// published (option.go: "Source is, for Failed, the published value given to
// the From function") and what it panicked with; the publisher carries on
// and the values it accepts are received. Catches a closure whose recover
// is missing or misplaced (the publisher panics), one that counts a value
// that was delivered (ran not set) or reports a zero or changed Source.
func TestSoloFromPanicsOfEveryKindCountOnceWithThePublishedValue(t *testing.T) {
	var b Broker
	var log sfLosses[int]
	ch, cancel := b.Subscribe(Name[int]("sf"), Buffer[int](16), OnLoss(log.hook), From(func(v sfVal) (int, bool) {
		n := v.N
		v.N, v.A[0], v.A[7], v.S = -1, -1, -1, "changed" // the parameter only
		switch n {
		case 1:
			panic("value")
		case 2:
			panic(nil)
		case 3:
			var m map[int]int
			//lint:ignore SA5000 the runtime error is the point
			m[0] = 1
		case 4:
			var a []int
			_ = a[n]
		case 5:
			panic(errSF)
		case 7:
			return n, false
		}
		return n, true
	}))
	defer cancel()
	sfWantSoloFn[sfVal](t, &b, true)
	var pub []sfVal
	for n := range 9 {
		v := sfVal{N: n, S: fmt.Sprint("v", n)}
		v.A[0], v.A[7] = n*10, n*70
		pub = append(pub, v)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("Publish(%d) panicked: %v", n, p)
				}
			}()
			b.Publish(v)
		}()
	}
	got, _ := drainNow(ch)
	if fmt.Sprint(got) != "[0 6 8]" {
		t.Errorf("received %v, want [0 6 8]", got)
	}
	if l, _ := sfLost(t, &b, "sf"); l != (Lost{Failed: 5}) {
		t.Errorf("lost %+v, want Failed: 5", l)
	}
	losses := log.all()
	if len(losses) != 5 {
		t.Fatalf("OnLoss got %d losses, want 5: %+v", len(losses), losses)
	}
	for i, l := range losses {
		n := i + 1
		if l.Cause != Failed || l.Value != 0 {
			t.Errorf("loss %d: cause %v value %v, want failed, 0", n, l.Cause, l.Value)
		}
		if src, ok := l.Source.(sfVal); !ok || src != pub[n] {
			t.Errorf("loss %d: Source %#v, want the published %#v", n, l.Source, pub[n])
		}
	}
	if p := losses[0].Panic; p != "value" {
		t.Errorf("loss 1: Panic %#v, want \"value\"", p)
	}
	if _, ok := losses[1].Panic.(*runtime.PanicNilError); !ok {
		t.Errorf("loss 2 (panic(nil)): Panic %#v, want a *runtime.PanicNilError", losses[1].Panic)
	}
	for _, i := range []int{2, 3} {
		if _, ok := losses[i].Panic.(runtime.Error); !ok {
			t.Errorf("loss %d: Panic %#v, want a runtime.Error", i+1, losses[i].Panic)
		}
	}
	if losses[4].Panic != errSF {
		t.Errorf("loss 5: Panic %#v, want errSF", losses[4].Panic)
	}
	if errors.Is(asErr(losses[1].Panic), errFromGoexit) {
		t.Errorf("panic(nil) reported as a Goexit")
	}
}

func asErr(p any) error { e, _ := p.(error); return e }

// The same for a large Sub, passed in memory: a From function that
// overwrites its parameter and panics reports the value as published.
func TestSoloFromPanicOfALargeValueReportsItAsPublished(t *testing.T) {
	var b Broker
	var log sfLosses[int]
	_, cancel := b.Subscribe(Name[int]("big"), OnLoss(log.hook), From(func(v sfBig) (int, bool) {
		for i := range v {
			v[i] = -1
		}
		panic(v[0])
	}))
	defer cancel()
	sfWantSoloFn[sfBig](t, &b, true)
	var v sfBig
	for i := range v {
		v[i] = i + 1
	}
	b.Publish(v)
	losses := log.all()
	if len(losses) != 1 || losses[0].Cause != Failed || losses[0].Source != v || losses[0].Panic != -1 {
		t.Fatalf("losses %+v, want one Failed of the value published, Panic -1", losses)
	}
	if l, _ := sfLost(t, &b, "big"); l != (Lost{Failed: 1}) {
		t.Errorf("lost %+v, want Failed: 1", l)
	}
}

// A From function alone on its route that changes its parameter and calls
// runtime.Goexit: the publisher's goroutine ends (its deferred calls run),
// after the value was counted once as Failed and reported with the value as
// published and errFromGoexit; the next publication, from another
// goroutine, is delivered.
func TestSoloFromGoexitCountsOnceThenEndsThePublisher(t *testing.T) {
	var b Broker
	var log sfLosses[int]
	var calls atomic.Int32
	ch, cancel := b.Subscribe(Name[int]("exit"), Buffer[int](4), OnLoss(log.hook), From(func(v sfVal) (int, bool) {
		calls.Add(1)
		if v.N == 1 {
			v.N, v.S = 0, ""
			runtime.Goexit()
		}
		return v.N, true
	}))
	defer cancel()
	sfWantSoloFn[sfVal](t, &b, true)
	pub := sfVal{N: 1, S: "one"}
	returned, deferred := false, false
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { deferred = true }()
		b.Publish(pub)
		returned = true
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the publisher did not end")
	}
	if returned || !deferred {
		t.Fatalf("Publish returned %v, publisher's deferred call ran %v: want false, true", returned, deferred)
	}
	losses := log.all()
	if len(losses) != 1 || losses[0].Cause != Failed || losses[0].Source != pub || !errors.Is(asErr(losses[0].Panic), errFromGoexit) {
		t.Fatalf("losses %+v, want one Failed of %v with errFromGoexit", losses, pub)
	}
	b.Publish(sfVal{N: 2})
	if got, _ := drainNow(ch); len(got) != 1 || got[0] != 2 || calls.Load() != 2 {
		t.Errorf("received %v after %d calls, want [2] after 2", got, calls.Load())
	}
	if l, _ := sfLost(t, &b, "exit"); l != (Lost{Failed: 1}) {
		t.Errorf("lost %+v, want Failed: 1", l)
	}
}

// A From function alone on its route subscribes a plain subscription of its
// own source type and publishes that type from inside (the route stops being
// solo during the call), then, on a later publication that reached both,
// cancels it from inside (solo again), then
// publishes recursively through the solo path. Every value reaches what it
// should, nothing is lost, and the route's path follows.
func TestSoloFromMaySubscribePublishAndCancelFromInside(t *testing.T) {
	var b Broker
	var plain <-chan sfC
	var cancelPlain func()
	var calls atomic.Int32
	ch, cancel := b.Subscribe(Name[int]("re"), Buffer[int](64), From(func(v sfC) (int, bool) {
		calls.Add(1)
		switch {
		case v == 1:
			plain, cancelPlain = b.Subscribe(Buffer[sfC](8))
			if r := routeOf[sfC](&b); r.soloFn != nil || r.solo != nil {
				panic("a From source beside a plain subscription is solo")
			}
			b.Publish(sfC(2)) // both get it
		case v == 3:
			cancelPlain()
			if r := routeOf[sfC](&b); r.soloFn == nil {
				panic("the From source alone again is not solo")
			}
		case v >= 100 && v < 110:
			b.Publish(v + 1) // recursion through soloFn
		}
		return int(v), true
	}))
	defer cancel()
	sfWantSoloFn[sfC](t, &b, true)
	b.Publish(sfC(1))
	sfWantSoloFn[sfC](t, &b, false)
	b.Publish(sfC(3))
	sfWantSoloFn[sfC](t, &b, true)
	b.Publish(sfC(100))
	got, _ := drainNow(ch)
	want := "[2 1 3 110 109 108 107 106 105 104 103 102 101 100]"
	if fmt.Sprint(got) != want {
		t.Errorf("the From subscription received %v, want %v", got, want)
	}
	// 3 was published while the plain subscription was registered: it is
	// sent to it before the From function cancels it.
	if p, closed := drainNow(plain); fmt.Sprint(p) != "[2 3]" || !closed {
		t.Errorf("the plain subscription received %v (closed %v), want [2 3], closed", p, closed)
	}
	if calls.Load() != 14 {
		t.Errorf("%d calls, want 14", calls.Load())
	}
	if l, _ := sfLost(t, &b, "re"); l != (Lost{}) {
		t.Errorf("lost %+v, want nothing", l)
	}
}

// A From function alone on its route cancels its own subscription: its
// value is not sent on the closed channel (no panic), the function is never
// called again, and one that cancels and then panics does not take the
// publisher down.
func TestSoloFromCancellingItsOwnSubscriptionSendsNothing(t *testing.T) {
	for _, panics := range []bool{false, true} {
		t.Run(fmt.Sprint("panics=", panics), func(t *testing.T) {
			var b Broker
			var cancel func()
			var calls atomic.Int32
			var ch <-chan int
			ch, cancel = b.Subscribe(Buffer[int](4), From(func(v sfD) (int, bool) {
				calls.Add(1)
				if v == 2 {
					cancel()
					if panics {
						panic("after cancel")
					}
				}
				return int(v), true
			}))
			sfWantSoloFn[sfD](t, &b, true)
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("Publish panicked: %v", p)
				}
			}()
			for v := range sfD(4) {
				b.Publish(v + 1)
			}
			if got, closed := drainNow(ch); fmt.Sprint(got) != "[1]" || !closed || calls.Load() != 2 {
				t.Errorf("received %v (closed %v) after %d calls, want [1], closed, after 2", got, closed, calls.Load())
			}
			if n := len(b.Subscriptions()); n != 0 {
				t.Errorf("%d subscriptions left, want 0", n)
			}
		})
	}
}

// Publishers of sfC and sfD run while a churner subscribes and cancels
// around a From subscription that stays: a plain sfC subscription (the route
// of sfC leaves and regains soloFn), and alternately a From and an OnLoss
// subscription of sfD, each alone (soloFn and the interface path in turn).
// Then Shutdown, with the publishers still running. For the subscription
// that stayed, doc.go: "once publishers have stopped, the values published
// that a subscription matched equal the values it received, plus those its
// From functions rejected, plus its lost counts". No send after a cancel
// (a panic), race-clean under -race.
func TestSoloFromChurnAndShutdownAccountForEveryPublication(t *testing.T) {
	var b Broker
	var rejected, panicked atomic.Int64
	keep, _ := b.Subscribe(Name[int]("keep"), Buffer[int](256), From(func(v sfC) (int, bool) {
		switch {
		case v%11 == 0:
			panicked.Add(1)
			panic(int(v))
		case v%3 == 0:
			rejected.Add(1)
			return 0, false
		}
		return int(v), true
	}))
	sfWantSoloFn[sfC](t, &b, true)
	var received atomic.Int64
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range keep {
			received.Add(1)
		}
	}()

	var stop atomic.Bool
	var published atomic.Int64
	var pubs sync.WaitGroup
	for p := range 4 {
		pubs.Go(func() {
			for i := 0; !stop.Load(); i++ {
				published.Add(1)
				b.Publish(sfC(i*4 + p))
				b.Publish(sfD(i))
			}
		})
	}
	var churn sync.WaitGroup
	churnStop := make(chan struct{})
	churn.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-churnStop:
				return
			default:
			}
			ch, cancel := b.Subscribe(Buffer[sfC](8))
			runtime.Gosched()
			cancel()
			for range ch { // closed by cancel: ends
			}
			var cd func()
			if i%2 == 0 {
				_, cd = b.Subscribe(Buffer[int](1), From(func(v sfD) (int, bool) { return int(v), v%2 == 0 }))
			} else {
				_, cd = b.Subscribe(Buffer[sfD](1), OnLoss(func(Loss[sfD]) {}))
			}
			runtime.Gosched()
			cd()
		}
	})
	time.Sleep(150 * time.Millisecond)
	ctx, cancelCtx := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelCtx()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	time.Sleep(20 * time.Millisecond) // publications after Shutdown: Closed
	stop.Store(true)
	pubs.Wait()
	close(churnStop)
	churn.Wait()
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("the kept subscription was not closed by Shutdown")
	}
	l, _ := sfLost(t, &b, "keep")
	got := received.Load() + rejected.Load() + int64(l.Total())
	t.Logf("published %d: received %d, rejected %d, lost %+v", published.Load(), received.Load(), rejected.Load(), l)
	if got != published.Load() {
		t.Errorf("published %d, but received %d + rejected %d + lost %d = %d",
			published.Load(), received.Load(), rejected.Load(), l.Total(), got)
	}
	if int64(l.Failed) != panicked.Load() {
		t.Errorf("Failed %d, want the %d panics", l.Failed, panicked.Load())
	}
}

// A publisher of a solo From route whose function is still running when
// Shutdown seals: its accepted value is counted as Closed (doc.go: "counts a
// publication that would have reached a closed subscription as Closed"),
// one that panics then is counted Failed, and a publication after Shutdown
// is counted Closed with the value the From function would have been given.
// Shutdown does not wait for the From function, which runs outside the guard:
// the value it accepted is reported with Value set and Source nil (Loss).
func TestSoloFromRacingShutdownCountsClosed(t *testing.T) {
	var b Broker
	var log sfLosses[string]
	entered, release := make(chan sfShut, 2), make(chan struct{})
	ch, _ := b.Subscribe(Name[string]("shut"), Buffer[string](4), OnLoss(log.hook), From(func(v sfShut) (string, bool) {
		if v > 0 {
			entered <- v
			<-release
		}
		if v == 2 {
			panic("two")
		}
		return fmt.Sprint("s", int(v)), true
	}))
	sfWantSoloFn[sfShut](t, &b, true)
	b.Publish(sfShut(0))
	var wg sync.WaitGroup
	wg.Go(func() { b.Publish(sfShut(1)) })
	wg.Go(func() { b.Publish(sfShut(2)) })
	<-entered
	<-entered
	ctx, cancelCtx := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelCtx()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	close(release)
	wg.Wait()
	b.Publish(sfShut(3))
	if got, closed := drainNow(ch); fmt.Sprint(got) != "[s0]" || !closed {
		t.Errorf("received %v (closed %v), want [s0], closed", got, closed)
	}
	if l, _ := sfLost(t, &b, "shut"); l != (Lost{Closed: 2, Failed: 1}) {
		t.Errorf("lost %+v, want Closed: 2, Failed: 1", l)
	}
	var closedValues, closedSources, failed []any
	for _, l := range log.all() {
		switch l.Cause {
		case Closed:
			if l.Value != "" {
				closedValues = append(closedValues, l.Value)
			} else {
				closedSources = append(closedSources, l.Source)
			}
		case Failed:
			failed = append(failed, l.Source)
		}
	}
	if fmt.Sprint(closedValues, closedSources, failed) != "[s1] [3] [2]" {
		t.Errorf("reported Closed values %v, Closed sources %v, Failed %v; want [s1] [3] [2]", closedValues, closedSources, failed)
	}
}

// Publication to a lone From filter that rejects, and to a lone transform,
// allocates nothing (doc.go, Allocation), for a small, a large and a string
// source type.
func TestSoloFromAllocatesNothing(t *testing.T) {
	var b Broker
	_, c1 := b.Subscribe(From(func(v sfAlloc) (int, bool) { return 0, false }))
	defer c1()
	tr, c2 := b.Subscribe(Buffer[int](1), From(func(v sfTr) (int, bool) { return int(v) + 1, true }))
	defer c2()
	_, c3 := b.Subscribe(From(func(v sfBig) (int, bool) { return v[3], v[0] == 1 }))
	defer c3()
	_, c4 := b.Subscribe(From(func(v string) (int, bool) { return len(v), false }))
	defer c4()
	sfWantSoloFn[sfAlloc](t, &b, true)
	sfWantSoloFn[sfTr](t, &b, true)
	sfWantSoloFn[sfBig](t, &b, true)
	sfWantSoloFn[string](t, &b, true)
	var big sfBig
	big[3] = 3
	s := "abc"
	for name, f := range map[string]func(){
		"rejecting filter": func() { b.Publish(sfAlloc(1)) },
		"transform":        func() { b.Publish(sfTr(1)); <-tr },
		"large":            func() { b.Publish(big) },
		"string":           func() { b.Publish(s) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per publication, want 0", name, n)
		}
	}
}

// A handler of sfJob re-drives dead letters through a From source of
// DeadLetter[sfJob], the only source of that route (soloFn): a dead letter
// published there goes to the handler's re-drive queue, and when the
// handler fails on it, it is counted Errored, not dead-lettered again
// (handler.go: "A handler does not dead-letter a value ... that reached it
// through a From source from a dead letter").
func TestSoloFromRedrivesADeadLetterWithoutDeadLetteringItAgain(t *testing.T) {
	var b Broker
	var calls atomic.Int32
	stop := b.Handle(func(_ context.Context, v sfJob) error {
		calls.Add(1)
		return Permanent(errSF)
	}, Name[sfJob]("h"), Retry[sfJob](RetryPolicy{Attempts: 1}),
		From(func(d DeadLetter[sfJob]) (sfJob, bool) { return d.Value, true }))
	defer stop()
	sfWantSoloFn[DeadLetter[sfJob]](t, &b, true)
	b.Publish(DeadLetter[sfJob]{Value: 7, Err: errSF, Attempts: 1, Handler: "h"})
	ctx, cancelCtx := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelCtx()
	if err := b.Settle(ctx); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	l, st := sfLost(t, &b, "h")
	if calls.Load() != 1 || l != (Lost{Errored: 1}) || st.Handler == nil || st.Handler.DeadLettered != 0 {
		t.Errorf("%d calls, lost %+v, handler %+v: want 1 call, Errored: 1, nothing dead-lettered", calls.Load(), l, st.Handler)
	}
}

// A From source whose Sub is an interface type, alone on the route of that
// interface published as itself (soloFn of route[fmt.Stringer] when the
// route is solo; otherwise the other paths): its value is delivered, and a
// panic reports the interface value as published.
func TestSoloFromOfAnInterfaceSourceDeliversTheValue(t *testing.T) {
	var b Broker
	var log sfLosses[string]
	ch, cancel := b.Subscribe(Name[string]("if"), Buffer[string](4), OnLoss(log.hook), From(func(v fmt.Stringer) (string, bool) {
		if v.String() == "panic" {
			panic("p")
		}
		return v.String(), true
	}))
	defer cancel()
	b.Publish(fmt.Stringer(sfStringer{"a"}))
	b.Publish(fmt.Stringer(sfStringer{"panic"}))
	b.Publish(sfStringer{"b"})
	if got, _ := drainNow(ch); fmt.Sprint(got) != "[a b]" {
		t.Errorf("received %v, want [a b]", got)
	}
	losses := log.all()
	if len(losses) != 1 || losses[0].Cause != Failed || losses[0].Source != (sfStringer{"panic"}) {
		t.Errorf("losses %+v, want one Failed of sfStringer{panic}", losses)
	}
	if l, _ := sfLost(t, &b, "if"); l != (Lost{Failed: 1}) {
		t.Errorf("lost %+v, want Failed: 1", l)
	}
}

// A retained type replayed to a subscription with a From source of its own
// type goes through the same closure (deliver, after the sequencing point is
// let go): a panic during the replay is counted once as Failed, with the
// replayed value, and the rest are delivered, then the live ones.
func TestSoloFromReplayGoesThroughTheClosure(t *testing.T) {
	var b Broker
	b.Retain[sfRec](Retention{Count: 16})
	for v := range sfRec(4) {
		b.Publish(v + 1)
	}
	var log sfLosses[sfRec]
	ch, cancel := b.Subscribe(Name[sfRec]("rep"), Buffer[sfRec](8), OnLoss(log.hook), Replay[sfRec](Earliest()), From(func(v sfRec) (sfRec, bool) {
		if v == 2 {
			panic("two")
		}
		return v * 10, true
	}))
	defer cancel()
	b.Publish(sfRec(5))
	if got, _ := drainNow(ch); fmt.Sprint(got) != "[10 30 40 50]" {
		t.Errorf("received %v, want [10 30 40 50]", got)
	}
	losses := log.all()
	if len(losses) != 1 || losses[0].Source != sfRec(2) || losses[0].Cause != Failed {
		t.Errorf("losses %+v, want one Failed of 2", losses)
	}
	if l, _ := sfLost(t, &b, "rep"); l != (Lost{Failed: 1}) {
		t.Errorf("lost %+v, want Failed: 1", l)
	}
}
