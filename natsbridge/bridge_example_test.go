package natsbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// ConnectOptions come first, the application's own after them.
func ExampleConnectOptions() {
	url, stop := exampleServer()
	defer stop()

	nc, err := nats.Connect(url, append(natsbridge.ConnectOptions(), nats.Name("shop"))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	fmt.Println("no echo:", nc.Opts.NoEcho, "- reconnect attempts:", nc.Opts.MaxReconnect, "- name:", nc.Opts.Name)
	// Output:
	// no echo: true - reconnect attempts: -1 - name: shop
}

// A Bridge carries chosen types both ways between a broker and a NATS
// connection: here orders go out, and invoices come in from a billing
// service that is a plain NATS client.
func ExampleBridge() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }
	type Invoice struct {
		Order int
		Total float64
	}

	billing, _ := nats.Connect(url)
	defer billing.Close()
	billing.Subscribe("shop.orders", func(m *nats.Msg) {
		var o Order
		_ = json.Unmarshal(m.Data, &o)
		data, _ := json.Marshal(Invoice{Order: o.ID, Total: 9.5})
		billing.Publish("shop.invoices", data)
	})
	billing.Flush()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	invoices, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[Invoice]](1))
	defer cancel()
	br.Export[Order]("shop.orders")
	br.Import[Invoice]("shop.invoices")

	b.Publish(Order{ID: 7})
	inv := <-invoices
	fmt.Printf("invoice for order %d: %.2f, from %s\n", inv.Value.Order, inv.Value.Total, inv.Subject)
	// Output:
	// invoice for order 7: 9.50, from shop.invoices
}

// A new bridge adds nothing to the broker's subscriptions but the handlers
// of its exports, and its links end with the broker's Shutdown.
func ExampleNew() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	fmt.Println("subscriptions:", len(b.Subscriptions()))

	br.Export[Order]("shop.orders")
	for _, st := range b.Subscriptions() {
		fmt.Println("subscription:", st.Name)
	}

	_ = b.Shutdown(context.Background())
	_, err := br.Export[Order]("shop.orders")
	fmt.Println("after Shutdown:", err)
	// Output:
	// subscriptions: 0
	// subscription: natsbridge export shop.orders
	// after Shutdown: natsbridge: bridge closed
}

// Close stops every link; the connection, the application's, stays open.
func ExampleBridge_Close() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	br.Export[Order]("shop.orders")
	br.Import[Order]("shop.returns")

	br.Close()
	_, err := br.Import[Order]("shop.returns")
	fmt.Println("links:", len(br.Links()), "- subscriptions:", len(b.Subscriptions()))
	fmt.Println(err, "- connected:", nc.IsConnected())
	// Output:
	// links: 0 - subscriptions: 0
	// natsbridge: bridge closed - connected: true
}

// Export sends every value of a type to a subject, as JSON by default, for
// any NATS client to read. A subject NATS would not deliver as meant is
// refused.
func ExampleBridge_Export() {
	url, stop := exampleServer()
	defer stop()
	type Order struct {
		ID   int    `json:"id"`
		Item string `json:"item"`
	}

	reader, _ := nats.Connect(url)
	defer reader.Close()
	sub, _ := reader.SubscribeSync("shop.orders")
	reader.Flush()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	br.Export[Order]("shop.orders")

	b.Publish(Order{ID: 1, Item: "tea"})
	m, _ := sub.NextMsg(5 * time.Second)
	fmt.Printf("%s: %s\n", m.Subject, m.Data)

	_, err := br.Export[Order]("shop.*")
	fmt.Println(errors.Is(err, natsbridge.ErrSubject))
	// Output:
	// shop.orders: {"id":1,"item":"tea"}
	// true
}

// Import publishes what arrives on a subject, here a wildcard one, as
// Imported values that say where each came from.
func ExampleBridge_Import() {
	url, stop := exampleServer()
	defer stop()
	type Reading struct{ Celsius float64 }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	readings, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[Reading]](2))
	defer cancel()
	br.Import[Reading]("sensors.*")

	sensors, _ := nats.Connect(url)
	defer sensors.Close()
	sensors.Publish("sensors.kitchen", []byte(`{"Celsius": 21.5}`))
	sensors.Publish("sensors.cellar", []byte(`{"Celsius": 12}`))

	for range 2 {
		r := <-readings
		fmt.Println(r.Subject, r.Value.Celsius)
	}
	// Output:
	// sensors.kitchen 21.5
	// sensors.cellar 12
}

// Links lists the live links, for instance to stop the imports alone: the
// process takes no more input, and its exports go on.
func ExampleBridge_Links() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }
	type Refund struct{ ID int }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	br.Export[Order]("shop.orders")
	br.Import[Order]("shop.returns")
	br.Import[Refund]("shop.refunds")

	for _, l := range br.Links() {
		if l.Kind() == "import" {
			l.Stop()
		}
	}
	for _, l := range br.Links() {
		fmt.Println(l.Kind(), l.Subject())
	}
	// Output:
	// export shop.orders
}

// Origin is the bridge's identity in the OriginHeader of what it exports,
// here to core NATS on a connection that echoes, without ConnectOptions.
func ExampleBridge_Origin() {
	url, stop := exampleServer()
	defer stop()

	var b topic.Broker
	nc, _ := nats.Connect(url)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	sub, _ := nc.SubscribeSync("greetings")
	br.Export[string]("greetings")

	b.Publish("hello")
	m, _ := sub.NextMsg(5 * time.Second)
	fmt.Println(len(br.Origin()), m.Header.Get(natsbridge.OriginHeader) == br.Origin())
	// Output:
	// 16 true
}

// A bridge's Stats add up its links', those stopped included.
func ExampleBridge_Stats() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }
	type Refund struct{ ID int }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	orders, _ := br.Export[Order]("shop.orders")
	br.Export[Refund]("shop.refunds")

	b.Publish(Order{1})
	b.Publish(Order{2})
	b.Publish(Refund{1})
	_ = b.Settle(context.Background())
	orders.Stop()

	fmt.Println("sent:", br.Stats().Sent)
	// Output:
	// sent: 3
}

// Unwrap, as a From function, makes a subscription to T receive the
// imported values beside the local ones.
func ExampleUnwrap() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	orders, cancel := b.Subscribe(topic.Buffer[Order](2), topic.From(natsbridge.Unwrap[Order]))
	defer cancel()
	br.Import[Order]("shop.orders")

	other, _ := nats.Connect(url)
	defer other.Close()
	b.Publish(Order{ID: 1})                           // published here
	other.Publish("shop.orders", []byte(`{"ID": 2}`)) // by another process
	fmt.Println(<-orders, <-orders)
	// Output:
	// {1} {2}
}

// An Imported value says where it came from: a subject for a core NATS
// import, and for a durable stream import also its stream sequence, its
// time of storage and its deliveries.
func ExampleImported() {
	url, stop := exampleServer()
	defer stop()
	storeInStream(url, "shop.orders", natsbridge.Stream{}, 10)

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	orders, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](2))
	defer cancel()
	br.Import[int]("shop.live")
	br.ImportStream[int](context.Background(), "shop.orders", natsbridge.Stream{},
		natsbridge.Consumer{Durable: "audit", Start: natsbridge.StartEarliest()})
	stored := <-orders

	other, _ := nats.Connect(url)
	defer other.Close()
	other.Publish("shop.live", []byte("20"))
	live := <-orders

	for _, o := range []natsbridge.Imported[int]{stored, live} {
		fmt.Printf("%d from %s: offset %d, delivered %d, timed %t\n", o.Value, o.Subject, o.Offset, o.Delivered, !o.Time.IsZero())
	}
	// Output:
	// 10 from shop.orders: offset 1, delivered 1, timed true
	// 20 from shop.live: offset 0, delivered 0, timed false
}

// DefaultSubject derives a subject from the type's package path and name,
// for programs that share the type; Export and Import use it for an empty
// subject.
func ExampleDefaultSubject() {
	type Order struct{ ID int }
	fmt.Println(natsbridge.DefaultSubject[Order]())
	fmt.Println(natsbridge.DefaultSubject[topic.DeadLetter[string]]())
	// Output:
	// topic.github_com.seedaa7df82c.topic.natsbridge_test.Order
	// topic.github_com.seedaa7df82c.topic.DeadLetter_string_
}

// An Error reaches Config.OnError, and, for a value an export could not
// send, the broker's loss report too: here a value JSON cannot encode.
func ExampleError() {
	url, stop := exampleServer()
	defer stop()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{
		OnError: func(e *natsbridge.Error) { fmt.Println("OnError:", e) },
	})
	defer br.Close()
	br.Export[float64]("sensors.temp", natsbridge.HandlerOptions(topic.OnLoss(func(l topic.Loss[float64]) {
		var e *natsbridge.Error
		if errors.As(l.Err, &e) {
			fmt.Printf("lost %v: %v on %s\n", l.Value, e.Op, e.Subject)
		}
	})))

	b.Publish(math.Inf(1))
	_ = b.Settle(context.Background())
	// Output:
	// OnError: natsbridge: encode sensors.temp: json: unsupported value: +Inf
	// lost +Inf: encode on sensors.temp
}

// An Op says what failed: here OnError counts the failures by Op, an
// encoding failure of an export and a decoding failure of an import.
func ExampleOp() {
	url, stop := exampleServer()
	defer stop()

	var mu sync.Mutex
	failures := make(map[natsbridge.Op]int)
	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{OnError: func(e *natsbridge.Error) {
		mu.Lock()
		defer mu.Unlock()
		failures[e.Op]++
	}})
	defer br.Close()
	br.Export[float64]("sensors.temp")
	imp, _ := br.Import[float64]("sensors.raw")

	b.Publish(math.NaN())
	other, _ := nats.Connect(url)
	defer other.Close()
	other.Publish("sensors.raw", []byte("warm"))
	_ = b.Settle(context.Background())
	for imp.Stats().DecodeErrors == 0 {
		time.Sleep(time.Millisecond)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, op := range []natsbridge.Op{natsbridge.Encode, natsbridge.Decode, natsbridge.Publish} {
		fmt.Println(op, failures[op])
	}
	// Output:
	// encode 1
	// decode 1
	// publish 0
}

// Options are values: a program can assemble them before it exports. The
// zero Option has no effect.
func ExampleOption() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()

	options := func(queue int) []natsbridge.Option[Order] {
		opts := []natsbridge.Option[Order]{natsbridge.WithCodec[Order](natsbridge.JSON[Order]{}), {}}
		if queue > 0 {
			opts = append(opts, natsbridge.HandlerOptions(topic.Buffer[Order](queue)))
		}
		return opts
	}
	br.Export[Order]("shop.orders", options(1<<16)...)
	br.Export[Order]("shop.audit", options(0)...)
	for _, st := range b.Subscriptions() {
		fmt.Printf("%s: queue of %d\n", st.Name, st.Capacity)
	}
	// Output:
	// natsbridge export shop.audit: queue of 1024
	// natsbridge export shop.orders: queue of 65536
}

// HandlerOptions configures the handler subscription through which an
// export takes the broker's values: its name and queue here.
func ExampleHandlerOptions() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	br.Export[Order]("shop.orders", natsbridge.HandlerOptions(
		topic.Name[Order]("orders to NATS"),
		topic.Buffer[Order](16),
	))

	st := b.Subscriptions()[0]
	fmt.Printf("%s: queue of %d, handler %t\n", st.Name, st.Capacity, st.Handler != nil)
	// Output:
	// orders to NATS: queue of 16, handler true
}

// Pending bounds what nats.go holds for a core import that falls behind;
// beyond it, messages are dropped and counted. Here the broker's
// subscriber holds up the import on the first message, and two of the five
// that follow are held, three dropped.
func ExamplePending() {
	url, stop := exampleServer()
	defer stop()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	busy, release := make(chan struct{}), make(chan struct{})
	got, cancel := b.Subscribe(topic.Buffer[int](8), topic.From(func(n natsbridge.Imported[int]) (int, bool) {
		if n.Value == 1 {
			close(busy)
			<-release // a subscriber that holds up the import's goroutine
		}
		return n.Value, true
	}))
	defer cancel()
	imp, _ := br.Import[int]("ticks", natsbridge.Pending[int](2))

	other, _ := nats.Connect(url)
	defer other.Close()
	other.Publish("ticks", []byte("1"))
	<-busy
	for n := 2; n <= 6; n++ {
		other.Publish("ticks", []byte(fmt.Sprint(n)))
	}
	other.Flush()
	for imp.Stats().Dropped < 3 {
		time.Sleep(time.Millisecond)
	}
	close(release)

	fmt.Println("received", <-got, <-got, <-got, "- dropped", imp.Stats().Dropped)
	// Output:
	// received 1 2 3 - dropped 3
}

// A Link is one export or import, to watch or stop on its own.
func ExampleLink() {
	url, stop := exampleServer()
	defer stop()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	link, err := br.Export[string]("greetings")
	if err != nil {
		fmt.Println(err)
		return
	}

	b.Publish("hello")
	_ = b.Settle(context.Background())
	fmt.Printf("%s %s: sent %d\n", link.Kind(), link.Subject(), link.Stats().Sent)
	// Output:
	// export greetings: sent 1
}

// Kind tells the links of a bridge apart.
func ExampleLink_Kind() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	br.Export[string]("a")
	br.Import[string]("b")
	br.ExportStream[string](ctx, "c", natsbridge.Stream{Memory: true})
	br.ImportStream[string](ctx, "d", natsbridge.Stream{Memory: true}, natsbridge.Consumer{})
	br.HandleStream[string](ctx, "e", natsbridge.Stream{Memory: true}, natsbridge.Consumer{Durable: "e"},
		func(context.Context, natsbridge.Imported[string]) error { return nil })

	var kinds []string
	for _, l := range br.Links() {
		kinds = append(kinds, l.Subject()+": "+l.Kind())
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		fmt.Println(k)
	}
	// Output:
	// a: export
	// b: import
	// c: stream export
	// d: stream import
	// e: stream handler
}

// A link's Stats count what crossed it and what failed: here an import
// that received a message it could decode and one it could not.
func ExampleLink_Stats() {
	url, stop := exampleServer()
	defer stop()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	got, cancel := b.Subscribe(topic.Buffer[natsbridge.Imported[int]](1))
	defer cancel()
	imp, _ := br.Import[int]("counts")

	other, _ := nats.Connect(url)
	defer other.Close()
	other.Publish("counts", []byte("seven"))
	other.Publish("counts", []byte("7"))
	<-got

	s := imp.Stats()
	fmt.Printf("received %d, decode errors %d\n", s.Received, s.DecodeErrors)
	// Output:
	// received 1, decode errors 1
}

// Stop ends one link, after an export has sent what its queue holds; the
// values published after it are not exported.
func ExampleLink_Stop() {
	url, stop := exampleServer()
	defer stop()

	reader, _ := nats.Connect(url)
	defer reader.Close()
	sub, _ := reader.SubscribeSync("ticks")
	reader.Flush()

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	exp, _ := br.Export[int]("ticks")

	for n := range 3 {
		b.Publish(n)
	}
	exp.Stop()
	b.Publish(3)
	nc.Flush()

	for {
		m, err := sub.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		fmt.Printf("%s ", m.Data)
	}
	fmt.Println("- links:", len(br.Links()))
	// Output:
	// 0 1 2 - links: 0
}

// Subject is the subject a link uses: for an empty one given to Export,
// the type's DefaultSubject.
func ExampleLink_Subject() {
	url, stop := exampleServer()
	defer stop()
	type Order struct{ ID int }

	var b topic.Broker
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	exp, _ := br.Export[Order]("")
	fmt.Println(exp.Subject())
	// Output:
	// topic.github_com.seedaa7df82c.topic.natsbridge_test.Order
}

// storeInStream stores values on subject in the stream s describes (created if
// absent), through a bridge of its own, as another process would.
func storeInStream(url, subject string, s natsbridge.Stream, values ...int) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	nc, _ := nats.Connect(url, natsbridge.ConnectOptions()...)
	defer nc.Close()
	br := natsbridge.New(&b, nc, natsbridge.Config{})
	defer br.Close()
	if _, err := br.ExportStream[int](context.Background(), subject, s); err != nil {
		panic(err)
	}
	for _, v := range values {
		b.Publish(v)
	}
	_ = b.Settle(context.Background()) // every value is stored and acknowledged
}
