package topic_test

import (
	"fmt"
	"time"

	"github.com/seedaa7df82c/topic"
)

// A retained type keeps its latest values, each with an offset from zero,
// for replay and pull reads.
func ExampleBroker_Retain() {
	type Price struct {
		Symbol string
		Cents  int
	}

	var b topic.Broker
	// Keep the last 100 prices, none older than an hour.
	b.Retain[Price](topic.Retention{Count: 100, Age: time.Hour})

	b.Publish(Price{"ACME", 1200})
	b.Publish(Price{"ACME", 1250})

	// A subscription of the Record type receives the offsets too.
	recs, cancel := b.Subscribe(topic.Replay[topic.Record[Price]](topic.Earliest()),
		topic.Buffer[topic.Record[Price]](10))
	defer cancel()
	b.Publish(Price{"ACME", 1190})

	for range 3 {
		r := <-recs
		fmt.Println(r.Offset, r.Value.Cents)
	}
	// Output:
	// 0 1200
	// 1 1250
	// 2 1190
}

// A last-value ("sticky") subscription: with one value retained, a
// subscriber replaying the last one receives the current state as it
// subscribes, then every change.
func ExampleLast() {
	type Config struct{ Level string }

	var b topic.Broker
	b.Retain[Config](topic.Retention{Count: 1})

	b.Publish(Config{"info"})
	b.Publish(Config{"debug"}) // the current value

	ch, cancel := b.Subscribe(topic.Replay[Config](topic.Last(1)), topic.Buffer[Config](4))
	defer cancel()
	fmt.Println("at subscribe:", (<-ch).Level)

	b.Publish(Config{"warn"})
	fmt.Println("then:", (<-ch).Level)
	// Output:
	// at subscribe: debug
	// then: warn
}

// Replay from an offset: a subscriber that remembers the offset it has
// reached resumes there, with no gap and no duplicate.
func ExampleAt() {
	type Order struct{ ID int }

	var b topic.Broker
	b.Retain[Order](topic.Retention{Count: 1000})
	for id := 100; id < 105; id++ {
		b.Publish(Order{id})
	}

	// Offsets 0 to 2 were handled before a restart: resume at 3.
	ch, cancel := b.Subscribe(topic.Replay[Order](topic.At(3)), topic.Buffer[Order](10))
	defer cancel()
	b.Publish(Order{105})

	for range 3 {
		fmt.Println((<-ch).ID)
	}
	// Output:
	// 103
	// 104
	// 105
}

// Earliest replays everything still kept: here the count bound has dropped
// the oldest values.
func ExampleEarliest() {
	var b topic.Broker
	b.Retain[int](topic.Retention{Count: 3})
	for n := range 5 {
		b.Publish(n)
	}

	ch, cancel := b.Subscribe(topic.Replay[int](topic.Earliest()), topic.Buffer[int](10))
	defer cancel()
	for range 3 {
		fmt.Println(<-ch)
	}
	// Output:
	// 2
	// 3
	// 4
}

// A pull reader polls batches without subscribing, keeping the offset to
// read next; when it falls behind the retention, it learns how much it
// missed.
func ExampleBroker_Read() {
	type Event struct{ N int }

	var b topic.Broker
	b.Retain[Event](topic.Retention{Count: 4})

	var next uint64
	poll := func() {
		recs, n, skipped := b.Read[Event](next, 2)
		if skipped > 0 {
			fmt.Println("skipped", skipped)
		}
		for _, r := range recs {
			fmt.Println(r.Offset, r.Value.N)
		}
		next = n
	}

	for n := range 3 {
		b.Publish(Event{n})
	}
	poll() // 0 and 1
	poll() // 2
	poll() // nothing new: next stays 3

	for n := 3; n < 10; n++ {
		b.Publish(Event{n}) // keeps 6 to 9
	}
	poll()
	fmt.Println("next", next)
	// Output:
	// 0 0
	// 1 1
	// 2 2
	// skipped 3
	// 6 6
	// 7 7
	// next 8
}

// Append publishes like Publish and tells the publisher the offset its
// value got; for a type that is not retained it reports false.
func ExampleBroker_Append() {
	type Audit struct{ Action string }

	var b topic.Broker
	b.Retain[Audit](topic.Retention{Count: 10})

	for _, a := range []string{"login", "update", "logout"} {
		offset, ok := b.Append(Audit{a})
		fmt.Println(a, offset, ok)
	}

	recs, _, _ := b.Read[Audit](1, 1)
	fmt.Println("offset 1 is", recs[0].Value.Action)

	_, ok := b.Append("not retained")
	fmt.Println(ok)
	// Output:
	// login 0 true
	// update 1 true
	// logout 2 true
	// offset 1 is update
	// false
}

// A subscription of Record[T] receives each value of a retained type with
// its offset and time.
func ExampleRecord() {
	type Price struct{ Cents int }
	var b topic.Broker
	b.Retain[Price](topic.Retention{Count: 10})
	recs, cancel := b.Subscribe(topic.Buffer[topic.Record[Price]](2))
	defer cancel()
	b.Publish(Price{199})
	b.Publish(Price{249})
	for range 2 {
		r := <-recs
		fmt.Printf("offset %d: %d cents, timed %t\n", r.Offset, r.Value.Cents, !r.Time.IsZero())
	}
	// Output:
	// offset 0: 199 cents, timed true
	// offset 1: 249 cents, timed true
}

// Retention bounds a log by count and by age; NoTime gives records no time,
// for the cheapest publication.
func ExampleRetention() {
	var b topic.Broker
	b.Retain[int](topic.Retention{Count: 3})
	for n := range 5 {
		b.Publish(n)
	}
	recs, next, skipped := b.Read[int](0, 10)
	var kept []int
	for _, r := range recs {
		kept = append(kept, r.Value)
	}
	fmt.Println("kept", kept, "next offset", next, "skipped", skipped)

	var fast topic.Broker
	fast.Retain[int](topic.Retention{Count: 3, NoTime: true})
	fast.Publish(7)
	r, _, _ := fast.Read[int](0, 1)
	fmt.Println("NoTime record has a time:", !r[0].Time.IsZero())
	// Output:
	// kept [2 3 4] next offset 5 skipped 2
	// NoTime record has a time: false
}

// A subscription that replays receives the values kept, then the live ones,
// with no gap and no duplicate. Its buffer must hold the backlog: it is
// sent before Subscribe returns.
func ExampleReplay() {
	type Event struct{ N int }

	var b topic.Broker
	b.Retain[Event](topic.Retention{Count: 100})
	b.Publish(Event{1})
	b.Publish(Event{2})

	ch, cancel := b.Subscribe(topic.Replay[Event](topic.Earliest()), topic.Buffer[Event](8))
	defer cancel()
	fmt.Println("backlog:", len(ch))
	b.Publish(Event{3})

	for len(ch) > 0 {
		fmt.Println((<-ch).N)
	}
	// Output:
	// backlog: 2
	// 1
	// 2
	// 3
}

// A Start is a value: a subscriber resumes after the offset it saved, or
// replays everything kept when it has saved none.
func ExampleStart() {
	type Order struct{ ID int }

	var b topic.Broker
	b.Retain[Order](topic.Retention{Count: 100})
	for id := 1; id <= 4; id++ {
		b.Publish(Order{id})
	}

	start := func(saved uint64, ok bool) topic.Start {
		if !ok {
			return topic.Earliest()
		}
		return topic.At(saved + 1)
	}
	for _, s := range []topic.Start{start(0, false), start(2, true)} {
		ch, cancel := b.Subscribe(topic.Replay[Order](s), topic.Buffer[Order](8))
		var ids []int
		for len(ch) > 0 {
			ids = append(ids, (<-ch).ID)
		}
		cancel()
		fmt.Println(ids)
	}
	// Output:
	// [1 2 3 4]
	// [4]
}
