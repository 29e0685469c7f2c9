package topic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seedaa7df82c/topic"
)

// A drop-oldest subscription with a capacity of one holds the latest value:
// a consumer that looks now and then sees the current state, not a backlog.
func ExampleOverflow() {
	type Price struct{ Cents int }

	var b topic.Broker

	latest, cancel := b.Subscribe(
		topic.Buffer[Price](1),
		topic.Overflow[Price](topic.DropOldest),
	)
	defer cancel()

	for _, c := range []int{100, 101, 105} {
		b.Publish(Price{Cents: c})
	}

	fmt.Println("latest:", (<-latest).Cents)
	fmt.Println("evicted:", b.Subscriptions()[0].Lost.Evicted)
	// Output:
	// latest: 105
	// evicted: 2
}

// Under pressure, a drop-newest subscription keeps what it already holds and
// a drop-oldest one keeps the most recent values, in order either way.
func ExamplePolicy() {
	var b topic.Broker

	newest, cancelNewest := b.Subscribe(topic.Buffer[int](2))
	defer cancelNewest()
	oldest, cancelOldest := b.Subscribe(topic.Buffer[int](2), topic.Overflow[int](topic.DropOldest))
	defer cancelOldest()

	for i := 1; i <= 5; i++ {
		b.Publish(i)
	}

	fmt.Println(topic.DropNewest, <-newest, <-newest)
	fmt.Println(topic.DropOldest, <-oldest, <-oldest)
	// Output:
	// drop-newest 1 2
	// drop-oldest 4 5
}

// A name tells subscriptions of the same type apart in the snapshot.
func ExampleName() {
	type Order struct{ ID int }

	var b topic.Broker

	_, cancelAudit := b.Subscribe(topic.Name[Order]("audit"), topic.Buffer[Order](8))
	defer cancelAudit()
	_, cancelShip := b.Subscribe(topic.Name[Order]("shipping"))
	defer cancelShip()

	b.Publish(Order{ID: 1})
	b.Publish(Order{ID: 2})

	for _, s := range b.Subscriptions() {
		fmt.Printf("%s: %d queued, %d lost\n", s.Name, s.Queued, s.Lost.Total())
	}
	// Output:
	// audit: 2 queued, 0 lost
	// shipping: 1 queued, 1 lost
}

// The snapshot lists every live subscription, ordered by type, then name.
func ExampleBroker_Subscriptions() {
	type Tick struct{ N int }

	var b topic.Broker

	_, cancel1 := b.Subscribe(topic.Name[Tick]("ticker"), topic.Buffer[Tick](4))
	defer cancel1()
	_, cancel2 := b.Subscribe(
		topic.Name[Tick]("gauge"),
		topic.Buffer[Tick](1),
		topic.Overflow[Tick](topic.DropOldest),
	)
	defer cancel2()
	_, cancel3 := b.Subscribe(topic.Name[error]("errors"), topic.Buffer[error](0))
	defer cancel3()

	for i := range 6 {
		b.Publish(Tick{N: i})
	}
	b.Publish(fmt.Errorf("nobody is receiving"))

	fmt.Printf("%-7s %-22s %-12s %3s %6s %4s %7s\n", "NAME", "TYPE", "POLICY", "CAP", "QUEUED", "FULL", "EVICTED")
	for _, s := range b.Subscriptions() {
		fmt.Printf("%-7s %-22s %-12s %3d %6d %4d %7d\n",
			s.Name, s.Type, s.Policy, s.Capacity, s.Queued, s.Lost.Full, s.Lost.Evicted)
	}
	// Output:
	// NAME    TYPE                   POLICY       CAP QUEUED FULL EVICTED
	// errors  error                  drop-newest    0      0    1       0
	// gauge   topic_test.Tick        drop-oldest    1      1    0       5
	// ticker  topic_test.Tick        drop-newest    4      4    2       0
}

// OnLoss reports each lost value and why, on the publisher's goroutine.
func ExampleOnLoss() {
	var b topic.Broker

	ch, cancel := b.Subscribe(
		topic.Buffer[string](2),
		topic.OnLoss(func(l topic.Loss[string]) {
			fmt.Printf("lost %q: %v\n", l.Value, l.Cause)
		}),
	)
	defer cancel()

	for _, s := range []string{"a", "b", "c", "d"} {
		b.Publish(s)
	}
	fmt.Println("received", <-ch, <-ch)
	// Output:
	// lost "c": full
	// lost "d": full
	// received a b
}

// Each cause of loss, as OnLoss reports it.
func ExampleCause() {
	type Reading struct{ Volts int }

	var b topic.Broker

	// Full: a drop-newest subscription drops the value that does not fit.
	_, cancelInts := b.Subscribe(topic.OnLoss(func(l topic.Loss[int]) {
		fmt.Println(l.Cause, l.Value)
	}))
	defer cancelInts()
	// Evicted: a drop-oldest subscription removes its oldest value.
	_, cancelStrings := b.Subscribe(
		topic.Overflow[string](topic.DropOldest),
		topic.OnLoss(func(l topic.Loss[string]) { fmt.Println(l.Cause, l.Value) }),
	)
	defer cancelStrings()
	// Failed: a From function panics.
	_, cancelVolts := b.Subscribe(
		topic.From(func(r Reading) (float64, bool) {
			if r.Volts < 0 {
				panic("negative")
			}
			return float64(r.Volts), true
		}),
		topic.OnLoss(func(l topic.Loss[float64]) { fmt.Println(l.Cause, l.Source, l.Panic) }),
	)
	defer cancelVolts()

	b.Publish(1)
	b.Publish(2)
	b.Publish("a")
	b.Publish("b")
	b.Publish(Reading{Volts: -3})
	// Output:
	// full 2
	// evicted a
	// failed {-3} negative
}

// Total adds the counts of every cause.
func ExampleLost_Total() {
	var b topic.Broker

	_, cancel := b.Subscribe(
		topic.Buffer[int](1),
		topic.From(func(s string) (int, bool) {
			if s == "" {
				panic("empty")
			}
			return len(s), true
		}),
	)
	defer cancel()

	b.Publish("one")   // queued
	b.Publish("two")   // full
	b.Publish("")      // failed
	b.Publish("three") // full

	lost := b.Subscriptions()[0].Lost
	fmt.Printf("full %d, evicted %d, failed %d: total %d\n", lost.Full, lost.Evicted, lost.Failed, lost.Total())
	// Output:
	// full 2, evicted 0, failed 1: total 3
}

// A subscription bound to a context ends with it: the values it accepted
// remain receivable, then the channel is closed and the range loop ends.
func ExampleContext() {
	type Job struct{ ID int }

	var b topic.Broker
	ctx, stop := context.WithCancel(context.Background())

	jobs, cancel := b.Subscribe(topic.Buffer[Job](4), topic.Context[Job](ctx))
	defer cancel()

	b.Publish(Job{ID: 1})
	b.Publish(Job{ID: 2})
	stop()

	for j := range jobs { // ends once the context's end has closed the channel
		fmt.Println("job", j.ID)
	}
	fmt.Println("subscriptions:", len(b.Subscriptions()))
	// Output:
	// job 1
	// job 2
	// subscriptions: 0
}

func ExampleSubscriptionStats_MarshalJSON() {
	type Price struct{ Cents int }
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Name[Price]("dashboard"), topic.Overflow[Price](topic.DropOldest))
	defer cancel()
	b.Publish(Price{100})
	b.Publish(Price{101}) // evicts the first

	out, _ := json.Marshal(b.Subscriptions())
	fmt.Println(string(out))
	// Output:
	// [{"type":"topic_test.Price","name":"dashboard","policy":"drop-oldest","capacity":1,"queued":1,"lost":{"full":0,"evicted":1,"failed":0,"errored":0,"discarded":0,"closed":0,"skipped":0},"sent":2,"rejected":0,"matched":2,"made":"github.com/seedaa7df82c/topic_test/loss_example_test.go:229"}]
}

// A Loss says what was lost and why: a handler's Errored loss carries the
// error of its function's last call.
func ExampleLoss() {
	type Order struct{ ID int }
	var b topic.Broker
	b.Handle(func(ctx context.Context, o Order) error {
		return errors.New("out of stock")
	}, topic.OnLoss(func(l topic.Loss[Order]) {
		fmt.Printf("%v: order %d: %v\n", l.Cause, l.Value.ID, l.Err)
	}))
	b.Publish(Order{ID: 7})
	_ = b.Shutdown(context.Background())
	// Output:
	// errored: order 7: out of stock
}

// Lost counts what a subscription lost since it began, by cause.
func ExampleLost() {
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Buffer[int](1), topic.Overflow[int](topic.DropOldest))
	defer cancel()
	for n := range 4 {
		b.Publish(n)
	}
	fmt.Printf("%+v\n", b.Subscriptions()[0].Lost)
	// Output:
	// {Full:0 Evicted:3 Failed:0 Errored:0 Discarded:0 Closed:0 Skipped:0}
}

// Of reads a count by its Cause, so that code can go through every cause.
func ExampleLost_Of() {
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Buffer[int](1), topic.From(func(s string) (int, bool) {
		if s == "" {
			panic("empty")
		}
		return len(s), true
	}))
	defer cancel()
	for _, s := range []string{"one", "two", "", "three"} {
		b.Publish(s) // queued, full, failed, full
	}

	lost := b.Subscriptions()[0].Lost
	for c := topic.Full; c <= topic.Skipped; c++ {
		if n := lost.Of(c); n > 0 {
			fmt.Println(c, n)
		}
	}
	// Output:
	// full 2
	// failed 1
}

// A Cause is written by name in JSON, where it can be a map's key too.
func ExampleCause_MarshalText() {
	counts := map[topic.Cause]int{}
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Buffer[string](1), topic.OnLoss(func(l topic.Loss[string]) { counts[l.Cause]++ }))
	defer cancel()
	for _, s := range []string{"a", "b", "c"} {
		b.Publish(s) // nobody receives: b and c are lost
	}

	out, _ := json.Marshal(counts)
	fmt.Println(string(out))
	// Output:
	// {"full":2}
}

// A Cause is read by name, as in a configuration naming the losses that
// should wake someone up.
func ExampleCause_UnmarshalText() {
	var cfg struct{ Page []topic.Cause }
	err := json.Unmarshal([]byte(`{"Page": ["failed", "errored"]}`), &cfg)
	fmt.Println(cfg.Page, err, cfg.Page[0] == topic.Failed)

	var c topic.Cause
	fmt.Println(c.UnmarshalText([]byte("misplaced")))
	// Output:
	// [failed errored] <nil> true
	// topic: unknown cause "misplaced"
}

// A Policy is written by name in JSON.
func ExamplePolicy_MarshalText() {
	cfg := struct {
		Overflow topic.Policy `json:"overflow"`
	}{topic.DropOldest}
	out, _ := json.Marshal(cfg)
	fmt.Println(string(out))
	// Output:
	// {"overflow":"drop-oldest"}
}

// A Policy is read by name, so that a configuration can choose one.
func ExamplePolicy_UnmarshalText() {
	var cfg struct {
		Buffer   int          `json:"buffer"`
		Overflow topic.Policy `json:"overflow"`
	}
	if err := json.Unmarshal([]byte(`{"buffer": 1, "overflow": "drop-oldest"}`), &cfg); err != nil {
		fmt.Println(err)
		return
	}

	var b topic.Broker
	latest, cancel := b.Subscribe(topic.Buffer[int](cfg.Buffer), topic.Overflow[int](cfg.Overflow))
	defer cancel()
	b.Publish(1)
	b.Publish(2)
	fmt.Println(cfg.Overflow, <-latest)

	var p topic.Policy
	fmt.Println(p.UnmarshalText([]byte("drop-all")))
	// Output:
	// drop-oldest 2
	// topic: unknown policy "drop-all"
}

// A subscription's stats tell a channel, a handler and a follower apart:
// Handler and Follower are set for the last two only. A follower's Queued is
// its lag.
func ExampleSubscriptionStats() {
	type Event struct{ N int }
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Retain[Event](topic.Retention{Count: 100})
	_, cancel := b.Subscribe(topic.Name[Event]("channel"), topic.Buffer[Event](4))
	defer cancel()
	b.Handle(func(context.Context, Event) error { return nil }, topic.Name[Event]("handler"))
	f := b.Follow(topic.Name[Event]("follower"))
	defer f.Close()

	b.Publish(Event{1})
	b.Publish(Event{2})
	_ = b.Settle(context.Background())

	for _, st := range b.Subscriptions() {
		fmt.Printf("%s: %v, capacity %d, queued %d, handler %t, follower %t\n",
			st.Name, st.Type, st.Capacity, st.Queued, st.Handler != nil, st.Follower != nil)
	}
	// Output:
	// channel: topic_test.Event, capacity 4, queued 2, handler false, follower false
	// follower: topic_test.Event, capacity 0, queued 2, handler false, follower true
	// handler: topic_test.Event, capacity 64, queued 0, handler true, follower false
}

// A loss reads as a ratio: of what reached the subscription (Matched),
// how much it lost; and of what was published, how much reached it.
func ExampleSubscriptionStats_LossRatio() {
	type Tick struct{ N int }
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Name[Tick]("slow"), topic.Buffer[Tick](10))
	defer cancel()
	for i := range 40 {
		b.Publish(Tick{i}) // nobody receives: 10 fit, 30 are lost
	}
	st := b.Subscriptions()[0]
	fmt.Printf("%s: sent %d, lost %d of %d (%.0f%%)\n", st.Name, st.Sent, st.Lost.Total(), st.Matched, 100*st.LossRatio())
	// Output:
	// slow: sent 10, lost 30 of 40 (75%)
}

// Topics counts the publications of each type that found a subscription:
// what a loss is a share of.
func ExampleBroker_Topics() {
	type Order struct{ ID int }
	type Refund struct{ ID int }
	var b topic.Broker
	orders, cancel := b.Subscribe(topic.Buffer[Order](8))
	defer cancel()
	_, cancelRefunds := b.Subscribe[Refund]()
	defer cancelRefunds()
	for i := range 5 {
		b.Publish(Order{i})
	}
	b.Publish("nobody listens: not counted")
	<-orders
	for _, tp := range b.Topics() {
		fmt.Println(tp.Type, tp.Published)
	}
	// Output:
	// topic_test.Order 5
	// topic_test.Refund 0
}

// TopicStats, as the debug page and expvar serve it.
func ExampleTopicStats() {
	var b topic.Broker
	_, cancel := b.Subscribe(topic.Buffer[int](1))
	defer cancel()
	b.Publish(1)
	b.Publish(2)
	tp := b.Topics()[0]
	fmt.Println(tp.Type, tp.Published, tp.Retained)
	// Output:
	// int 2 false
}

func ExampleTopicStats_MarshalJSON() {
	var b topic.Broker
	b.Retain[string](topic.Retention{Count: 8})
	b.Publish("kept")
	out, _ := json.Marshal(b.Topics())
	fmt.Println(string(out))
	// Output:
	// [{"type":"string","published":1,"retained":true,"reaches":[]}]
}

// Reaches says who consumes what is published: each subscription a type's
// publications reach, and through which of its sources.
func ExampleReach() {
	type Order struct{ ID int }
	var b topic.Broker
	_, c1 := b.Subscribe(topic.Name[Order]("billing"))
	defer c1()
	_, c2 := b.Subscribe(topic.Name[string]("audit"), topic.From(func(o Order) (string, bool) { return fmt.Sprint(o.ID), true }))
	defer c2()
	_, c3 := b.Subscribe(topic.Name[any]("everything"))
	defer c3()
	for _, tp := range b.Topics() {
		for _, r := range tp.Reaches {
			fmt.Printf("%v -> %s (%v), via %v, From %v\n", tp.Type, r.Name, r.Type, r.Via, r.From)
		}
	}
	// Output:
	// string -> everything (interface {}), via interface {}, From false
	// string -> audit (string), via string, From false
	// topic_test.Order -> everything (interface {}), via interface {}, From false
	// topic_test.Order -> audit (string), via topic_test.Order, From true
	// topic_test.Order -> billing (topic_test.Order), via topic_test.Order, From false
}
