package topictest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// A Recorder of an interface type records every value published that
// implements it, in the order the broker delivers them.
//
//topicvet:ignore unreceived -- the string is published to show that a Recorder of error does not receive it
func ExampleRecorder() {
	test(func(t testing.TB) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		errs := topictest.Record[error](t, &b)

		b.Publish(errors.New("disk full"))
		b.Publish("not an error")
		b.Publish(fmt.Errorf("retry %d failed", 3))

		topictest.Settle(t, &b, time.Second)
		fmt.Println(errs.Values())
	})
	// Output:
	// [disk full retry 3 failed]
}

// Len counts what was recorded: here a test checks that an unpaid order is
// not shipped, and fails.
func ExampleRecorder_Len() {
	type Order struct {
		ID   int
		Paid bool
	}
	type Shipped struct{ Order int }
	test(func(t testing.TB) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		shipped := topictest.Record[Shipped](t, &b)
		ship := func(o Order) { b.Publish(Shipped{o.ID}) } // the code under test forgets to check Paid

		ship(Order{ID: 1, Paid: true})
		ship(Order{ID: 2})

		topictest.Settle(t, &b, time.Second)
		if n := shipped.Len(); n != 1 {
			t.Errorf("shipped %d orders, want 1", n)
		}
	})
	// Output:
	// shipped 2 orders, want 1
}

// Values returns a copy: a test may sort or change it without touching the
// record.
func ExampleRecorder_Values() {
	test(func(t testing.TB) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		scores := topictest.Record[int](t, &b)
		for _, n := range []int{3, 1, 2} {
			b.Publish(n)
		}
		topictest.Settle(t, &b, time.Second)

		sorted := scores.Values()
		slices.Sort(sorted)
		fmt.Println(sorted, scores.Values())
	})
	// Output:
	// [1 2 3] [3 1 2]
}

// A Loss names a subscription by its name, or by its type if it has none,
// and what it must lose: exactly that, or NoLoss fails the test.
func ExampleLoss() {
	type Price struct{ Cents int }
	test(func(t testing.TB) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		topictest.NoLoss(t, &b,
			topictest.Loss{Sub: "latest", Lost: topic.Lost{Evicted: 2}},
			topictest.Loss{Sub: "topictest_test.Price", Lost: topic.Lost{Full: 1}},
		)
		b.Subscribe(topic.Buffer[Price](1), topic.Name[Price]("latest"), topic.Overflow[Price](topic.DropOldest))
		b.Subscribe(topic.Buffer[Price](1))
		for c := range 3 {
			b.Publish(Price{c})
		}
	})
	// Output:
	// topictest: subscription of topictest_test.Price lost full 2; want full 1
}
