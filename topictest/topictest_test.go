package topictest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/topictest"
)

type (
	order    struct{ ID int }
	invoice  struct{ Order int }
	named    string
	stringer struct{ s string }
)

func (s stringer) String() string { return s.s }

// A Recorder receives what is published after it is made, in order, and
// Wait returns once n values are in, whichever goroutine published them.
func TestRecordAndWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		b.Publish(order{0}) // before the recorder: not recorded
		rec := topictest.Record[order](t, &b)
		go func() {
			for i := 1; i <= 3; i++ {
				time.Sleep(time.Second)
				b.Publish(order{i})
			}
		}()
		if got := rec.Wait(3, time.Minute); !slices.Equal(got, []order{{1}, {2}, {3}}) {
			t.Errorf("Wait(3) = %v", got)
		}
		if rec.Len() != 3 || len(rec.Values()) != 3 {
			t.Errorf("Len %d, Values %v", rec.Len(), rec.Values())
		}
		if got := rec.Wait(0, 0); len(got) != 0 {
			t.Errorf("Wait(0) = %v", got)
		}
	})
}

// A Recorder of an interface type records every value that implements it.
func TestRecordAnInterfaceType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		rec := topictest.Record[fmt.Stringer](t, &b)
		b.Publish(stringer{"a"})
		b.Publish(order{1}) // not a Stringer
		b.Publish(stringer{"b"})
		topictest.Settle(t, &b, time.Second)
		var got []string
		for _, s := range rec.Values() {
			got = append(got, s.String())
		}
		if !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("recorded %v, want [a b]", got)
		}
	})
}

// Wait that times out fails the test at once, saying what it waited for and
// what it got; a negative n fails too.
func TestWaitFailsWithWhatItGot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		var after bool
		errs := new(fakeTB).run(func(tb testing.TB) {
			rec := topictest.Record[order](tb, &b)
			b.Publish(order{7})
			rec.Wait(2, time.Second)
			after = true
		})
		want := "topictest: waited 1s for 2 values of topictest_test.order, 1 recorded: [{7}]"
		if len(errs) != 1 || errs[0] != want || after {
			t.Errorf("reported %q (went on: %v), want %q and a stop", errs, after, want)
		}
		errs = new(fakeTB).run(func(tb testing.TB) { topictest.Record[order](tb, &b).Wait(-1, time.Second) })
		if len(errs) != 1 || !strings.Contains(errs[0], "must not be negative") {
			t.Errorf("Wait(-1) reported %q", errs)
		}
	})
}

// Settle waits for a pipeline of handlers; when a handler does not finish
// within the timeout, it fails the test naming the handler.
func TestSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		release := make(chan struct{})
		b.Handle(func(_ context.Context, o order) error {
			if o.ID < 0 {
				<-release
			}
			time.Sleep(time.Second)
			b.Publish(invoice{o.ID})
			return nil
		}, topic.Name[order]("billing"))
		rec := topictest.Record[invoice](t, &b)
		for i := range 5 {
			b.Publish(order{i})
		}
		topictest.Settle(t, &b, time.Minute)
		if rec.Len() != 5 {
			t.Errorf("after Settle, %d invoices recorded, want 5", rec.Len())
		}
		b.Publish(order{-1})
		b.Publish(order{1})
		errs := new(fakeTB).run(func(tb testing.TB) { topictest.Settle(tb, &b, time.Second) })
		want := `topictest: the broker's handlers did not settle within 1s: handler "billing" (topictest_test.order) with 1 queued`
		if len(errs) != 1 || errs[0] != want {
			t.Errorf("reported %q, want %q", errs, want)
		}
		close(release)
		topictest.Settle(t, &b, time.Minute)
	})
}

// NoLoss passes when nothing was lost, reports each subscription that lost
// values, by name or type and by cause, and checks expected losses exactly.
func TestNoLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		check := func(expected []topictest.Loss, setup func(b *topic.Broker)) []string {
			var b topic.Broker
			defer b.Shutdown(context.Background())
			return new(fakeTB).run(func(tb testing.TB) {
				topictest.NoLoss(tb, &b, expected...)
				setup(&b)
			})
		}
		lossy := func(b *topic.Broker) {
			b.Subscribe(topic.Buffer[order](1), topic.Name[order]("orders"))
			b.Subscribe(topic.Buffer[named](0))
			b.Handle(func(context.Context, invoice) error { return errors.New("no") })
			for i := range 3 {
				b.Publish(order{i})
			}
			b.Publish(named("x"))
			b.Publish(invoice{1})
		}
		if errs := check(nil, func(b *topic.Broker) {
			ch, _ := b.Subscribe[order]()
			b.Publish(order{1})
			<-ch
		}); len(errs) != 0 {
			t.Errorf("nothing lost, reported %q", errs)
		}
		want := []string{
			"topictest: handler of topictest_test.invoice lost 1 value: errored 1",
			"topictest: subscription of topictest_test.named lost 1 value: full 1",
			"topictest: subscription \"orders\" (topictest_test.order) lost 2 values: full 2",
		}
		if errs := check(nil, lossy); !slices.Equal(errs, want) {
			t.Errorf("reported\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
		}
		exact := []topictest.Loss{
			{Sub: "orders", Lost: topic.Lost{Full: 2}},
			{Sub: "topictest_test.named", Lost: topic.Lost{Full: 1}},
			{Sub: "topictest_test.invoice", Lost: topic.Lost{Errored: 1}},
		}
		if errs := check(exact, lossy); len(errs) != 0 {
			t.Errorf("losses as expected, reported %q", errs)
		}
		wrong := []topictest.Loss{
			{Sub: "orders", Lost: topic.Lost{Full: 1}},
			{Sub: "topictest_test.named", Lost: topic.Lost{Full: 1}},
			{Sub: "topictest_test.invoice", Lost: topic.Lost{Errored: 1}},
			{Sub: "missing", Lost: topic.Lost{Closed: 1}},
		}
		want = []string{
			"topictest: subscription \"orders\" (topictest_test.order) lost full 2; want full 1",
			"topictest: no subscription \"missing\", expected to lose closed 1",
		}
		if errs := check(wrong, lossy); !slices.Equal(errs, want) {
			t.Errorf("reported\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
		}
	})
}

// NoLoss sees every subscription, however it is registered: one that ended
// before its cleanup (cancelled by the test, or by a cleanup that runs
// first, as a Recorder's does), and a handler that gave values up as dead
// letters, whether or not anything received them.
func TestNoLossSeesEndedSubscriptionsAndDeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		check := func(expected []topictest.Loss, setup func(tb testing.TB, b *topic.Broker)) []string {
			var b topic.Broker
			defer b.Shutdown(context.Background())
			return new(fakeTB).run(func(tb testing.TB) {
				topictest.NoLoss(tb, &b, expected...)
				setup(tb, &b)
			})
		}
		ended := func(tb testing.TB, b *topic.Broker) {
			_, cancel := b.Subscribe(topic.Buffer[order](1), topic.Name[order]("cancelled"))
			_, late := b.Subscribe(topic.Buffer[order](1), topic.Name[order]("cleaned up"))
			tb.Cleanup(late) // runs before NoLoss's cleanup
			for i := range 3 {
				b.Publish(order{i})
			}
			cancel()
		}
		want := []string{
			`topictest: subscription "cancelled" (topictest_test.order) lost 2 values: full 2`,
			`topictest: subscription "cleaned up" (topictest_test.order) lost 2 values: full 2`,
		}
		if errs := check(nil, ended); !slices.Equal(errs, want) {
			t.Errorf("reported\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
		}

		// Counted after Shutdown's drain, when NoLoss's watch has ended.
		afterShutdown := func(tb testing.TB, b *topic.Broker) {
			b.Subscribe(topic.Buffer[order](1), topic.Name[order]("late"))
			if err := b.Shutdown(context.Background()); err != nil {
				tb.Errorf("Shutdown: %v", err)
			}
			time.Sleep(time.Second) // the watch has seen the drain end, and ended
			b.Publish(order{1})
		}
		want = []string{`topictest: subscription "late" (topictest_test.order) lost 1 value: closed 1`}
		if errs := check(nil, afterShutdown); !slices.Equal(errs, want) {
			t.Errorf("reported\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
		}

		dead := func(tb testing.TB, b *topic.Broker) {
			b.Handle(func(context.Context, invoice) error { return topic.Permanent(errors.New("no")) },
				topic.Name[invoice]("payments"), topic.Buffer[invoice](64),
				topic.Retry[invoice](topic.RetryPolicy{Attempts: 3}))
			for i := range 50 {
				b.Publish(invoice{i})
			}
		}
		want = []string{`topictest: handler "payments" (topictest_test.invoice) dead-lettered 50 values; want 0`}
		if errs := check(nil, dead); !slices.Equal(errs, want) {
			t.Errorf("reported\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
		}
		if errs := check([]topictest.Loss{{Sub: "payments", DeadLettered: 50}}, dead); len(errs) != 0 {
			t.Errorf("dead letters as expected, reported %q", errs)
		}
	})
}

// A nil broker is a test's mistake: each function fails the test at once.
func TestNilBroker(t *testing.T) {
	for name, f := range map[string]func(testing.TB){
		"Record": func(tb testing.TB) { topictest.Record[order](tb, nil) },
		"Settle": func(tb testing.TB) { topictest.Settle(tb, nil, time.Second) },
		"NoLoss": func(tb testing.TB) { topictest.NoLoss(tb, nil) },
	} {
		if errs := new(fakeTB).run(f); len(errs) != 1 || !strings.Contains(errs[0], "nil broker") {
			t.Errorf("%s(nil) reported %q", name, errs)
		}
	}
}
