package topic_test

import (
	"context"
	"math"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// retainPayload is 32 bytes of pointer-free data, which would allocate if
// it were boxed, for the allocation tests of retained types.
type retainPayload struct{ A, B, C, D int64 }

// retainedBroker returns a broker retaining retainPayload, its ring already
// grown to its bound so that what is measured is the steady state.
func retainedBroker(count int) *topic.Broker {
	b := new(topic.Broker)
	b.Retain[retainPayload](topic.Retention{Count: count})
	for range count {
		b.Publish(retainPayload{})
	}
	return b
}

// Publishing a retained value type allocates nothing: appending it to the
// log (the ring is allocated as it grows to its bound, then reused), giving
// it an offset and a time, and delivering it.
func TestPublishOfARetainedValueDoesNotAllocate(t *testing.T) {
	v := retainPayload{1, 2, 3, 4}
	t.Run("no subscriber", func(t *testing.T) {
		b := retainedBroker(64)
		wantAllocs(t, 0, func() { b.Publish(v) })
	})
	t.Run("one subscriber", func(t *testing.T) {
		b := retainedBroker(64)
		ch, cancel := b.Subscribe[retainPayload]()
		defer cancel()
		wantAllocs(t, 0, func() { b.Publish(v); mustTake(t, ch) })
	})
	t.Run("one full subscriber", func(t *testing.T) {
		b := retainedBroker(64)
		_, cancel := b.Subscribe(topic.Buffer[retainPayload](0))
		defer cancel()
		wantAllocs(t, 0, func() { b.Publish(v) })
	})
	t.Run("one Record subscriber", func(t *testing.T) {
		b := retainedBroker(64)
		ch, cancel := b.Subscribe[topic.Record[retainPayload]]()
		defer cancel()
		wantAllocs(t, 0, func() { b.Publish(v); mustTake(t, ch) })
	})
	t.Run("a subscriber and a Record subscriber", func(t *testing.T) {
		b := retainedBroker(64)
		ch, cancel := b.Subscribe[retainPayload]()
		defer cancel()
		rch, cancelR := b.Subscribe[topic.Record[retainPayload]]()
		defer cancelR()
		wantAllocs(t, 0, func() { b.Publish(v); mustTake(t, ch); mustTake(t, rch) })
	})
	t.Run("one full Record subscriber", func(t *testing.T) {
		b := retainedBroker(64)
		_, cancel := b.Subscribe(topic.Buffer[topic.Record[retainPayload]](0))
		defer cancel()
		wantAllocs(t, 0, func() { b.Publish(v) })
	})
	t.Run("a full subscriber and a full Record subscriber", func(t *testing.T) {
		b := retainedBroker(64)
		_, cancel := b.Subscribe(topic.Buffer[retainPayload](0))
		defer cancel()
		_, cancelR := b.Subscribe(topic.Buffer[topic.Record[retainPayload]](0))
		defer cancelR()
		wantAllocs(t, 0, func() { b.Publish(v) })
	})
	t.Run("Append", func(t *testing.T) {
		b := retainedBroker(64)
		ch, cancel := b.Subscribe[retainPayload]()
		defer cancel()
		wantAllocs(t, 0, func() { b.Append(v); mustTake(t, ch) })
	})
}

// A subscription delivered to outside the guard (drop-oldest, OnLoss, a
// From function) costs a retained type's publication no allocation either,
// as it costs none to a type not retained (TestDropOldestOnAFullBufferDoesNotAllocate).
func TestPublishOfARetainedValueToASlowSubscriptionDoesNotAllocate(t *testing.T) {
	v := retainPayload{1, 2, 3, 4}
	t.Run("drop-oldest", func(t *testing.T) {
		b := retainedBroker(64)
		ch, cancel := b.Subscribe(topic.Overflow[retainPayload](topic.DropOldest))
		defer cancel()
		wantAllocs(t, 0, func() { b.Publish(v); mustTake(t, ch) })
	})
	t.Run("OnLoss", func(t *testing.T) {
		b := retainedBroker(64)
		ch, cancel := b.Subscribe(topic.OnLoss(func(topic.Loss[retainPayload]) {}))
		defer cancel()
		wantAllocs(t, 0, func() { b.Publish(v); mustTake(t, ch) })
	})
	t.Run("a subscriber and a From source of records", func(t *testing.T) {
		b := retainedBroker(64)
		ch, cancel := b.Subscribe[retainPayload]()
		defer cancel()
		rch, cancelR := b.Subscribe(topic.From(func(r topic.Record[retainPayload]) (retainOther, bool) { return retainOther{N: int(r.Offset)}, true }))
		defer cancelR()
		wantAllocs(t, 0, func() { b.Publish(v); mustTake(t, ch); mustTake(t, rch) })
	})
	t.Run("From", func(t *testing.T) {
		b := retainedBroker(64)
		ch, cancel := b.Subscribe(topic.From(func(p retainPayload) (retainOther, bool) { return retainOther{N: int(p.A)}, true }))
		defer cancel()
		wantAllocs(t, 0, func() { b.Publish(v); mustTake(t, ch) })
	})
}

// Read allocates its result and nothing else: nothing when it returns no
// record, else one slice, sized once for the records it returns.
func TestReadAllocatesOnlyItsResult(t *testing.T) {
	b := retainedBroker(128)
	tests := []struct {
		name      string
		from      uint64
		max       int
		n         int // records returned
		allocates float64
	}{
		{"past the end", 128, 10, 0, 0},
		{"max 0", 0, 0, 0, 0},
		{"one record", 5, 1, 1, 1},
		{"two records", 5, 2, 2, 1},
		{"100 records", 0, 100, 100, 1},
		{"all 128 records", 0, 1000, 128, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n int
			wantAllocs(t, tt.allocates, func() {
				recs, _, _ := b.Read[retainPayload](tt.from, tt.max)
				n = len(recs)
			})
			if n != tt.n {
				t.Errorf("Read(%d, %d) returned %d records, want %d", tt.from, tt.max, n, tt.n)
			}
		})
	}
}

// A replay costs the allocations of the subscription, whatever the number
// of values it replays, for values and records alike. Each count is the
// least of three measures: testing.AllocsPerRun counts the process's
// allocations, and what goroutines another test left (ending handlers,
// the collector's helpers) allocate meanwhile only ever adds to it.
func TestReplayAllocatesNothingPerValue(t *testing.T) {
	allocs := func(n int) (values, records float64) {
		values, records = math.Inf(1), math.Inf(1)
		for range 3 {
			v, r := replayAllocs(t, n)
			values, records = min(values, v), min(records, r)
		}
		return values, records
	}
	oneValue, oneRecord := allocs(1)
	values, records := allocs(1000)
	if values != oneValue || records != oneRecord {
		t.Errorf("replay of 1000: %v and %v allocations (values, records), want %v and %v as for one",
			values, records, oneValue, oneRecord)
	}
}

// replayAllocs measures the allocations of a subscription that replays the
// n values of a retained type, as values and as records.
func replayAllocs(t *testing.T, n int) (values, records float64) {
	b := retainedBroker(n)
	values = testing.AllocsPerRun(20, func() {
		ch, cancel := b.Subscribe(topic.Buffer[retainPayload](n), topic.Replay[retainPayload](topic.Earliest()))
		if len(ch) != n {
			t.Fatalf("replayed %d values, want %d", len(ch), n)
		}
		cancel()
	})
	records = testing.AllocsPerRun(20, func() {
		ch, cancel := b.Subscribe(topic.Buffer[topic.Record[retainPayload]](n), topic.Replay[topic.Record[retainPayload]](topic.Earliest()))
		if len(ch) != n {
			t.Fatalf("replayed %d records, want %d", len(ch), n)
		}
		cancel()
	})
	return values, records
}

// Following a retained value type allocates nothing per value: a
// publication read by Read (of a log, or of a latest-per-key log), or by
// Next, or waited for by Next and read.
func TestFollowingARetainedValueDoesNotAllocate(t *testing.T) {
	v := retainPayload{1, 2, 3, 4}
	t.Run("Read", func(t *testing.T) {
		b := retainedBroker(64)
		f := b.Follow[retainPayload]()
		defer f.Close()
		buf := make([]topic.Record[retainPayload], 4)
		wantAllocs(t, 0, func() {
			b.Publish(v)
			if f.Read(buf) != 1 {
				t.Fatal("nothing read")
			}
		})
	})
	t.Run("Read of a latest-per-key log", func(t *testing.T) {
		b := new(topic.Broker)
		b.RetainLatest(func(v retainPayload) int64 { return v.A }, topic.Retention{Count: 64})
		for i := range 64 {
			b.Publish(retainPayload{A: int64(i)})
		}
		f := b.Follow[retainPayload]()
		defer f.Close()
		buf := make([]topic.Record[retainPayload], 4)
		wantAllocs(t, 0, func() {
			b.Publish(v) // replaces the value of key 1
			if f.Read(buf) != 1 {
				t.Fatal("nothing read")
			}
		})
	})
	t.Run("Next", func(t *testing.T) {
		b := retainedBroker(64)
		f := b.Follow[retainPayload]()
		defer f.Close()
		ctx := context.Background()
		wantAllocs(t, 0, func() {
			b.Publish(v)
			if _, err := f.Next(ctx); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("Next, waiting", func(t *testing.T) {
		b := retainedBroker(64)
		f := b.Follow[retainPayload]()
		defer f.Close()
		ctx := context.Background()
		read := make(chan struct{})
		go func() {
			for {
				if _, err := f.Next(ctx); err != nil {
					close(read)
					return
				}
				read <- struct{}{}
			}
		}()
		wantAllocs(t, 0, func() {
			b.Publish(v)
			<-read
		})
		f.Close()
		<-read
	})
}
