package topic_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seedaa7df82c/topic"
)

func ExampleBroker_Handle() {
	type Order struct{ ID, Total int }
	var b topic.Broker

	// The function runs on a goroutine of the handler's own, one value at
	// a time, in the order the values were published.
	stop := b.Handle(func(ctx context.Context, o Order) error {
		fmt.Printf("order %d: %d\n", o.ID, o.Total)
		return nil
	})

	b.Publish(Order{ID: 1, Total: 30})
	b.Publish(Order{ID: 2, Total: 45})
	b.Publish(Order{ID: 3, Total: 12})

	// Stop handles what was published, then returns.
	stop()
	// Output:
	// order 1: 30
	// order 2: 45
	// order 3: 12
}

func ExampleRetry() {
	type Order struct{ ID, Total int }
	var b topic.Broker

	// The payment service fails twice before it accepts order 2. At least
	// once, the value is retried after a back-off of 1ms, then 2ms, and the
	// next order waits: order is kept.
	failures := map[int]int{2: 2}
	stop := b.Handle(func(ctx context.Context, o Order) error {
		if failures[o.ID] > 0 {
			failures[o.ID]--
			fmt.Printf("order %d: payment service unavailable\n", o.ID)
			return errors.New("unavailable")
		}
		fmt.Printf("order %d: paid\n", o.ID)
		return nil
	}, topic.Retry[Order](topic.RetryPolicy{
		Attempts: 5,
		Base:     time.Millisecond,
		Max:      100 * time.Millisecond,
		Jitter:   0.2,
	}))

	for id := 1; id <= 3; id++ {
		b.Publish(Order{ID: id})
	}
	stop()
	// Output:
	// order 1: paid
	// order 2: payment service unavailable
	// order 2: payment service unavailable
	// order 2: paid
	// order 3: paid
}

func ExampleDeadLetter() {
	type Order struct{ ID, Total int }
	var b topic.Broker

	// Every dead letter of an order, kept while it waits for its reader: the
	// type is retained and followed.
	b.Retain[topic.DeadLetter[Order]](topic.Retention{Count: 10_000})
	orders, cancelOrders := b.Subscribe(topic.Follow[topic.DeadLetter[Order]]())
	defer cancelOrders()
	// Every dead letter, whatever its type, while its buffer has room.
	all, cancelAll := b.Subscribe(topic.Buffer[topic.DeadLettered](8))
	defer cancelAll()

	errRejected := errors.New("rejected by the bank")
	stop := b.Handle(func(ctx context.Context, o Order) error {
		if o.Total > 100 {
			return errRejected
		}
		return nil
	}, topic.Retry[Order](topic.RetryPolicy{Attempts: 3}), topic.Name[Order]("payments"))

	b.Publish(Order{ID: 1, Total: 30})
	b.Publish(Order{ID: 2, Total: 500})
	stop()

	d := <-orders
	fmt.Printf("order %d failed %d times in %q: %v\n", d.Value.ID, d.Attempts, d.Handler, d.Err)
	l := (<-all).Letter()
	fmt.Printf("dead letter of %T: %v\n", l.Value, errors.Is(l.Err, errRejected))
	// Output:
	// order 2 failed 3 times in "payments": rejected by the bank
	// dead letter of topic_test.Order: true
}

func ExampleBroker_Shutdown() {
	type Order struct{ ID, Total int }
	var b topic.Broker

	stop := b.Handle(func(ctx context.Context, o Order) error {
		fmt.Printf("order %d shipped\n", o.ID)
		return nil
	}, topic.Name[Order]("shipping"))
	defer stop() // does nothing once the broker is shut down
	audit, _ := b.Subscribe(topic.Buffer[Order](8), topic.Name[Order]("audit"))

	b.Publish(Order{ID: 1})
	b.Publish(Order{ID: 2})

	// On the program's way out: let the handlers finish what they have,
	// for at most ten seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := b.Shutdown(ctx)
	fmt.Println("shutdown:", err)

	// The channel subscriptions are cancelled: a range over one ends, after
	// the values it had accepted.
	for o := range audit {
		fmt.Printf("audited order %d\n", o.ID)
	}

	// The broker is closed: nothing more is delivered or handled, and what
	// would have been is counted.
	b.Publish(Order{ID: 3})
	late, _ := b.Subscribe[Order]()
	_, open := <-late
	fmt.Println("subscription after shutdown open:", open)
	for _, st := range b.Subscriptions() { // the final counts
		fmt.Printf("%s: lost after shutdown: %d\n", st.Name, st.Lost.Closed)
	}
	// Output:
	// order 1 shipped
	// order 2 shipped
	// shutdown: <nil>
	// audited order 1
	// audited order 2
	// subscription after shutdown open: false
	// audit: lost after shutdown: 1
	// shipping: lost after shutdown: 1
}

// A pipeline of handlers drains end to end: what the first stage publishes
// while Shutdown drains still reaches the second, and what the second
// publishes still reaches the subscription.
func ExampleBroker_Shutdown_pipeline() {
	type (
		Order   struct{ ID int }
		Charged struct{ ID int }
	)
	var b topic.Broker
	b.Handle(func(ctx context.Context, c Charged) error {
		fmt.Printf("order %d charged\n", c.ID)
		return nil
	})
	b.Handle(func(ctx context.Context, o Order) error {
		time.Sleep(time.Millisecond) // slower than the second stage
		b.Publish(Charged(o))
		return nil
	})
	for id := 1; id <= 3; id++ {
		b.Publish(Order{ID: id})
	}
	fmt.Println("shutdown:", b.Shutdown(context.Background()))
	// Output:
	// order 1 charged
	// order 2 charged
	// order 3 charged
	// shutdown: <nil>
}

func ExamplePermanent() {
	type Order struct{ ID, Total int }
	var b topic.Broker
	dead, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[Order]](8))

	errDeclined := errors.New("card declined")
	b.Handle(func(ctx context.Context, o Order) error {
		if o.Total > 100 {
			// Retrying will not help: dead-letter it at once.
			return topic.Permanent(fmt.Errorf("order %d: %w", o.ID, errDeclined))
		}
		return nil
	}, topic.Name[Order]("payments"), topic.Retry[Order](topic.RetryPolicy{Attempts: 5, Base: time.Second}))

	b.Publish(Order{ID: 1, Total: 500})
	_ = b.Shutdown(context.Background())

	d := <-dead
	fmt.Printf("after %d attempt: %v (declined: %v)\n", d.Attempts, d.Err, errors.Is(d.Err, errDeclined))
	for _, st := range b.Subscriptions() {
		if st.Name == "payments" {
			fmt.Printf("retried %d, dead-lettered %d\n", st.Handler.Retried, st.Handler.DeadLettered)
		}
	}
	// Output:
	// after 1 attempt: order 1: card declined (declined: true)
	// retried 0, dead-lettered 1
}

// A handler that takes its dead letters back to try once more never
// dead-letters them again: a value that keeps failing ends as Errored
// rather than going round for ever.
func ExampleDeadLetter_redrive() {
	type Job struct{ ID int }
	var b topic.Broker
	dead, _ := b.Subscribe(topic.Buffer[topic.DeadLettered](8))

	b.Handle(func(ctx context.Context, j Job) error {
		return errors.New("still failing")
	}, topic.Name[Job]("jobs"),
		topic.Retry[Job](topic.RetryPolicy{Attempts: 2}),
		topic.From(func(d topic.DeadLetter[Job]) (Job, bool) { return d.Value, true }))

	b.Publish(Job{ID: 7})
	_ = b.Shutdown(context.Background())

	fmt.Println("dead letters:", len(dead))
	for _, st := range b.Subscriptions() {
		if st.Name == "jobs" {
			fmt.Printf("accepted %d, dead-lettered %d, errored %d\n", st.Handler.Accepted, st.Handler.DeadLettered, st.Lost.Errored)
		}
	}
	// Output:
	// dead letters: 1
	// accepted 2, dead-lettered 1, errored 1
}

// Done tells a component built on the broker that Shutdown has begun, so
// that it stops taking input from outside.
func ExampleBroker_Done() {
	var b topic.Broker
	stopped := make(chan struct{})
	go func() {
		<-b.Done() // e.g. stop reading from a socket, refuse new work
		close(stopped)
	}()
	_ = b.Shutdown(context.Background())
	<-stopped
	fmt.Println("the input stopped at shutdown")
	// Output:
	// the input stopped at shutdown
}

// Attempt gives a handler's function the attempt it makes, so that it can
// keep one idempotency key for every attempt of a value.
func ExampleAttempt() {
	var b topic.Broker
	var key int
	keys := 0
	b.Handle(func(ctx context.Context, v string) error {
		if topic.Attempt(ctx) == 1 {
			keys++
			key = keys // a new value: a new key
		}
		fmt.Printf("%s: attempt %d, key %d\n", v, topic.Attempt(ctx), key)
		if topic.Attempt(ctx) < 3 && v == "flaky" {
			return errors.New("try again")
		}
		return nil
	}, topic.Retry[string](topic.RetryPolicy{Attempts: 3}))
	b.Publish("flaky")
	b.Publish("fine")
	_ = b.Shutdown(context.Background())
	// Output:
	// flaky: attempt 1, key 1
	// flaky: attempt 2, key 1
	// flaky: attempt 3, key 1
	// fine: attempt 1, key 2
}

// Delay is the back-off a handler waits before each retry.
func ExampleRetryPolicy_Delay() {
	p := topic.RetryPolicy{Attempts: 5, Base: 100 * time.Millisecond, Max: time.Second}
	for n := 1; n < p.Attempts; n++ {
		fmt.Println(p.Delay(n))
	}
	// Output:
	// 100ms
	// 200ms
	// 400ms
	// 800ms
}

// AttemptTimeout bounds each call: a call that outlives it sees its
// context end, and its error counts as a failed attempt.
func ExampleAttemptTimeout() {
	var b topic.Broker
	b.Handle(func(ctx context.Context, url string) error {
		select {
		case <-time.After(time.Hour): // a server that never answers
			return nil
		case <-ctx.Done():
			fmt.Printf("%s: attempt %d: %v\n", url, topic.Attempt(ctx), ctx.Err())
			return ctx.Err()
		}
	}, topic.AttemptTimeout[string](10*time.Millisecond), topic.Retry[string](topic.RetryPolicy{Attempts: 2}))
	b.Publish("https://slow.example")
	_ = b.Shutdown(context.Background())
	// Output:
	// https://slow.example: attempt 1: context deadline exceeded
	// https://slow.example: attempt 2: context deadline exceeded
}

// DiscardOnStop makes a handler's stop drop what it has queued, counted as
// Discarded, instead of handling it first, and cancel the call in flight.
func ExampleDiscardOnStop() {
	var b topic.Broker
	started := make(chan struct{})
	stop := b.Handle(func(ctx context.Context, n int) error {
		close(started)
		<-ctx.Done() // a long job, cut short by the stop
		return ctx.Err()
	}, topic.DiscardOnStop[int](), topic.OnLoss(func(l topic.Loss[int]) {
		fmt.Printf("job %d %v\n", l.Value, l.Cause)
	}))
	for n := 1; n <= 3; n++ {
		b.Publish(n)
	}
	<-started
	stop()
	// Output:
	// job 1 discarded
	// job 2 discarded
	// job 3 discarded
}

// A panic in a handler's function is recovered as a *PanicError: the
// value is lost as Errored (or retried, with Retry), with the panic's value
// and stack.
func ExamplePanicError() {
	var b topic.Broker
	b.Handle(func(context.Context, string) error {
		panic("nil map")
	}, topic.OnLoss(func(l topic.Loss[string]) {
		var p *topic.PanicError
		if errors.As(l.Err, &p) {
			fmt.Printf("%q lost (%v): panicked with %v, stack of %t\n", l.Value, l.Cause, p.Value, len(p.Stack) > 0)
		}
	}))
	b.Publish("order 7")
	_ = b.Shutdown(context.Background())
	// Output:
	// "order 7" lost (errored): panicked with nil map, stack of true
}

// DeadLettered is implemented by every DeadLetter type: one subscription
// sees the dead letters of every handler.
func ExampleDeadLettered() {
	var b topic.Broker
	dead, cancel := b.Subscribe(topic.Buffer[topic.DeadLettered](2))
	defer cancel()
	fail := func(context.Context, string) error { return errors.New("no") }
	b.Handle(fail, topic.Retry[string](topic.RetryPolicy{Attempts: 1}), topic.Name[string]("mailer"))
	b.Handle(func(context.Context, int) error { return errors.New("declined") }, topic.Retry[int](topic.RetryPolicy{Attempts: 1}), topic.Name[int]("billing"))
	b.Publish("hello")
	b.Publish(42)
	_ = b.Shutdown(context.Background())
	var lines []string // the two handlers run concurrently: sorted
	for d := range dead {
		l := d.Letter()
		lines = append(lines, fmt.Sprintf("%s gave up on %v: %v", l.Handler, l.Value, l.Err))
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// billing gave up on 42: declined
	// mailer gave up on hello: no
}

// Settle waits until the handlers have handled everything published before
// it, through a pipeline of handlers, without closing anything.
func ExampleBroker_Settle() {
	type (
		Order   struct{ ID int }
		Invoice struct{ Order int }
	)
	var b topic.Broker
	defer b.Shutdown(context.Background())
	var invoices atomic.Int32
	b.Handle(func(ctx context.Context, o Order) error {
		time.Sleep(time.Millisecond) // slow work
		b.Publish(Invoice{o.ID})
		return nil
	})
	b.Handle(func(ctx context.Context, inv Invoice) error {
		invoices.Add(1)
		return nil
	})
	for i := range 10 {
		b.Publish(Order{i})
	}
	if err := b.Settle(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("invoices:", invoices.Load())
	// Output:
	// invoices: 10
}

// Letter gives a typed dead letter the form every dead letter shares, for
// code that treats them all alike.
func ExampleDeadLetter_Letter() {
	type Order struct{ ID int }
	var b topic.Broker
	defer b.Shutdown(context.Background())
	dead, cancel := b.Subscribe(topic.Buffer[topic.DeadLetter[Order]](1))
	defer cancel()
	b.Handle(func(context.Context, Order) error { return errors.New("declined") },
		topic.Name[Order]("payments"), topic.Retry[Order](topic.RetryPolicy{Attempts: 2}))

	b.Publish(Order{ID: 7})
	_ = b.Settle(context.Background())

	report := func(l topic.Letter) {
		fmt.Printf("%s gave up on %+v after %d attempts: %v\n", l.Handler, l.Value, l.Attempts, l.Err)
	}
	report((<-dead).Letter())
	// Output:
	// payments gave up on {ID:7} after 2 attempts: declined
}

// A Letter holds its value as an interface: a type switch gets the value
// back.
func ExampleLetter() {
	type (
		Order  struct{ ID int }
		Refund struct{ Order int }
	)
	var b topic.Broker
	defer b.Shutdown(context.Background())
	dead, cancel := b.Subscribe(topic.Buffer[topic.DeadLettered](2))
	defer cancel()
	once := topic.RetryPolicy{Attempts: 1}
	b.Handle(func(context.Context, Order) error { return errors.New("declined") }, topic.Retry[Order](once))
	b.Handle(func(context.Context, Refund) error { return errors.New("account closed") }, topic.Retry[Refund](once))

	b.Publish(Order{ID: 7})
	_ = b.Settle(context.Background())
	b.Publish(Refund{Order: 3})
	_ = b.Settle(context.Background())

	for range 2 {
		switch l := (<-dead).Letter(); v := l.Value.(type) {
		case Order:
			fmt.Println("order", v.ID, "failed:", l.Err)
		case Refund:
			fmt.Println("refund of order", v.Order, "failed:", l.Err)
		}
	}
	// Output:
	// order 7 failed: declined
	// refund of order 3 failed: account closed
}

// A handler's stats count the values it took from its queue, handled,
// retried and dead-lettered.
func ExampleHandlerStats() {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	flaky := true
	b.Handle(func(ctx context.Context, n int) error {
		switch {
		case n == 2 && flaky:
			flaky = false
			return errors.New("timeout") // retried once
		case n == 3:
			return topic.Permanent(errors.New("malformed")) // dead-lettered
		}
		return nil
	}, topic.Retry[int](topic.RetryPolicy{Attempts: 3}))

	for n := 1; n <= 4; n++ {
		b.Publish(n)
	}
	_ = b.Settle(context.Background())
	fmt.Printf("%+v\n", *b.Subscriptions()[0].Handler)
	// Output:
	// {Accepted:4 Handled:3 Retried:1 DeadLettered:1 AtLeastOnce:true}
}

// Code around a handler's function, middleware for instance, tells a
// permanent error from one worth retrying with errors.As.
func ExamplePermanentError() {
	errDeclined := errors.New("card declined")
	for _, err := range []error{
		errors.New("timeout"),
		fmt.Errorf("order 7: %w", topic.Permanent(errDeclined)),
	} {
		var p *topic.PermanentError
		if errors.As(err, &p) {
			fmt.Printf("%v: permanent, because %v\n", err, p.Err)
		} else {
			fmt.Printf("%v: worth retrying\n", err)
		}
	}
	// Output:
	// timeout: worth retrying
	// order 7: card declined: permanent, because card declined
}

// A function that panics with an error: errors.Is and errors.As reach that
// error through the PanicError.
func ExamplePanicError_Unwrap() {
	var b topic.Broker
	b.Handle(func(context.Context, []byte) error {
		panic(io.ErrUnexpectedEOF) // a decoder's panic on a truncated input
	}, topic.OnLoss(func(l topic.Loss[[]byte]) {
		fmt.Println("truncated input:", errors.Is(l.Err, io.ErrUnexpectedEOF))
	}))
	b.Publish([]byte{0x7b})
	_ = b.Shutdown(context.Background())
	// Output:
	// truncated input: true
}

// Each retry waits twice as long as the one before, at most Max, less up
// to Jitter of that delay at random.
func ExampleRetryPolicy() {
	p := topic.RetryPolicy{Attempts: 4, Base: 10 * time.Millisecond, Max: 30 * time.Millisecond, Jitter: 0.1}
	for n := 1; n < p.Attempts; n++ {
		full := min(p.Base<<(n-1), p.Max)
		d := p.Delay(n)
		fmt.Printf("retry %d: between %v and %v: %t\n", n, full-full/10, full, d >= full-full/10 && d <= full)
	}
	// Output:
	// retry 1: between 9ms and 10ms: true
	// retry 2: between 18ms and 20ms: true
	// retry 3: between 27ms and 30ms: true
}

// TimeCalls reports each call of a handler's function: a histogram of
// processing times records these.
func ExampleBroker_TimeCalls() {
	var b topic.Broker
	var mu sync.Mutex
	slow := 0
	stop := b.TimeCalls(func(c topic.Call) {
		mu.Lock()
		defer mu.Unlock()
		if c.Duration >= 10*time.Millisecond {
			slow++
		}
	})
	defer stop()
	b.Handle(func(_ context.Context, d time.Duration) error {
		time.Sleep(d)
		return nil
	})
	b.Publish(20 * time.Millisecond)
	b.Publish(time.Duration(0))
	_ = b.Shutdown(context.Background()) // every value handled
	mu.Lock()
	fmt.Println("slow calls:", slow)
	mu.Unlock()
	// Output:
	// slow calls: 1
}

// A Call says which handler ran, which attempt, how long, and with what
// result.
func ExampleCall() {
	var b topic.Broker
	calls := make(chan topic.Call, 2)
	stop := b.TimeCalls(func(c topic.Call) { calls <- c })
	defer stop()
	b.Handle(func(context.Context, string) error { return errors.New("refused") },
		topic.Name[string]("mailer"), topic.Retry[string](topic.RetryPolicy{Attempts: 2}))
	b.Publish("hello")
	for range 2 {
		c := <-calls
		fmt.Println(c.Type, c.Name, "attempt", c.Attempt, c.Err)
	}
	_ = b.Shutdown(context.Background())
	// Output:
	// string mailer attempt 1 refused
	// string mailer attempt 2 refused
}
