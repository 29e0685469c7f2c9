package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// ExportStream stores every value in a JetStream stream, created if there
// is none, and waits for each acknowledgement: once the broker's handlers
// have settled, the values are stored.
func ExampleBridge_ExportStream() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }
	ctx := context.Background()

	var b topic.Broker
	defer b.Shutdown(ctx)
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	exp, _ := br.ExportStream[Order](ctx, "shop.orders", natsbridge.Stream{MaxAge: 24 * time.Hour})

	for id := 1; id <= 3; id++ {
		b.Publish(Order{id})
	}
	_ = b.Settle(ctx)

	js, _ := jetstream.New(nc)
	s, _ := js.Stream(ctx, "shop_orders")
	info, _ := s.Info(ctx)
	fmt.Printf("sent %d; stream %s stores %d messages\n", exp.Stats().Sent, info.Config.Name, info.State.Msgs)
	// Output:
	// sent 3; stream shop_orders stores 3 messages
}

// ImportStream replays a stream: here an ordered consumer from the oldest
// message kept, then the new ones, each with its stream sequence.
func ExampleBridge_ImportStream() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "shop.orders", natsbridge.Stream{}, 101, 102)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	orders, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](4))
	defer cancel()
	br.ImportStream[int](context.Background(), "shop.orders", natsbridge.Stream{},
		natsbridge.Consumer{Start: natsbridge.StartEarliest()})

	storeInStream(url, "shop.orders", natsbridge.Stream{}, 103)
	for range 3 {
		o := <-orders
		fmt.Println("offset", o.Offset, "order", o.Value)
	}
	// Output:
	// offset 1 order 101
	// offset 2 order 102
	// offset 3 order 103
}

// A durable consumer remembers what it acknowledged: an import that stops,
// or a process that restarts, resumes where it left off, and Start applies
// only to the consumer's first import.
func ExampleConsumer() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	storeInStream(url, "shop.orders", natsbridge.Stream{}, 1, 2)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	orders, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](4))
	defer cancel()

	c := natsbridge.Consumer{Durable: "billing", Start: natsbridge.StartEarliest()}
	imp, _ := br.ImportStream[int](ctx, "shop.orders", natsbridge.Stream{}, c)
	fmt.Println("first run:", (<-orders).Value, (<-orders).Value)
	imp.Stop()

	storeInStream(url, "shop.orders", natsbridge.Stream{}, 3)
	br.ImportStream[int](ctx, "shop.orders", natsbridge.Stream{}, c)
	fmt.Println("second run:", (<-orders).Value)
	// Output:
	// first run: 1 2
	// second run: 3
}

// Stream shapes the stream a bridge creates: here one in memory that keeps
// the last two messages, named after its subject.
func ExampleStream() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	storeInStream(url, "sensors.temp", natsbridge.Stream{MaxMsgs: 2, Memory: true}, 20, 21, 22)

	nc, _ := nats.Connect(url)
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, _ := js.Stream(ctx, "sensors_temp")
	info, _ := s.Info(ctx)
	fmt.Printf("%s, in %v: %d messages, from sequence %d\n",
		info.Config.Name, info.Config.Storage, info.State.Msgs, info.State.FirstSeq)
	// Output:
	// sensors_temp, in Memory: 2 messages, from sequence 2
}

// A StreamStart is a value: an import resumes after the offset it saved,
// or takes only new messages when it saved none.
func ExampleStreamStart() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "events", natsbridge.Stream{}, 10, 20, 30)

	start := func(saved uint64) natsbridge.StreamStart {
		if saved == 0 {
			return natsbridge.StartNew()
		}
		return natsbridge.StartAt(saved + 1)
	}

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	events, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](4))
	defer cancel()
	br.ImportStream[int](context.Background(), "events", natsbridge.Stream{}, natsbridge.Consumer{Start: start(2)})

	e := <-events
	fmt.Println("offset", e.Offset, "value", e.Value)
	// Output:
	// offset 3 value 30
}

// StartAt starts at a stream sequence, such as an Imported value's Offset.
func ExampleStartAt() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "events", natsbridge.Stream{}, 10, 20, 30)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	events, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](4))
	defer cancel()
	br.ImportStream[int](context.Background(), "events", natsbridge.Stream{},
		natsbridge.Consumer{Start: natsbridge.StartAt(2)})

	for range 2 {
		e := <-events
		fmt.Println("offset", e.Offset, "value", e.Value)
	}
	// Output:
	// offset 2 value 20
	// offset 3 value 30
}

// StartEarliest starts at the oldest message the stream keeps: here a
// stream that keeps three.
func ExampleStartEarliest() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "events", natsbridge.Stream{MaxMsgs: 3}, 10, 20, 30, 40, 50)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	events, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](4))
	defer cancel()
	br.ImportStream[int](context.Background(), "events", natsbridge.Stream{},
		natsbridge.Consumer{Start: natsbridge.StartEarliest()})

	for range 3 {
		e := <-events
		fmt.Println("offset", e.Offset, "value", e.Value)
	}
	// Output:
	// offset 3 value 30
	// offset 4 value 40
	// offset 5 value 50
}

// StartLast starts with the last n messages the stream keeps.
func ExampleStartLast() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "prices", natsbridge.Stream{}, 100, 105, 103, 110)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	prices, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](4))
	defer cancel()
	br.ImportStream[int](context.Background(), "prices", natsbridge.Stream{},
		natsbridge.Consumer{Start: natsbridge.StartLast(2)})

	fmt.Println((<-prices).Value, (<-prices).Value)
	// Output:
	// 103 110
}

// StartNew, the default, starts with the next message stored: nothing
// stored before the import is replayed.
func ExampleStartNew() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "events", natsbridge.Stream{}, 10, 20)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	events, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](4))
	defer cancel()
	br.ImportStream[int](context.Background(), "events", natsbridge.Stream{},
		natsbridge.Consumer{Start: natsbridge.StartNew()})

	storeInStream(url, "events", natsbridge.Stream{}, 30)
	e := <-events
	fmt.Println("offset", e.Offset, "value", e.Value)
	// Output:
	// offset 3 value 30
}

// StartSince starts with the first message stored at or after a time.
func ExampleStartSince() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "events", natsbridge.Stream{}, 10, 20)
	since := time.Now()
	storeInStream(url, "events", natsbridge.Stream{}, 30, 40)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	events, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](4))
	defer cancel()
	br.ImportStream[int](context.Background(), "events", natsbridge.Stream{},
		natsbridge.Consumer{Start: natsbridge.StartSince(since)})

	fmt.Println((<-events).Value, (<-events).Value)
	// Output:
	// 30 40
}

// Async makes a stream export send without waiting for each
// acknowledgement, at most once; Close waits for the acknowledgements
// still due.
func ExampleAsync() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	exp, _ := br.ExportStream[int](ctx, "metrics", natsbridge.Stream{Memory: true}, natsbridge.Async[int]())

	for n := range 100 {
		b.Publish(n)
	}
	_ = b.Shutdown(ctx) // sends what the export's queue holds
	br.Close()          // waits for the acknowledgements
	s := exp.Stats()
	fmt.Printf("sent %d, publish errors %d\n", s.Sent, s.PublishErrors)
	// Output:
	// sent 100, publish errors 0
}

// Without DeadLetterTo, HandleStream publishes the dead letters of a
// durable consumer on DeadLetterSubject, with headers that say what failed.
func ExampleDeadLetterSubject() {
	url, stop := exampleServer()
	defer stop()
	watcher, _ := nats.Connect(url)
	defer watcher.Close()
	dead, _ := watcher.SubscribeSync(natsbridge.DeadLetterSubject("billing"))
	watcher.Flush()
	storeInStream(url, "billing.charges", natsbridge.Stream{}, -5)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	br.HandleStream[int](context.Background(), "billing.charges", natsbridge.Stream{},
		natsbridge.Consumer{Durable: "billing", Start: natsbridge.StartEarliest()},
		func(_ context.Context, c natsbridge.Imported[int]) error {
			if c.Value < 0 {
				return topic.Permanent(errors.New("negative amount"))
			}
			return nil
		})

	m, _ := dead.NextMsg(5 * time.Second)
	fmt.Printf("%s: %s (%s, after %s attempt)\n", m.Subject, m.Data,
		m.Header.Get(natsbridge.DeadLetterErrorHeader), m.Header.Get(natsbridge.DeadLetterAttemptsHeader))
	// Output:
	// natsbridge.deadletter.billing: -5 (negative amount, after 1 attempt)
}

// DeadLetterTo chooses the subject of HandleStream's dead letters; their
// headers say where the message was stored.
func ExampleDeadLetterTo() {
	url, stop := exampleServer()
	defer stop()
	watcher, _ := nats.Connect(url)
	defer watcher.Close()
	dead, _ := watcher.SubscribeSync("billing.failed")
	watcher.Flush()
	storeInStream(url, "billing.charges", natsbridge.Stream{}, 30, -5)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	br.HandleStream[int](context.Background(), "billing.charges", natsbridge.Stream{},
		natsbridge.Consumer{Durable: "billing", Start: natsbridge.StartEarliest()},
		func(_ context.Context, c natsbridge.Imported[int]) error {
			if c.Value < 0 {
				return topic.Permanent(errors.New("negative amount"))
			}
			return nil
		}, natsbridge.DeadLetterTo[int]("billing.failed"))

	m, _ := dead.NextMsg(5 * time.Second)
	fmt.Printf("%s: %s, stored in %s at %s\n", m.Subject, m.Data,
		m.Header.Get(natsbridge.DeadLetterStreamHeader), m.Header.Get(natsbridge.DeadLetterSequenceHeader))
	// Output:
	// billing.failed: -5, stored in billing_charges at 2
}

// Redeliver sets how often and how soon the stream delivers again a
// message whose handling failed: here three deliveries in all, then a
// dead letter.
func ExampleRedeliver() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "billing.charges", natsbridge.Stream{}, 30)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	dead, cancel := b.Subscribe(topic.Buffer[topic.DeadLetter[int]](1))
	defer cancel()
	br.HandleStream[int](context.Background(), "billing.charges", natsbridge.Stream{},
		natsbridge.Consumer{Durable: "billing", Start: natsbridge.StartEarliest()},
		func(_ context.Context, c natsbridge.Imported[int]) error {
			fmt.Println("delivery", c.Delivered)
			return errors.New("payment service unavailable")
		}, natsbridge.Redeliver[int](topic.RetryPolicy{Attempts: 3, Base: 5 * time.Millisecond}))

	d := <-dead
	fmt.Printf("dead letter after %d deliveries: %v\n", d.Attempts, d.Err)
	// Output:
	// delivery 1
	// delivery 2
	// delivery 3
	// dead letter after 3 deliveries: payment service unavailable
}
