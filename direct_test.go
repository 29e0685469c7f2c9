package topic

import (
	"testing"
)

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
	// them before sendDirect (see review_direct_test.go).
	stale := rdStale[staleInt]
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
	load := func() *route[soloInt] { return r2Route[soloInt](&b) }
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
	if got, closed := rdDrain(plain); len(got) != 1 || got[0] != 2 || !closed {
		t.Errorf("the plain subscription received %v (closed %v), want [2], closed", got, closed)
	}
	if r := load(); r.soloFn == nil {
		t.Fatalf("the From source alone again: route %+v, want soloFn set", r)
	}
	b.Publish(soloInt(3))
	c1()
	if got, _ := rdDrain(from); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 || called != 3 {
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
	if got, _ := rdDrain(own); len(got) != 1 || got[0] != 4 || len(lost) != 1 || lost[0].Value != 5 {
		t.Errorf("the OnLoss subscription received %v and lost %+v, want [4] and 5", got, lost)
	}
}
