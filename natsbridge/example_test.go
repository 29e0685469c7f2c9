package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// Two brokers, as two processes would have, connected through an embedded
// NATS server: orders cross live over core NATS, and invoices through a
// JetStream stream, from which a late importer replays them with their
// offsets.
func Example() {
	store, _ := os.MkdirTemp("", "natsbridge-example")
	defer os.RemoveAll(store)
	srv, _ := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: store, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 64 << 20,
	})
	go srv.Start()
	defer srv.Shutdown()
	srv.ReadyForConnections(5 * time.Second)

	type Order struct {
		ID   int
		Item string
	}
	type Invoice struct {
		Order int
		Total float64
	}
	ctx := context.Background()

	// The shop: its broker, connection and bridge export orders and invoices.
	var shop topic.Broker
	shopConn, _ := nats.Connect(srv.ClientURL(), natsbridge.ConnectOptions()...)
	defer shopConn.Close()
	shopBridge := natsbridge.New(&shop, shopConn, natsbridge.Config{})
	defer shopBridge.Close()
	shopBridge.Export[Order]("shop.orders")
	invoices, _ := shopBridge.ExportStream[Invoice](ctx, "shop.invoices", natsbridge.Stream{MaxMsgs: 1000, MaxAge: time.Hour})

	// The warehouse imports orders, and sees them as plain Orders.
	var warehouse topic.Broker
	whConn, _ := nats.Connect(srv.ClientURL(), natsbridge.ConnectOptions()...)
	defer whConn.Close()
	whBridge := natsbridge.New(&warehouse, whConn, natsbridge.Config{})
	defer whBridge.Close()
	orders, cancel := warehouse.Subscribe(topic.From(natsbridge.Unwrap[Order]))
	defer cancel()
	whBridge.Import[Order]("shop.orders")

	shop.Publish(Order{ID: 1, Item: "tea"})
	fmt.Printf("warehouse got %+v\n", <-orders)

	shop.Publish(Invoice{Order: 1, Total: 4.5})
	shop.Publish(Invoice{Order: 2, Total: 9})
	for invoices.Stats().Sent < 2 {
		time.Sleep(time.Millisecond)
	}

	// Accounting starts later and replays the stream from the start.
	records, cancelRecords := warehouse.Subscribe(topic.Buffer[natsbridge.Imported[Invoice]](8))
	defer cancelRecords()
	whBridge.ImportStream[Invoice](ctx, "shop.invoices", natsbridge.Stream{}, natsbridge.Consumer{Durable: "accounting", Start: natsbridge.StartEarliest()})
	for range 2 {
		r := <-records
		fmt.Printf("accounting got offset %d: %+v\n", r.Offset, r.Value)
	}

	fmt.Printf("shop sent %d, warehouse received %d\n", shopBridge.Stats().Sent, whBridge.Stats().Received)
	// Output:
	// warehouse got {ID:1 Item:tea}
	// accounting got offset 1: {Order:1 Total:4.5}
	// accounting got offset 2: {Order:2 Total:9}
	// shop sent 3, warehouse received 3
}

// A handler on a stream, at least once end to end: a declined card is a
// permanent error, dead-lettered at once on the broker and on NATS; a
// flaky failure is redelivered by the stream after the back-off, and then
// handled.
func ExampleBridge_HandleStream() {
	store, _ := os.MkdirTemp("", "natsbridge-example")
	defer os.RemoveAll(store)
	srv, _ := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: store, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 64 << 20,
	})
	go srv.Start()
	defer srv.Shutdown()
	srv.ReadyForConnections(5 * time.Second)

	type Charge struct {
		Order int
		Card  string
	}
	ctx := context.Background()
	var b topic.Broker
	nc, _ := nats.Connect(srv.ClientURL(), natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()

	dead, cancel := b.Subscribe(topic.Buffer[topic.DeadLetter[Charge]](1))
	defer cancel()
	handled := make(chan natsbridge.Imported[Charge], 4)
	flaky := true
	br.HandleStream[Charge](ctx, "billing.charges", natsbridge.Stream{Memory: true}, natsbridge.Consumer{Durable: "billing"},
		func(_ context.Context, c natsbridge.Imported[Charge]) error {
			switch {
			case c.Value.Card == "declined":
				return topic.Permanent(errors.New("card declined"))
			case c.Value.Order == 2 && flaky:
				flaky = false
				return errors.New("payment service unavailable")
			}
			handled <- c
			return nil
		}, natsbridge.Redeliver[Charge](topic.RetryPolicy{Attempts: 3, Base: 10 * time.Millisecond}))

	br.ExportStream[Charge](ctx, "billing.charges", natsbridge.Stream{})
	b.Publish(Charge{Order: 1, Card: "declined"})
	b.Publish(Charge{Order: 2, Card: "visa"})

	d := <-dead
	fmt.Printf("dead letter: order %d after %d attempt: %v\n", d.Value.Order, d.Attempts, d.Err)
	c := <-handled
	fmt.Printf("handled order %d at delivery %d\n", c.Value.Order, c.Delivered)
	fmt.Println("dead letters on NATS go to", natsbridge.DeadLetterSubject("billing"))
	// Output:
	// dead letter: order 1 after 1 attempt: card declined
	// handled order 2 at delivery 2
	// dead letters on NATS go to natsbridge.deadletter.billing
}
