// Command topic-demo shows a topic.Broker at work: typed events published from
// several goroutines, a wildcard subscription on an interface, a From
// transformation, a slow subscriber whose losses stay its own and are
// counted, and a handler whose failures end as dead letters; then followers
// of a retained type, which lose nothing the log keeps.
//
// It publishes a fixed number of events, so it ends in well under a second,
// and prints what each subscription received and what the broker counted.
//
// With -serve host:port it then keeps a broker busy (publishers at a
// modest rate, a slow subscriber losing values, a handler retrying and
// dead-lettering, a follower of a retained type) and serves its
// topicdebug page at /debug/topic/ on that address, printing the URL,
// until interrupted; port 0 picks a free port. make demo serves on
// 127.0.0.1:$(PORT).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
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
	addr := flag.String("serve", "", "after the run, serve a busy broker's debug page on `host:port` until interrupted (port 0: a free one)")
	flag.Parse()
	run()
	if *addr == "" {
		fmt.Println("With -serve 127.0.0.1:8080 (as make demo runs it), a busy broker's debug page follows: its losses, retries, dead letters and followers, live.")
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "topic-demo:", err)
		os.Exit(1)
	}
}

// run shows the scenes, each on a broker of its own, and how long they
// took.
func run() {
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

	scene("run", "one broker: three types published, five subscriptions (a type, two interfaces as wildcards, a From transform, a slow subscriber)")
	fmt.Printf("published: %d OrderPlaced (%d goroutines), %d PaymentFailed, %d Heartbeat\n\n",
		orders, orderPublishers, payments, heartbeats)
	fmt.Println("first alerts through the error subscription:")
	for _, a := range firstAlerts {
		fmt.Println("  ", a)
	}
	fmt.Printf("\naudit saw by kind: order=%d payment=%d heartbeat=%d\n",
		kinds["order"], kinds["payment"], kinds["heartbeat"])
	fmt.Printf("accounting revenue: $%d.%02d (published $%d.%02d)\n",
		revenue/100, revenue%100, published/100, published%100)

	scene("run", "what each subscription matched, received and lost, as the broker counted it")
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

	scene("run", "a handler with retries: a failed call is tried again; a value that fails every attempt becomes a dead letter")
	for _, st := range snapshot {
		if h := st.Handler; h != nil {
			fmt.Printf("handler %q: accepted %d, handled %d, retried %d, dead-lettered %d\n",
				st.Name, h.Accepted, h.Handled, h.Retried, h.DeadLettered)
		}
	}
	fmt.Printf("dead letters received: %d, e.g. order #%d after %d attempts: %v\n",
		len(dead), dead[0].Value.(OrderPlaced).ID, dead[0].Attempts, dead[0].Err)

	followScene()
	fmt.Printf("\nTook %v.\n", time.Since(start).Round(time.Millisecond))
}

// scene prints the line that starts a block of the output: what it shows,
// and the function of this program that produced it.
func scene(function, what string) {
	fmt.Printf("\n== %s (%s, cmd/topic-demo)\n", what, function)
}

// Price is a retained type: its publications are kept in a log.
type Price struct {
	SKU   int
	Cents int64
}

// followScene shows followers: two equally slow consumers of a retained
// type, one sent to and one following the log; then a follower that starts
// after retention trimmed what it wanted, and is told how much it missed.
func followScene() {
	const n, kept, slowBuf = 300, 512, 4
	var b topic.Broker
	b.Retain[Price](topic.Retention{Count: kept})
	sent, cancelSent := b.Subscribe(topic.Buffer[Price](slowBuf), topic.Name[Price]("sent to"))
	followed, cancelFollowed := b.Subscribe(topic.Follow[Price](), topic.Buffer[Price](slowBuf), topic.Name[Price]("follower"))
	var consumers sync.WaitGroup
	got := map[string]int{}
	var mu sync.Mutex
	for name, ch := range map[string]<-chan Price{"sent to": sent, "follower": followed} {
		consumers.Go(func() {
			k := 0
			for range ch {
				k++
				time.Sleep(20 * time.Microsecond) // slow, the same for both
			}
			mu.Lock()
			got[name] = k
			mu.Unlock()
		})
	}
	for i := range n {
		b.Publish(Price{SKU: i % 7, Cents: int64(100 + i)})
	}
	// The follower's channel waits for room: let it take the whole log (it
	// commits what its channel took) and its receiver empty it, before it is
	// cancelled.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st := statsOf(b.Subscriptions(), "follower"); st != nil && st.Follower.Committed == n && len(followed) == 0 {
			break
		}
	}
	snapshot := b.Subscriptions()
	cancelSent()
	cancelFollowed()
	consumers.Wait()

	scene("followScene", "followers: a retained type's log, read at each reader's own pace")
	fmt.Printf("%d prices published at once to two consumers, each as slow as the other, each with a channel of %d:\n", n, slowBuf)
	fmt.Println(`"sent to" is a plain subscription: the broker sends to it and never waits, so what does not fit its channel is dropped.`)
	fmt.Printf("\"follower\" follows the log instead (Follow): the log keeps the last %d, and its channel waits for room.\n", kept)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "consumer\treceived\tlost (counted by the broker)")
	for _, name := range []string{"sent to", "follower"} {
		fmt.Fprintf(w, "%s\t%d\t%d\n", name, got[name], statsOf(snapshot, name).Lost.Total())
	}
	w.Flush()
	fmt.Printf("The follower lost nothing: every value waited in the log until it read it. The plain subscription lost %d, counted as full.\n",
		statsOf(snapshot, "sent to").Lost.Total())

	// A late follower of a log that keeps only 100 values.
	var late topic.Broker
	late.Retain[Price](topic.Retention{Count: 100})
	f := late.Follow(topic.Replay[Price](topic.Earliest()), topic.Name[Price]("late"))
	defer f.Close()
	for i := range n {
		late.Publish(Price{SKU: i % 7, Cents: int64(100 + i)})
	}
	buf := make([]topic.Record[Price], 8)
	k := f.Read(buf)
	scene("followScene", "a follower that came too late: retention trimmed what it wanted, and it is told how much")
	fmt.Printf("a follower from the earliest that reads only after %d publications (100 kept): its first record is offset %d, Skipped %d\n",
		n, buf[0].Offset, buf[0].Skipped)
	read := k
	for k = f.Read(buf); k > 0; k = f.Read(buf) {
		read += k
	}
	st := statsOf(late.Subscriptions(), "late")
	fmt.Printf("it reads the %d kept, and its stats count %d skipped\n", read, st.Lost.Skipped)
}

// statsOf returns the stats of the subscription named name, or nil.
func statsOf(snapshot []topic.SubscriptionStats, name string) *topic.SubscriptionStats {
	for i := range snapshot {
		if snapshot[i].Name == name {
			return &snapshot[i]
		}
	}
	return nil
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
