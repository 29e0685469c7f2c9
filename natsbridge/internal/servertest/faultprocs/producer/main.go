// Command producer is the producing process of the fault tests
// (faults_test.go): a topic.Broker whose values of type Value go to a
// JetStream stream through a synchronous natsbridge stream export.
//
// It publishes Value{ID: 0} to Value{ID: n-1} on its broker, at most
// -window ahead of what the stream has acknowledged (the export's queue
// holds twice that, so the broker never drops one), waits until the
// export's Stats().Sent is n, and exits 0 after printing one line of
// figures on standard output:
//
//	done sent=100000 duplicates=0 publish_errors=0 retried=0 took=9.1s
//
// It exits 1, with "fatal: ..." on standard error, if a value was lost on
// the way (the export's handler subscription lost or dead-lettered one) or
// if -timeout passes first. With -stdin it also exits once standard input
// ends (the test that started it died).
//
//	producer -url nats://127.0.0.1:4222 -subject fault.values -n 100000
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/natsbridge"
)

// Value is what the fault tests carry; the consumer has the same.
type Value struct{ ID int }

func main() {
	var (
		url     = flag.String("url", nats.DefaultURL, "the NATS server's URL (comma-separated for several)")
		subject = flag.String("subject", "fault.values", "the subject of the stream export")
		n       = flag.Int("n", 100_000, "how many values to publish: IDs 0 to n-1")
		window  = flag.Int("window", 512, "how many values may be published ahead of the stream's acknowledgements")
		timeout = flag.Duration("timeout", 2*time.Minute, "how long it may take")
		stdin   = flag.Bool("stdin", false, "exit when standard input ends")
	)
	flag.Parse()
	if *n < 1 || *window < 1 {
		fail("-n and -window must be positive")
	}
	if *stdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			fail("standard input ended")
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	nc, err := nats.Connect(*url, append(natsbridge.ConnectOptions(),
		nats.ReconnectWait(20*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	)...)
	if err != nil {
		fail(err.Error())
	}
	var errs atomic.Int64
	b := new(topic.Broker)
	br := natsbridge.New(b, nc, natsbridge.Config{OnError: func(e *natsbridge.Error) {
		if errs.Add(1) <= 10 { // the first few, for the test's failure message
			fmt.Fprintln(os.Stderr, "error:", e)
		}
	}})
	exp, err := br.ExportStream[Value](ctx, *subject, natsbridge.Stream{},
		natsbridge.HandlerOptions(topic.Buffer[Value](2**window)))
	if err != nil {
		fail(err.Error())
	}
	name := "natsbridge " + exp.Kind() + " " + exp.Subject()

	start := time.Now()
	sent := func() int { return int(exp.Stats().Sent) }
	wait := func(cond func() bool, what string) {
		for !cond() {
			if ctx.Err() != nil {
				fail(fmt.Sprintf("%s: %v; export %+v; handler %+v", what, ctx.Err(), exp.Stats(), handlerOf(b, name)))
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	for i := range *n {
		if i-sent() >= *window {
			wait(func() bool { return i-sent() < *window }, fmt.Sprintf("room to publish value %d", i))
		}
		b.Publish(Value{ID: i})
	}
	wait(func() bool { return sent() >= *n }, fmt.Sprintf("the stream's acknowledgement of %d values", *n))
	took := time.Since(start)

	st, h := exp.Stats(), handlerOf(b, name)
	if h.Lost.Total() != 0 || h.Handler == nil || h.Handler.DeadLettered != 0 || st.Sent != uint64(*n) {
		fail(fmt.Sprintf("values lost on the way: export %+v; handler %+v", st, h))
	}
	fmt.Printf("done sent=%d duplicates=%d publish_errors=%d retried=%d took=%v\n",
		st.Sent, st.Duplicates, st.PublishErrors, h.Handler.Retried, took.Round(time.Millisecond))
	br.Close()
	_ = nc.Drain()
}

// handlerOf returns the broker's statistics of the subscription named name.
func handlerOf(b *topic.Broker, name string) topic.SubscriptionStats {
	for _, s := range b.Subscriptions() {
		if s.Name == name {
			return s
		}
	}
	return topic.SubscriptionStats{}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "fatal:", strings.TrimSpace(msg))
	os.Exit(1)
}
