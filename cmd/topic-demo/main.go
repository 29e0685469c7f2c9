// Command topic-demo shows a topic.Broker at work: typed events published from
// several goroutines, a wildcard subscription on an interface, a From
// transformation, a slow subscriber whose losses stay its own and are
// counted, and a handler whose failures end as dead letters.
//
// It publishes a fixed number of events, so it ends in well under a second,
// and prints what each subscription received and what the broker counted.
package main

import (
	"context"
	"errors"
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
	ordersCh, cancelOrders := b.Subscribe(topic.Buffer[OrderPlaced](orders), topic.Name[OrderPlaced]("orders"))
	eventsCh, cancelEvents := b.Subscribe(topic.Buffer[Event](total), topic.Name[Event]("audit"))
	errorsCh, cancelErrors := b.Subscribe(topic.Buffer[error](payments), topic.Name[error]("alerts"))
	revenueCh, cancelRevenue := b.Subscribe(
		topic.Buffer[Revenue](orders),
		topic.From(func(o OrderPlaced) (Revenue, bool) { return Revenue(o.Cents), true }),
		topic.Name[Revenue]("accounting"),
	)
	// The slow one holds a few values and takes a millisecond over each, so
	// each burst of heartbeats overflows it; the broker counts what it loses.
	slowCh, cancelSlow := b.Subscribe(topic.Buffer[Heartbeat](slowBuffer), topic.Name[Heartbeat]("slow monitor"))

	// A handler with retries: a fraud check that fails once on some orders
	// (and succeeds on retry) and always on others, which end as dead
	// letters, received by whoever subscribes to them.
	deadCh, cancelDead := b.Subscribe(topic.Buffer[topic.DeadLettered](orders), topic.Name[topic.DeadLettered]("dead letters"))
	var tries sync.Map
	stopFraud := b.Handle(func(_ context.Context, o OrderPlaced) error {
		n, _ := tries.LoadOrStore(o.ID, new(int))
		*n.(*int)++
		switch {
		case o.ID%100 == 0:
			return errors.New("flagged by the fraud model")
		case o.ID%50 == 25 && *n.(*int) == 1:
			return errors.New("fraud service timed out")
		}
		return nil
	},
		topic.Buffer[OrderPlaced](orders),
		topic.Name[OrderPlaced]("fraud check"),
		topic.Retry[OrderPlaced](topic.RetryPolicy{Attempts: 3, Base: 100 * time.Microsecond, Max: time.Millisecond}),
	)

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

	// Stopping the handler lets it finish its queue, retries included.
	// The snapshot is taken before, since a stopped handler leaves it.
	waitIdle(&b, "fraud check", uint64(orders))
	snapshot := b.Subscriptions()
	stopFraud()

	// Cancelling closes each channel; values already accepted stay
	// receivable, so every receiver drains its buffer and stops.
	for _, cancel := range []func(){cancelOrders, cancelEvents, cancelErrors, cancelRevenue, cancelSlow, cancelDead} {
		cancel()
	}
	receivers.Wait()
	var dead []topic.Letter
	for d := range deadCh {
		dead = append(dead, d.Letter())
	}

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
	fmt.Fprintln(w, "subscription\tsubscribes to\tbuffer\tmatching\treceived\tlost (counted by the broker)")
	for _, c := range stats {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\n",
			c.name, c.topic, c.buffer, c.expected, c.received, lostOf(snapshot, c.name))
	}
	w.Flush()
	fmt.Printf("\nThe slow monitor (%v per value, buffer %d, bursts of %d) lost what it could not keep up with,\n",
		slowWork, slowBuffer, heartbeatBurst)
	fmt.Println("every loss counted; nobody else lost anything and no publisher ever waited.")

	for _, st := range snapshot {
		if h := st.Handler; h != nil {
			fmt.Printf("\nhandler %q: accepted %d, handled %d, retried %d, dead-lettered %d\n",
				st.Name, h.Accepted, h.Handled, h.Retried, h.DeadLettered)
		}
	}
	fmt.Printf("dead letters received: %d, e.g. order #%d after %d attempts: %v\n",
		len(dead), dead[0].Value.(OrderPlaced).ID, dead[0].Attempts, dead[0].Err)
	fmt.Printf("\nTook %v.\n", time.Since(start).Round(time.Millisecond))
}

// lostOf formats the lost counts of the subscription named name.
func lostOf(snapshot []topic.SubscriptionStats, name string) string {
	for _, st := range snapshot {
		if st.Name == name {
			l := st.Lost
			if l.Total() == 0 {
				return "0"
			}
			return fmt.Sprintf("%d (full %d, evicted %d, failed %d)", l.Total(), l.Full, l.Evicted, l.Failed)
		}
	}
	return "?"
}

// waitIdle waits until the handler named name has taken want values and
// finished with each, or a second has passed.
func waitIdle(b *topic.Broker, name string, want uint64) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, st := range b.Subscriptions() {
			if h := st.Handler; st.Name == name && h != nil &&
				h.Accepted == want && h.Handled+h.DeadLettered == want {
				return
			}
		}
	}
}
