package topictest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topictest"
)

// In the examples, test stands for a test function: it runs f as a test
// would, and prints what f reported. A real test passes its own t.
func test(f func(t testing.TB)) {
	for _, msg := range new(fakeTB).run(f) {
		fmt.Println(msg)
	}
}

// Record what a program publishes, then check it.
func ExampleRecord() {
	type Shipped struct{ Order int }
	test(func(t testing.TB) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		shipped := topictest.Record[Shipped](t, &b)

		b.Publish(Shipped{1}) // the program under test
		b.Publish(Shipped{2})

		topictest.Settle(t, &b, time.Second)
		fmt.Println(shipped.Len(), shipped.Values())
	})
	// Output:
	// 2 [{1} {2}]
}

// Wait for values published by another goroutine; a timeout fails the test
// with what was recorded.
func ExampleRecorder_Wait() {
	type Tick struct{ N int }
	test(func(t testing.TB) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		ticks := topictest.Record[Tick](t, &b)
		go func() {
			for n := range 3 {
				b.Publish(Tick{n})
			}
		}()
		fmt.Println(ticks.Wait(3, time.Second))
		ticks.Wait(4, 10*time.Millisecond) // fails the test: only 3 come
	})
	// Output:
	// [{0} {1} {2}]
	// topictest: waited 10ms for 4 values of topictest_test.Tick, 3 recorded: [{0} {1} {2}]
}

// Settle waits for handlers that publish to each other, then a test checks
// their outcome.
func ExampleSettle() {
	type (
		Order   struct{ ID int }
		Invoice struct{ Order int }
	)
	test(func(t testing.TB) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		b.Handle(func(_ context.Context, o Order) error {
			time.Sleep(time.Millisecond)
			b.Publish(Invoice{o.ID})
			return nil
		})
		invoices := topictest.Record[Invoice](t, &b)
		for i := range 3 {
			b.Publish(Order{i})
		}
		topictest.Settle(t, &b, time.Second)
		fmt.Println(invoices.Values())
	})
	// Output:
	// [{0} {1} {2}]
}

// NoLoss fails a test at its end if a subscription lost a value, naming it
// and the cause; a Loss states what a subscription is expected to lose.
func ExampleNoLoss() {
	type Event struct{ N int }
	test(func(t testing.TB) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		topictest.NoLoss(t, &b, topictest.Loss{Sub: "audit", Lost: topic.Lost{Errored: 1}})
		b.Subscribe(topic.Buffer[Event](1), topic.Name[Event]("slow"))
		b.Handle(func(_ context.Context, e Event) error {
			if e.N == 2 {
				return errors.New("audit down")
			}
			return nil
		}, topic.Name[Event]("audit"))
		for n := range 3 {
			b.Publish(Event{n})
		}
	})
	// Output:
	// topictest: subscription "slow" (topictest_test.Event) lost 2 values: full 2
}
