package topic_test

// Tests of From functions that call back into the broker, panic or call
// runtime.Goexit during the publication that called them, beside sources
// of every kind and as the only source of their route: the one deferred
// recover of a From source loses the value for its own subscription only,
// counted as Failed, and nothing is sent on a channel the function
// cancelled. None of them depends on timing.

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// A From function subscribes, cancels and publishes during the
// publication that called it: it cancels plain subscriptions of the type
// being published (whose outlets the publication has just used), of its
// own source type and of its own subscription's type, subscribes new ones,
// and publishes the type it is called for again. Nothing is sent on a
// cancelled channel (a panic), every cancelled channel is closed when the
// cancel returns, and a subscription made before a publication receives
// it.
func TestAFromFunctionMayChurnTheRouteItIsCalledFrom(t *testing.T) {
	var b topic.Broker
	var mu sync.Mutex // guards pool; held by no publisher while it publishes
	type one struct {
		cancel func()
		closed func() bool
	}
	var pool []one
	var open atomic.Int64
	rng := rand.New(rand.NewPCG(1, 3)) // guarded by mu
	churn := func() {
		mu.Lock()
		defer mu.Unlock()
		for range 2 {
			if len(pool) > 0 {
				k := rng.IntN(len(pool))
				o := pool[k]
				pool = slices.Delete(pool, k, k+1)
				o.cancel()
				if !o.closed() {
					open.Add(1)
				}
			}
		}
		for range 2 {
			switch rng.IntN(3) {
			case 0:
				ch, cancel := b.Subscribe(topic.Buffer[churnTick](rng.IntN(2)))
				pool = append(pool, one{cancel, func() bool { return drainClosed(ch) }})
			case 1:
				ch, cancel := b.Subscribe(topic.Buffer[string](1))
				pool = append(pool, one{cancel, func() bool { return drainClosed(ch) }})
			default:
				ch, cancel := b.Subscribe(topic.Buffer[churnSeq](1))
				pool = append(pool, one{cancel, func() bool { return drainClosed(ch) }})
			}
		}
	}
	var depth atomic.Int64
	strs, cancelStrs := b.Subscribe(
		topic.Buffer[string](1<<12),
		topic.From(func(t churnTick) (string, bool) {
			churn()
			if depth.Add(1) < 3 {
				b.Publish(churnTick{N: -t.N}) // re-entrant, the same type
			}
			depth.Add(-1)
			b.Publish(churnSeq{I: t.N})
			return t.String(), true
		}),
	)
	defer cancelStrs()
	// Beside it on the route of churnTick, plain subscriptions that must
	// keep receiving.
	ticks, cancelTicks := b.Subscribe(topic.Buffer[churnTick](1 << 12))
	defer cancelTicks()
	var wg sync.WaitGroup
	const perPub = 300
	for g := range 2 {
		wg.Go(func() {
			for i := range perPub {
				b.Publish(churnTick{N: 1 + g*perPub + i})
			}
		})
	}
	wg.Wait()
	mu.Lock()
	for _, o := range pool {
		o.cancel()
		if !o.closed() {
			open.Add(1)
		}
	}
	pool = nil
	mu.Unlock()
	if n := open.Load(); n != 0 {
		t.Errorf("%d channels open after their cancel returned", n)
	}
	// Each publication from outside reached both, and so did each nested
	// one; nothing was lost (the buffers hold it all).
	gotTicks, gotStrs := takeAll(ticks), takeAll(strs)
	if len(gotTicks) != len(gotStrs) || len(gotTicks) < 2*perPub {
		t.Errorf("the plain subscription received %d values, the From subscription %d; want the same, at least %d", len(gotTicks), len(gotStrs), 2*perPub)
	}
	for _, st := range b.Subscriptions() {
		if st.Lost.Total() != 0 {
			t.Errorf("%v lost %+v", st.Type, st.Lost)
		}
	}
}

// A From function's panic loses the value for its subscription
// alone, on a route with every kind of source beside it (plain, DropOldest,
// OnLoss, interface, another From source listed after it), and as the only
// source of its route (the solo path). panic(nil) is a panic, not a
// Goexit. A From function that cancels its own subscription and then
// panics, or calls runtime.Goexit, has nothing counted or reported.
func TestAFromPanicLosesTheValueForItsSubscriptionOnly(t *testing.T) {
	var b topic.Broker
	plain, c1 := b.Subscribe(topic.Buffer[churnTick](8))
	defer c1()
	oldest, c2 := b.Subscribe(topic.Buffer[churnTick](8), topic.Overflow[churnTick](topic.DropOldest))
	defer c2()
	var hookedLog lossLog[churnTick]
	hooked, c3 := b.Subscribe(topic.Buffer[churnTick](8), topic.OnLoss(hookedLog.hook))
	defer c3()
	strs, c4 := b.Subscribe(topic.Buffer[fmt.Stringer](8))
	defer c4()
	var panicsLog lossLog[string]
	panics, c5 := b.Subscribe(topic.Name[string]("panics"), topic.Buffer[string](8), topic.OnLoss(panicsLog.hook),
		topic.From(func(t churnTick) (string, bool) {
			switch t.N {
			case 1:
				panic("one")
			case 2:
				panic(nil)
			case 3:
				var m map[int]int
				//lint:ignore SA5000 the runtime error is the point
				m[0] = 1
			}
			return t.String(), true
		}))
	defer c5()
	after, c6 := b.Subscribe(topic.Name[int]("after"), topic.Buffer[int](8),
		topic.From(func(t churnTick) (int, bool) { return t.N, true }))
	defer c6()
	for i := range 5 {
		if msg, panicked := panicMessage(func() { b.Publish(churnTick{i}) }); panicked {
			t.Fatalf("Publish(%d) panicked: %s", i, msg)
		}
	}
	all := []churnTick{{0}, {1}, {2}, {3}, {4}}
	wantReceived(t, "plain", plain, all...)
	wantReceived(t, "oldest", oldest, all...)
	wantReceived(t, "hooked", hooked, all...)
	if got := len(takeAll(strs)); got != 5 {
		t.Errorf("the fmt.Stringer subscription received %d values, want 5", got)
	}
	wantReceived(t, "after", after, 0, 1, 2, 3, 4)
	wantReceived(t, "panics", panics, "tick 0", "tick 4")
	wantLost(t, &b, "panics", topic.Lost{Failed: 3})
	wantLost(t, &b, "after", topic.Lost{})
	if got := hookedLog.all(); len(got) != 0 {
		t.Errorf("a subscription beside the panicking source had losses reported: %+v", got)
	}
	got := panicsLog.all()
	if len(got) != 3 {
		t.Fatalf("OnLoss of the panicking subscription received %+v, want 3 losses", got)
	}
	if got[0].Panic != "one" {
		t.Errorf("the first Panic = %#v, want \"one\"", got[0].Panic)
	}
	if _, ok := got[1].Panic.(*runtime.PanicNilError); !ok {
		t.Errorf("the Panic of panic(nil) = %#v, want a *runtime.PanicNilError", got[1].Panic)
	}
	if err, ok := got[2].Panic.(runtime.Error); !ok || !strings.Contains(err.Error(), "nil map") {
		t.Errorf("the Panic of a nil map write = %#v, want the runtime.Error", got[2].Panic)
	}

	// The solo path: the only source of its route.
	var soloLog lossLog[string]
	solo, c7 := b.Subscribe(topic.Name[string]("solo"), topic.Buffer[string](8), topic.OnLoss(soloLog.hook),
		topic.From(func(s churnSoloA) (string, bool) {
			if s.N%2 == 1 {
				panic(s.N)
			}
			return strconv.Itoa(s.N), true
		}))
	defer c7()
	for i := range 4 {
		if msg, panicked := panicMessage(func() { b.Publish(churnSoloA{i}) }); panicked {
			t.Fatalf("Publish(churnSoloA{%d}) panicked: %s", i, msg)
		}
	}
	wantReceived(t, "solo", solo, "0", "2")
	wantLost(t, &b, "solo", topic.Lost{Failed: 2})
	if got := soloLog.all(); len(got) != 2 || got[0].Panic != 1 || got[1].Panic != 3 {
		t.Errorf("solo OnLoss received %+v, want the panics 1 and 3", got)
	}

	// Cancelled by f itself before it panics or exits: nothing counted,
	// nothing reported, and the channel is closed.
	for _, exit := range []bool{false, true} {
		var log lossLog[string]
		var cancel func()
		ch, c := b.Subscribe(topic.Buffer[string](1), topic.OnLoss(log.hook),
			topic.From(func(s churnSoloB) (string, bool) {
				cancel()
				if exit {
					runtime.Goexit()
				}
				panic("after cancel")
			}))
		cancel = c
		var wg sync.WaitGroup
		wg.Go(func() {
			if msg, panicked := panicMessage(func() { b.Publish(churnSoloB{}) }); panicked {
				t.Errorf("Publish panicked: %s", msg)
			}
		})
		wg.Wait()
		if got := log.all(); len(got) != 0 {
			t.Errorf("exit=%t: a subscription cancelled by its From function had losses reported: %+v", exit, got)
		}
		if !drainClosed(ch) {
			t.Errorf("exit=%t: channel open after the From function cancelled it", exit)
		}
	}
}

// fromExit is published by
// TestGoexitInAFromFunctionLosesNothingUncountedBesideIt alone.
type fromExit struct{ N int }

// A From function calling runtime.Goexit is counted as Failed
// for its subscription; the publisher's goroutine then ends. The
// subscriptions listed after it on the route never receive the value: is
// that loss counted (doc.go: "Nothing is lost silently")?
func TestGoexitInAFromFunctionLosesNothingUncountedBesideIt(t *testing.T) {
	var b topic.Broker
	plain, c1 := b.Subscribe(topic.Name[fromExit]("plain"), topic.Buffer[fromExit](1))
	defer c1()
	_, c2 := b.Subscribe(topic.Name[string]("exits"), topic.Buffer[string](1),
		topic.From(func(fromExit) (string, bool) { runtime.Goexit(); return "", true }))
	defer c2()
	oldest, c3 := b.Subscribe(topic.Name[fromExit]("oldest after"), topic.Buffer[fromExit](1), topic.Overflow[fromExit](topic.DropOldest))
	defer c3()
	from, c4 := b.Subscribe(topic.Name[int]("from after"), topic.Buffer[int](1),
		topic.From(func(e fromExit) (int, bool) { return e.N, true }))
	defer c4()
	var wg sync.WaitGroup
	wg.Go(func() { b.Publish(fromExit{1}) })
	wg.Wait()
	wantReceived(t, "plain", plain, fromExit{1})
	wantLost(t, &b, "exits", topic.Lost{Failed: 1})
	st := statsByName(t, &b)
	if got := len(takeAll(oldest)); got+int(st["oldest after"].Lost.Total()) != 1 {
		t.Errorf("oldest after: received %d, lost %+v: the publication is neither received nor counted", got, st["oldest after"].Lost)
	}
	if got := len(takeAll(from)); got+int(st["from after"].Lost.Total()) != 1 {
		t.Errorf("from after: received %d, lost %+v: the publication is neither received nor counted", got, st["from after"].Lost)
	}
}

// fromAlert is what the OnLoss function of
// TestAFromPanicDuringAPanicIsCountedAndTheOuterPanicGoesOn publishes.
type fromAlert struct{ N int }

// The one deferred recover of a From source: a From function
// that panics inside a Publish made by a deferred call while the goroutine
// is panicking is counted as Failed, and the goroutine's own panic goes on
// (is not recovered by the broker); one that returns normally there
// delivers. An OnLoss function reporting the panic may publish, reaching a
// From function that panics in turn.
func TestAFromPanicDuringAPanicIsCountedAndTheOuterPanicGoesOn(t *testing.T) {
	var b topic.Broker
	var log lossLog[string]
	ch, c1 := b.Subscribe(topic.Name[string]("panics"), topic.Buffer[string](4), topic.OnLoss(func(l topic.Loss[string]) {
		log.hook(l)
		b.Publish(fromAlert{1})
	}), topic.From(func(t churnTick) (string, bool) {
		if t.N == 1 {
			panic("inner")
		}
		return t.String(), true
	}))
	defer c1()
	alerts, c2 := b.Subscribe(topic.Name[fromAlert]("alerts"), topic.Buffer[fromAlert](4))
	defer c2()
	_, c3 := b.Subscribe(topic.Name[string]("alert panics"), topic.Buffer[string](4),
		topic.From(func(fromAlert) (string, bool) { panic("alert") }))
	defer c3()
	for _, n := range []int{0, 1} {
		outer := func() (r any) {
			defer func() { r = recover() }()
			defer b.Publish(churnTick{n})
			panic("outer")
		}()
		if outer != "outer" {
			t.Errorf("publishing %d from a deferred call: the goroutine's panic became %#v, want \"outer\"", n, outer)
		}
	}
	wantReceived(t, "panics", ch, "tick 0")
	wantLost(t, &b, "panics", topic.Lost{Failed: 1})
	wantReceived(t, "alerts", alerts, fromAlert{1})
	wantLost(t, &b, "alert panics", topic.Lost{Failed: 1})
	if got := log.all(); len(got) != 1 || got[0].Panic != "inner" {
		t.Errorf("OnLoss received %+v, want the panic \"inner\"", got)
	}
}
