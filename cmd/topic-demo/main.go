// Command topic-demo shows a topic.Broker at work: typed events published from
// several goroutines, a wildcard subscription on an interface, a From
// transformation, and a slow subscriber whose losses stay its own.
//
// It publishes a fixed number of events, so it ends in well under a second,
// and prints what each subscription received.
package main

import (
	"fmt"
	"os"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/seedaa7df82c/topic"
)

// Event is implemented by every event below; subscribing to it is a wildcard.
type Event interface{ Kind() string }

// OrderPlaced is published when a customer places an order.
type OrderPlaced struct {
	ID    int
	Cents int64
}

// PaymentFailed is published when a payment is declined. It is an error, so
// a subscription to error receives it.
type PaymentFailed struct {
	Order  int
	Reason string
}

// Heartbeat is published by a service to say it is alive.
type Heartbeat struct {
	Service string
	N       int
}

// Revenue is what the accounting subscription wants: cents, not orders.
type Revenue int64

func (OrderPlaced) Kind() string   { return "order" }
func (PaymentFailed) Kind() string { return "payment" }
func (Heartbeat) Kind() string     { return "heartbeat" }

func (p PaymentFailed) Error() string {
	return fmt.Sprintf("payment for order #%d failed: %s", p.Order, p.Reason)
}

const (
	orderPublishers = 2
	ordersEach      = 500
	payments        = 100
	heartbeats      = 400
	heartbeatBurst  = 10 // heartbeats sent back to back, then a pause
	heartbeatPause  = 5 * time.Millisecond
	slowWork        = time.Millisecond
	slowBuffer      = 4
)

// counter is a subscription's tally, written by its receiving goroutine.
type counter struct {
	name     string
	topic    string
	buffer   int
	expected int
	received int
}

func main() {
	start := time.Now()
	var b topic.Broker

	orders := orderPublishers * ordersEach
	total := orders + payments + heartbeats

	// Each fast subscription has room for everything it can match, so it
	// loses nothing however the goroutines are scheduled.
	ordersCh, cancelOrders := b.Subscribe(topic.Buffer[OrderPlaced](orders))
	eventsCh, cancelEvents := b.Subscribe(topic.Buffer[Event](total))
	errorsCh, cancelErrors := b.Subscribe(topic.Buffer[error](payments))
	revenueCh, cancelRevenue := b.Subscribe(
		topic.Buffer[Revenue](orders),
		topic.From(func(o OrderPlaced) (Revenue, bool) { return Revenue(o.Cents), true }),
	)
	// The slow one holds a few values and takes a millisecond over each, so
	// each burst of heartbeats overflows it.
	slowCh, cancelSlow := b.Subscribe(topic.Buffer[Heartbeat](slowBuffer))

	stats := []*counter{
		{name: "orders", topic: "OrderPlaced", buffer: orders, expected: orders},
		{name: "audit", topic: "Event (interface)", buffer: total, expected: total},
		{name: "alerts", topic: "error (interface)", buffer: payments, expected: payments},
		{name: "accounting", topic: "Revenue From OrderPlaced", buffer: orders, expected: orders},
		{name: "slow monitor", topic: "Heartbeat", buffer: slowBuffer, expected: heartbeats},
	}

	// Each receiver owns its tally until receivers.Wait returns.
	var receivers sync.WaitGroup
	var revenue Revenue
	var firstAlerts []string
	kinds := map[string]int{}
	receivers.Go(func() {
		for range ordersCh {
			stats[0].received++
		}
	})
	receivers.Go(func() {
		for e := range eventsCh {
			kinds[e.Kind()]++
			stats[1].received++
		}
	})
	receivers.Go(func() {
		for err := range errorsCh {
			if len(firstAlerts) < 3 {
				firstAlerts = append(firstAlerts, err.Error())
			}
			stats[2].received++
		}
	})
	receivers.Go(func() {
		for r := range revenueCh {
			revenue += r
			stats[3].received++
		}
	})
	receivers.Go(func() {
		for range slowCh {
			time.Sleep(slowWork)
			stats[4].received++
		}
	})

	// Publishers: the topic of each Publish is the type of its argument.
	var publishers sync.WaitGroup
	var published Revenue
	var mu sync.Mutex
	for p := range orderPublishers {
		publishers.Go(func() {
			var sum Revenue
			for i := range ordersEach {
				id := p*ordersEach + i + 1
				cents := int64(500 + id%97*25)
				sum += Revenue(cents)
				b.Publish(OrderPlaced{ID: id, Cents: cents})
			}
			mu.Lock()
			published += sum
			mu.Unlock()
		})
	}
	publishers.Go(func() {
		reasons := []string{"card declined", "insufficient funds", "expired card"}
		for i := range payments {
			b.Publish(PaymentFailed{Order: 7*i + 3, Reason: reasons[i%len(reasons)]})
		}
	})
	publishers.Go(func() {
		for i := range heartbeats {
			b.Publish(Heartbeat{Service: "checkout", N: i})
			if (i+1)%heartbeatBurst == 0 {
				time.Sleep(heartbeatPause)
			}
		}
	})
	publishers.Wait()

	// Cancelling closes each channel; values already accepted stay
	// receivable, so every receiver drains its buffer and stops.
	for _, cancel := range []func(){cancelOrders, cancelEvents, cancelErrors, cancelRevenue, cancelSlow} {
		cancel()
	}
	receivers.Wait()

	fmt.Printf("published: %d OrderPlaced (%d goroutines), %d PaymentFailed, %d Heartbeat\n\n",
		orders, orderPublishers, payments, heartbeats)
	fmt.Println("first alerts through the error subscription:")
	for _, a := range firstAlerts {
		fmt.Println("  ", a)
	}
	fmt.Printf("\naudit saw by kind: order=%d payment=%d heartbeat=%d\n",
		kinds["order"], kinds["payment"], kinds["heartbeat"])
	fmt.Printf("accounting revenue: $%d.%02d (published $%d.%02d)\n\n",
		revenue/100, revenue%100, published/100, published%100)

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "subscription\tsubscribes to\tbuffer\tmatching\treceived\tlost")
	for _, c := range stats {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\n",
			c.name, c.topic, c.buffer, c.expected, c.received, c.expected-c.received)
	}
	w.Flush()
	fmt.Printf("\nThe slow monitor (%v per value, buffer %d, bursts of %d) lost what it could not keep up with;\n",
		slowWork, slowBuffer, heartbeatBurst)
	fmt.Printf("nobody else lost anything and no publisher ever waited. Took %v.\n",
		time.Since(start).Round(time.Millisecond))
}
