package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// Two brokers, as two processes would have, connected through a NATS
// server with JetStream (here one the example starts, as `nats-server -js`
// runs): orders cross live over core NATS, and invoices through a
// JetStream stream, from which a late importer replays them with their
// offsets.
func Example() {
	url, stop := exampleServer()
	defer stop()

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
	shopConn, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer shopConn.Close()
	shopBridge := natsbridge.New(&shop, shopConn, natsbridge.Config{})
	defer shopBridge.Close()
	shopBridge.Export[Order]("shop.orders")
	invoices, _ := shopBridge.ExportStream[Invoice](ctx, "shop.invoices", natsbridge.Stream{MaxMsgs: 1000, MaxAge: time.Hour})

	// The warehouse imports orders, and sees them as plain Orders.
	var warehouse topic.Broker
	whConn, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
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
	url, stop := exampleServer()
	defer stop()

	type Charge struct {
		Order int
		Card  string
	}
	ctx := context.Background()
	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
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

// celsiusCodec sends a temperature as its decimal text, for programs that
// are not in Go.
type celsiusCodec struct{}

func (celsiusCodec) Marshal(c float64) ([]byte, error) {
	return strconv.AppendFloat(nil, c, 'f', -1, 64), nil
}
func (celsiusCodec) Unmarshal(b []byte) (float64, error) { return strconv.ParseFloat(string(b), 64) }

// WithCodec replaces JSON: here, plain text that any client can read.
func ExampleWithCodec() {
	url, stop := exampleServer()
	defer stop()
	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	br.Export[float64]("sensors.temp", natsbridge.WithCodec[float64](celsiusCodec{}))

	raw, _ := nats.Connect(url)
	defer raw.Close()
	sub, _ := raw.SubscribeSync("sensors.temp")
	raw.Flush()
	b.Publish(21.5)
	m, _ := sub.NextMsg(5 * time.Second)
	fmt.Printf("on the wire: %s\n", m.Data)
	// Output:
	// on the wire: 21.5
}

// Config.OnError sees every failure, after it is counted in Stats: here a
// message that is not JSON, which the import skips.
func ExampleConfig() {
	url, stop := exampleServer()
	defer stop()
	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	failed := make(chan *natsbridge.Error, 1)
	br := natsbridge.New(&b, nc, natsbridge.Config{
		OnError:    func(e *natsbridge.Error) { failed <- e },
		AckTimeout: 2 * time.Second,
	})
	defer br.Close()
	imp, _ := br.Import[struct{ ID int }]("shop.orders")

	raw, _ := nats.Connect(url)
	defer raw.Close()
	raw.Publish("shop.orders", []byte("not json"))
	e := <-failed
	fmt.Printf("%v on %s; decode errors counted: %d\n", e.Op, e.Subject, imp.Stats().DecodeErrors)
	// Output:
	// decode on shop.orders; decode errors counted: 1
}

// Stats counts what crossed each link, and the bridge's sum, stopped links
// included.
func ExampleStats() {
	url, stop := exampleServer()
	defer stop()
	type Tick struct{ N int }
	var from, to topic.Broker
	nc1, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc1.Close()
	nc2, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc2.Close()
	out, in := natsbridge.New(&from, nc1, natsbridge.Config{}), natsbridge.New(&to, nc2, natsbridge.Config{})
	defer out.Close()
	defer in.Close()
	ticks, cancel := to.Subscribe(topic.Buffer[natsbridge.Imported[Tick]](3))
	defer cancel()
	exp, _ := out.Export[Tick]("ticks")
	in.Import[Tick]("ticks")
	for n := range 3 {
		from.Publish(Tick{n})
	}
	for range 3 {
		<-ticks
	}
	// The export counts a value sent once NATS has taken it, which may
	// be after the importer received it: Stop waits for the export's
	// goroutines, so its counts are final.
	exp.Stop()
	s := exp.Stats()
	fmt.Printf("export: sent %d, errors %d; importing bridge: received %d\n",
		s.Sent, s.PublishErrors+s.EncodeErrors, in.Stats().Received)
	// Output:
	// export: sent 3, errors 0; importing bridge: received 3
}
