package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topicdebug"
)

// The pace of the busy broker: modest, so that the page reads like a
// small service and the demo costs little while it serves.
const (
	orderEvery     = 100 * time.Millisecond // per order publisher, two of them
	paymentEvery   = 700 * time.Millisecond
	burstEvery     = time.Second // ten heartbeats back to back
	priceEvery     = 20 * time.Millisecond
	monitorWork    = 50 * time.Millisecond // the slow monitor, per heartbeat
	tickerWork     = 100 * time.Millisecond
	followerWork   = 25 * time.Millisecond // slower than prices come: its lag grows
	pricesKept     = 500
	dropOldestSize = 8
)

// busy keeps b busy until ctx ends, as a small service would: two order
// publishers, payments and bursts of heartbeats, prices on a retained
// type; a wildcard audit, a From transformation, a slow monitor that loses
// what it cannot keep up with, a drop-oldest ticker, a fraud check handler
// that retries and dead-letters, an emailer handler that fails now and
// then, and a follower of the prices slower than they come, whose lag
// grows until retention trims what it has not read. It registers all of
// them before it returns; once ctx ends, it stops the publishers, shuts b
// down and closes the channel it returns when every goroutine it started
// has ended.
func busy(ctx context.Context, b *topic.Broker) <-chan struct{} {
	b.Retain[Price](topic.Retention{Count: pricesKept})
	// Each channel has a receiver, which Shutdown ends by closing it.
	var receivers sync.WaitGroup
	audit, _ := b.Subscribe(topic.Buffer[Event](256), topic.Name[Event]("audit"))
	consume(ctx, &receivers, audit, 0)
	alerts, _ := b.Subscribe(topic.Buffer[error](16), topic.Name[error]("alerts"))
	consume(ctx, &receivers, alerts, 0)
	revenue, _ := b.Subscribe(topic.Buffer[Revenue](64), topic.Name[Revenue]("accounting"),
		topic.From(func(o OrderPlaced) (Revenue, bool) { return Revenue(o.Cents), true }))
	consume(ctx, &receivers, revenue, 0)
	monitor, _ := b.Subscribe(topic.Buffer[Heartbeat](4), topic.Name[Heartbeat]("slow monitor"))
	consume(ctx, &receivers, monitor, monitorWork)
	ticker, _ := b.Subscribe(topic.Buffer[Price](dropOldestSize), topic.Name[Price]("price ticker"),
		topic.Overflow[Price](topic.DropOldest))
	consume(ctx, &receivers, ticker, tickerWork)
	follower, _ := b.Subscribe(topic.Follow[Price](), topic.Buffer[Price](16), topic.Name[Price]("price follower"))
	consume(ctx, &receivers, follower, followerWork)
	dead, _ := b.Subscribe(topic.Buffer[topic.DeadLettered](64), topic.Name[topic.DeadLettered]("dead letters"))
	consume(ctx, &receivers, dead, 0)
	// A handler that follows the log: no queue of its own, the log is.
	b.Handle(func(context.Context, Price) error { return nil }, topic.Follow[Price](), topic.Name[Price]("price archive"))

	// The fraud check fails for good on every twentieth order, which ends
	// as a dead letter after three attempts, and once on others.
	var mu sync.Mutex
	tried := map[int]bool{}
	b.Handle(func(_ context.Context, o OrderPlaced) error {
		switch {
		case o.ID%20 == 0:
			return errors.New("flagged by the fraud model")
		case o.ID%20 == 7:
			mu.Lock()
			defer mu.Unlock()
			if !tried[o.ID] {
				tried[o.ID] = true
				return errors.New("fraud service timed out")
			}
		}
		return nil
	}, topic.Buffer[OrderPlaced](64), topic.Name[OrderPlaced]("fraud check"),
		topic.Retry[OrderPlaced](topic.RetryPolicy{Attempts: 3, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}))
	// The emailer is at most once: a failure is a loss, counted as Errored.
	b.Handle(func(_ context.Context, p PaymentFailed) error {
		if p.Order%3 == 0 {
			return errors.New("mail server refused the message")
		}
		return nil
	}, topic.Buffer[PaymentFailed](16), topic.Name[PaymentFailed]("emailer"))

	var publishers sync.WaitGroup
	every := func(d time.Duration, publish func(n int)) {
		publishers.Go(func() {
			t := time.NewTicker(d)
			defer t.Stop()
			for n := 1; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					publish(n)
				}
			}
		})
	}
	for p := range orderPublishers {
		every(orderEvery, func(n int) {
			id := 2*n - 1 + p
			b.Publish(OrderPlaced{ID: id, Cents: int64(500 + id%97*25)})
		})
	}
	reasons := []string{"card declined", "insufficient funds", "expired card"}
	every(paymentEvery, func(n int) { b.Publish(PaymentFailed{Order: n, Reason: reasons[n%len(reasons)]}) })
	every(burstEvery, func(n int) {
		for i := range heartbeatBurst {
			b.Publish(Heartbeat{Service: "checkout", N: n*heartbeatBurst + i})
		}
	})
	every(priceEvery, func(n int) { b.Publish(Price{SKU: n % 7, Cents: int64(100 + n%50)}) })

	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		publishers.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.Shutdown(sctx) // closes every channel: the receivers end
		receivers.Wait()
	}()
	return done
}

// consume receives from ch until it is closed, in a goroutine of wg,
// taking work over each value until ctx ends, then none: it drains the
// channel at once.
func consume[T any](ctx context.Context, wg *sync.WaitGroup, ch <-chan T, work time.Duration) {
	wg.Go(func() {
		for range ch {
			if ctx.Err() == nil {
				time.Sleep(work)
			}
		}
	})
}

// debugMux serves b's debug page at /debug/topic/ and redirects / to it.
func debugMux(b *topic.Broker) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/debug/topic/", topicdebug.Handler(b))
	mux.Handle("GET /{$}", http.RedirectHandler("/debug/topic/", http.StatusFound))
	return mux
}

// serve keeps a broker busy and serves its debug page on addr until ctx
// ends, printing the page's URL to out; then it shuts the broker down,
// prints what it lost, and stops serving.
func serve(ctx context.Context, addr string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var b topic.Broker
	srv := &http.Server{Handler: debugMux(&b), ReadHeaderTimeout: 10 * time.Second}
	done := busy(ctx, &b)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(out, "\n== a busy broker's debug page (serve, cmd/topic-demo)\n")
	fmt.Fprintf(out, "http://%s/debug/topic/ (interrupt to stop): watch the slow monitor's full count and the price ticker's evictions rise, the fraud check retry and dead-letter, and the price follower's offset advance with no loss\n", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-served: // the listener failed
		return err
	}
	<-done
	s := topicdebug.Take(&b)
	fmt.Fprintf(out, "shut down: %d subscriptions lost %d values (full %d, evicted %d, errored %d, skipped %d)\n",
		len(s.Subscriptions), s.Lost.Total(), s.Lost.Full, s.Lost.Evicted, s.Lost.Errored, s.Lost.Skipped)
	// A second for the requests in flight; then Close ends the connections
	// left, such as those a browser opens ahead and never uses, for which
	// Shutdown would wait five seconds.
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return srv.Close()
}
