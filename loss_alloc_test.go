package topic_test

import (
	"testing"

	"github.com/seedaa7df82c/topic"
)

// Losses are counted without allocating. Each test publishes allocPayload,
// which would allocate if it were boxed. wantAllocs publishes once, then
// AllocsPerRun once more and 100 times measured: 102 publications, each of
// which loses a value.
const lossAllocRuns = 102

// wantLostAfterAllocs checks the counts of the only subscription of b.
func wantLostAfterAllocs(t *testing.T, b *topic.Broker, want topic.Lost) {
	t.Helper()
	ss := b.Subscriptions()
	if len(ss) != 1 {
		t.Fatalf("Subscriptions lists %d subscriptions, want 1", len(ss))
	}
	if ss[0].Lost != want {
		t.Errorf("Lost = %+v, want %+v", ss[0].Lost, want)
	}
}

// A publication to a full drop-newest subscription counts its loss without
// allocating: alone, where the broker counts without entering the guard,
// and beside a subscription that makes it enter.
func TestCountedDropOnAFullSubscriptionDoesNotAllocate(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		var b topic.Broker
		ch, cancel := b.Subscribe[allocPayload]()
		defer cancel()
		b.Publish(payload) // fill the buffer
		wantAllocs(t, 0, func() { b.Publish(payload) })
		wantLostAfterAllocs(t, &b, topic.Lost{Full: lossAllocRuns})
		mustTake(t, ch)
	})
	t.Run("beside a From source", func(t *testing.T) {
		var b topic.Broker
		ch, cancel := b.Subscribe(topic.Name[allocPayload]("full"))
		defer cancel()
		var calls int
		_, cancelFrom := b.Subscribe(
			topic.Name[allocOther]("filter"),
			topic.From(func(p allocPayload) (allocOther, bool) {
				calls++
				return allocOther{}, false
			}),
		)
		defer cancelFrom()
		b.Publish(payload)
		wantAllocs(t, 0, func() { b.Publish(payload) })
		if calls != lossAllocRuns+1 {
			t.Errorf("the From function ran %d times, want %d", calls, lossAllocRuns+1)
		}
		wantLost(t, &b, "full", topic.Lost{Full: lossAllocRuns})
		wantLost(t, &b, "filter", topic.Lost{})
		mustTake(t, ch)
	})
}

// A publication to a full drop-oldest subscription evicts the oldest value,
// counts it and queues its own, without allocating.
func TestDropOldestOnAFullBufferDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	ch, cancel := b.Subscribe(topic.Buffer[allocPayload](4), topic.Overflow[allocPayload](topic.DropOldest))
	defer cancel()
	for range 4 {
		b.Publish(allocPayload{}) // fill the buffer with values to evict
	}
	wantAllocs(t, 0, func() { b.Publish(payload) })
	wantLostAfterAllocs(t, &b, topic.Lost{Evicted: lossAllocRuns})
	for range 4 {
		if got := <-ch; got != payload {
			t.Fatalf("received %v, want the latest %v", got, payload)
		}
	}
}

// An OnLoss function receives each loss by value: a hook that does not
// allocate itself adds no allocation, under either policy.
func TestOnLossWithANonAllocatingHookDoesNotAllocate(t *testing.T) {
	for _, policy := range []topic.Policy{topic.DropNewest, topic.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			var b topic.Broker
			var calls int
			var sum int64
			_, cancel := b.Subscribe(
				topic.Overflow[allocPayload](policy),
				topic.OnLoss(func(l topic.Loss[allocPayload]) {
					calls++
					sum += l.Value.Sum()
				}),
			)
			defer cancel()
			b.Publish(payload)
			wantAllocs(t, 0, func() { b.Publish(payload) })
			if calls != lossAllocRuns || sum != lossAllocRuns*payload.Sum() {
				t.Errorf("OnLoss called %d times with values summing to %d, want %d and %d",
					calls, sum, lossAllocRuns, lossAllocRuns*payload.Sum())
			}
		})
	}
}

// A From function that returns false filters without allocating, and
// without counting a loss, even for a full drop-oldest subscription with
// OnLoss.
func TestFilteringFromDoesNotAllocateOrCount(t *testing.T) {
	var b topic.Broker
	var lost int
	ch, cancel := b.Subscribe(
		topic.From(func(p allocPayload) (allocPayload, bool) { return p, p.A == 0 }),
		topic.Overflow[allocPayload](topic.DropOldest),
		topic.OnLoss(func(topic.Loss[allocPayload]) { lost++ }),
	)
	defer cancel()
	b.Publish(allocPayload{}) // accepted: fills the buffer
	wantAllocs(t, 0, func() { b.Publish(payload) })
	wantLostAfterAllocs(t, &b, topic.Lost{})
	if lost != 0 {
		t.Errorf("OnLoss called %d times for filtered values", lost)
	}
	if got := <-ch; got != (allocPayload{}) {
		t.Errorf("received %v, want the zero value published first", got)
	}
}

// A drop-oldest subscription of an interface type costs the one boxing of
// the value, and nothing for the eviction.
func TestDropOldestInterfaceSubscriptionAllocatesOnlyTheBoxing(t *testing.T) {
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Overflow[allocSummer](topic.DropOldest))
	defer cancel()
	b.Publish(payload)
	wantAllocs(t, 1, func() { b.Publish(payload) })
	wantLostAfterAllocs(t, &b, topic.Lost{Evicted: lossAllocRuns})
}
