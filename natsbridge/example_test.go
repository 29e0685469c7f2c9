package natsbridge_test

import (
	"context"
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
