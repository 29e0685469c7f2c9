package topic_test

import (
	"fmt"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// allocPayload is 32 bytes of non-zero, pointer-free data: boxing it in an
// interface always allocates, so any hidden boxing on a path shows up as an
// allocation.
type allocPayload struct{ A, B, C, D int64 }

// Sum makes allocPayload (the value, not only the pointer) implement
// allocSummer.
func (p allocPayload) Sum() int64 { return p.A + p.B + p.C + p.D }

// String is declared on the pointer, so *allocPayload is a fmt.Stringer and
// allocPayload is not.
func (p *allocPayload) String() string { return "payload" }

// allocSummer is an interface the allocPayload value implements.
type allocSummer interface{ Sum() int64 }

// allocOther is a concrete type that never matches allocPayload.
type allocOther struct{ N int }

var payload = allocPayload{A: 1, B: 2, C: 3, D: 4}

// Publication allocation counts are exact. AllocsPerRun already runs f once
// before measuring; each test also publishes once itself first, so a cache
// built by the first publication of a type is never counted. The measured
// function drains what it delivered, so every run delivers.
func wantAllocs(t *testing.T, want float64, f func()) {
	t.Helper()
	f()
	if got := testing.AllocsPerRun(100, f); got != want {
		t.Errorf("allocations per run = %v, want %v", got, want)
	}
}

// mustTake receives one value that must already be there.
func mustTake[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case <-ch:
	default:
		t.Fatal("publication was not delivered")
	}
}

func TestPublishWithNoSubscriberDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	wantAllocs(t, 0, func() { b.Publish(payload) })
}

func TestPublishOfUnmatchedTypeDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	_, cancel := b.Subscribe[allocOther]()
	defer cancel()
	_, cancelFrom := b.Subscribe(topic.From(func(o allocOther) (int, bool) { return o.N, true }))
	defer cancelFrom()
	wantAllocs(t, 0, func() { b.Publish(payload) })
}

func TestDirectDeliveryDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	ch, cancel := b.Subscribe[allocPayload]()
	defer cancel()
	wantAllocs(t, 0, func() {
		b.Publish(payload)
		mustTake(t, ch)
	})
}

func TestFanOutToTenSubscribersDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	var chans []<-chan allocPayload
	for range 10 {
		ch, cancel := b.Subscribe[allocPayload]()
		defer cancel()
		chans = append(chans, ch)
	}
	wantAllocs(t, 0, func() {
		b.Publish(payload)
		for _, ch := range chans {
			mustTake(t, ch)
		}
	})
}

func TestFromTransformationDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	ch, cancel := b.Subscribe(topic.From(func(p allocPayload) (allocOther, bool) {
		return allocOther{N: int(p.Sum())}, true
	}))
	defer cancel()
	wantAllocs(t, 0, func() {
		b.Publish(payload)
		mustTake(t, ch)
	})
}

func TestRejectingFromFilterDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	ch, cancel := b.Subscribe(topic.From(func(p allocPayload) (allocPayload, bool) {
		return p, false
	}))
	defer cancel()
	wantAllocs(t, 0, func() { b.Publish(payload) })
	if n := len(ch); n != 0 {
		t.Errorf("rejecting filter delivered %d values", n)
	}
}

func TestSaturatedSubscriberDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	ch, cancel := b.Subscribe[allocPayload]()
	defer cancel()
	b.Publish(payload) // fill the buffer
	wantAllocs(t, 0, func() { b.Publish(payload) })
	if n := len(ch); n != 1 {
		t.Errorf("saturated subscriber holds %d values, want 1", n)
	}
}

func TestPointerToInterfaceSubscriptionDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	strs, cancelStrs := b.Subscribe[fmt.Stringer]()
	defer cancelStrs()
	all, cancelAll := b.Subscribe[any]()
	defer cancelAll()
	p := &allocPayload{A: 1, B: 2, C: 3, D: 4}
	wantAllocs(t, 0, func() {
		b.Publish(p)
		mustTake(t, strs)
		mustTake(t, all)
	})
}

func TestInterfaceValueToInterfaceSubscriptionDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	sums, cancelSums := b.Subscribe[allocSummer]()
	defer cancelSums()
	all, cancelAll := b.Subscribe[any]()
	defer cancelAll()
	var s allocSummer = payload // boxed once, here, outside the measurement
	wantAllocs(t, 0, func() {
		b.Publish(s)
		mustTake(t, sums)
		mustTake(t, all)
	})
}

func TestSmallValueToAnySubscriptionDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	all, cancel := b.Subscribe(topic.Buffer[any](3))
	defer cancel()
	wantAllocs(t, 0, func() {
		b.Publish(int64(7))   // eight bytes below 256
		b.Publish(true)       // one byte
		b.Publish(struct{}{}) // zero-sized
		mustTake(t, all)
		mustTake(t, all)
		mustTake(t, all)
	})
}

func TestValueToAnySubscriptionAllocatesOnce(t *testing.T) {
	var b topic.Broker
	all, cancel := b.Subscribe[any]()
	defer cancel()
	wantAllocs(t, 1, func() {
		b.Publish(payload)
		mustTake(t, all)
	})
}

// The boxing is shared: ten interface subscriptions cost what one does.
func TestValueToTenInterfaceSubscriptionsAllocatesOnce(t *testing.T) {
	var b topic.Broker
	var alls []<-chan any
	var sums []<-chan allocSummer
	for range 5 {
		ch, cancel := b.Subscribe[any]()
		defer cancel()
		alls = append(alls, ch)
		sum, cancelSum := b.Subscribe[allocSummer]()
		defer cancelSum()
		sums = append(sums, sum)
	}
	direct, cancelDirect := b.Subscribe[allocPayload]()
	defer cancelDirect()
	wantAllocs(t, 1, func() {
		b.Publish(payload)
		for i := range alls {
			mustTake(t, alls[i])
			mustTake(t, sums[i])
		}
		mustTake(t, direct)
	})
}

// A From function of an interface source takes the value boxed too, and
// shares the one boxing with the interface subscriptions.
func TestValueToInterfaceFromSourcesAllocatesOnce(t *testing.T) {
	var b topic.Broker
	sums, cancelSums := b.Subscribe(topic.From(func(s allocSummer) (int64, bool) { return s.Sum(), true }))
	defer cancelSums()
	filtered, cancelFiltered := b.Subscribe(topic.From(func(v any) (int64, bool) { return 0, false }))
	defer cancelFiltered()
	all, cancelAll := b.Subscribe[any]()
	defer cancelAll()
	wantAllocs(t, 1, func() {
		b.Publish(payload)
		mustTake(t, sums)
		mustTake(t, all)
	})
	if n := len(filtered); n != 0 {
		t.Errorf("rejecting filter delivered %d values", n)
	}
}

func TestNonMatchingInterfaceSubscriptionsDoNotMakeConcretePublicationAllocate(t *testing.T) {
	var b topic.Broker
	for range 50 {
		_, cancelErr := b.Subscribe[error]()
		defer cancelErr()
		_, cancelStr := b.Subscribe[fmt.Stringer]() // only *allocPayload is one
		defer cancelStr()
	}
	direct, cancelDirect := b.Subscribe[allocPayload]()
	defer cancelDirect()
	wantAllocs(t, 0, func() {
		b.Publish(payload)
		mustTake(t, direct)
	})
}

func TestNonMatchingInterfaceSubscriptionsAloneDoNotMakeConcretePublicationAllocate(t *testing.T) {
	var b topic.Broker
	for range 50 {
		_, cancelErr := b.Subscribe[error]()
		defer cancelErr()
		_, cancelStr := b.Subscribe[fmt.Stringer]()
		defer cancelStr()
	}
	wantAllocs(t, 0, func() { b.Publish(payload) })
}

// A subscription whose own type is an interface but whose first matching
// source is concrete takes the publication unboxed. The From function
// returns a preallocated pointer, so the only possible allocation would be
// the broker boxing allocPayload.
func TestConcreteFromSourceOfInterfaceSubscriptionDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	ptr := &allocPayload{}
	var str fmt.Stringer = ptr
	ch, cancel := b.Subscribe(topic.From(func(p allocPayload) (fmt.Stringer, bool) {
		return str, true
	}))
	defer cancel()
	wantAllocs(t, 0, func() {
		b.Publish(payload)
		mustTake(t, ch)
	})
}
