package topic_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

// The values of the shutdown tests: an order is charged, and a charge gets
// a receipt.
type (
	sOrder   struct{ N int }
	sCharged struct{ N int }
	sReceipt struct{ N int }
)

var errDeclined = errors.New("card declined")

// A two-stage pipeline, registered in either order: orders are charged by a
// first handler, which dead-letters the odd ones; charges get a receipt from
// a second handler, slower, which has emptied its queue by the time the
// first publishes. Shutdown drains it end to end: every result and every
// dead letter arrives, nothing is lost, the channel subscriptions end after
// the handlers, and the final counts stay readable.
func TestShutdownDrainsAPipelineOfHandlersEndToEnd(t *testing.T) {
	for _, downstreamFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("downstream first=%v", downstreamFirst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				receipts, _ := b.Subscribe(topic.Name[sReceipt]("receipts"), topic.Buffer[sReceipt](16))
				dead, _ := b.Subscribe(topic.Name[topic.DeadLetter[sOrder]]("dead"), topic.Buffer[topic.DeadLetter[sOrder]](16))
				orders := func() {
					b.Handle(func(_ context.Context, o sOrder) error {
						time.Sleep(time.Second) // the second stage idles meanwhile
						if o.N%2 == 1 {
							return errDeclined
						}
						b.Publish(sCharged(o))
						return nil
					}, topic.Name[sOrder]("orders"), topic.Retry[sOrder](topic.RetryPolicy{Attempts: 2, Base: time.Second}))
				}
				charges := func() {
					b.Handle(func(_ context.Context, c sCharged) error {
						time.Sleep(time.Millisecond)
						b.Publish(sReceipt(c))
						return nil
					}, topic.Name[sCharged]("charges"))
				}
				if downstreamFirst {
					charges()
					orders()
				} else {
					orders()
					charges()
				}
				for n := range 10 {
					b.Publish(sOrder{n})
				}
				if err := b.Shutdown(context.Background()); err != nil {
					t.Fatalf("Shutdown = %v", err)
				}
				var got []int
				for r := range receipts { // closed by Shutdown: the loop ends
					got = append(got, r.N)
				}
				if want := []int{0, 2, 4, 6, 8}; !slices.Equal(got, want) {
					t.Errorf("receipts %v, want %v", got, want)
				}
				got = got[:0]
				for d := range dead {
					got = append(got, d.Value.N)
				}
				if want := []int{1, 3, 5, 7, 9}; !slices.Equal(got, want) {
					t.Errorf("dead letters %v, want %v", got, want)
				}
				stats := map[string]topic.SubscriptionStats{}
				for _, st := range b.Subscriptions() {
					stats[st.Name] = st
				}
				if len(stats) != 4 {
					t.Fatalf("final snapshot: %v, want the 4 subscriptions", b.Subscriptions())
				}
				for name, st := range stats {
					if st.Lost.Total() != 0 {
						t.Errorf("%s lost %+v", name, st.Lost)
					}
				}
				wantHandler := func(name string, want topic.HandlerStats) {
					t.Helper()
					if h := stats[name].Handler; h == nil || *h != want {
						t.Errorf("%s: final handler counts %+v, want %+v", name, h, want)
					}
				}
				wantHandler("orders", topic.HandlerStats{Accepted: 10, Handled: 5, Retried: 5, DeadLettered: 5, AtLeastOnce: true})
				wantHandler("charges", topic.HandlerStats{Accepted: 5, Handled: 5})
				if n := b.Goroutines(); n != 0 {
					t.Errorf("%d goroutines of the broker after Shutdown", n)
				}
			})
		})
	}
}

// A handler that keeps publishing to itself (a countdown) keeps the drain
// going until it stops, and a value it publishes to a handler that is idle
// wakes that one: the drain ends only when none holds or has queued a
// value.
func TestShutdownWaitsForHandlersThatFeedEachOther(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var pings, pongs atomic.Int64
		b.Handle(func(_ context.Context, o sOrder) error {
			pings.Add(1)
			if o.N > 0 {
				b.Publish(sCharged{o.N - 1})
			}
			return nil
		})
		b.Handle(func(_ context.Context, c sCharged) error {
			pongs.Add(1)
			time.Sleep(time.Millisecond)
			b.Publish(sOrder(c))
			return nil
		})
		b.Publish(sOrder{100})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown = %v", err)
		}
		if pings.Load() != 101 || pongs.Load() != 100 {
			t.Errorf("%d orders and %d charges handled, want 101 and 100", pings.Load(), pongs.Load())
		}
	})
}

// Any number of handlers calling Shutdown at once, and main calling it, all
// return: each call from a handler once the others are idle, main's once
// the whole drain is done.
func TestShutdownFromManyHandlersAtOnceReturnsInEach(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const handlers = 5
		var b topic.Broker
		results := make(chan error, handlers)
		var after atomic.Int64
		var entered sync.WaitGroup
		entered.Add(handlers)
		for i := range handlers {
			b.Handle(func(_ context.Context, o sOrder) error {
				if o.N == 0 {
					entered.Done()
					entered.Wait() // every handler is inside its call
					results <- b.Shutdown(context.Background())
					b.Publish(sReceipt{i}) // goes on after its Shutdown returned
					return nil
				}
				after.Add(1)
				return nil
			}, topic.Name[sOrder](fmt.Sprint("h", i)))
		}
		receipts, _ := b.Subscribe(topic.Buffer[sReceipt](handlers))
		b.Publish(sOrder{0})
		b.Publish(sOrder{1}) // queued behind each call
		entered.Wait()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Errorf("main's Shutdown = %v", err)
		}
		for range handlers {
			if err := <-results; err != nil {
				t.Errorf("a handler's Shutdown = %v", err)
			}
		}
		if n := after.Load(); n != handlers {
			t.Errorf("%d handlers handled the value queued behind their call, want %d", n, handlers)
		}
		if got := len(takeAll(receipts)); got != handlers {
			t.Errorf("%d of the values published after the handlers' Shutdown arrived, want %d", got, handlers)
		}
	})
}

// Two handlers calling Shutdown with no other caller: both return, and the
// broker closes on its own once they are done.
func TestShutdownFromTwoHandlersAloneClosesTheBroker(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		results := make(chan error, 2)
		var entered sync.WaitGroup
		entered.Add(2)
		call := func(context.Context, sOrder) error {
			entered.Done()
			entered.Wait()
			results <- b.Shutdown(context.Background())
			return nil
		}
		b.Handle(call)
		b.Handle(call)
		ch, _ := b.Subscribe[sReceipt]()
		b.Publish(sOrder{})
		for range 2 {
			if err := <-results; err != nil {
				t.Errorf("Shutdown from a handler = %v", err)
			}
		}
		synctest.Wait()
		if _, ok := <-ch; ok {
			t.Error("the channel subscription is open after the drain")
		}
		if n := b.Goroutines(); n != 0 {
			t.Errorf("%d goroutines of the broker after the drain", n)
		}
	})
}

// What cannot be delivered once Shutdown has closed the subscriptions is
// counted, never silent: a handler whose function ignored the cancelled
// context publishes after Shutdown returned, and others publish after it;
// each subscription that would have received a value counts it as Closed
// and reports it to OnLoss, From and interface sources included, new types
// through any too.
func TestShutdownCountsWhatCanNoLongerBeDelivered(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var losses hLosses[sReceipt]
		b.Subscribe(topic.Name[sReceipt]("receipts"), losses.hook())
		b.Subscribe(topic.Name[any]("any"))
		b.Subscribe(topic.Name[sCharged]("from"), topic.From(func(r sReceipt) (sCharged, bool) { return sCharged(r), false }))
		release := make(chan struct{})
		done := make(chan struct{})
		var orderLosses hLosses[sOrder]
		b.Handle(func(ctx context.Context, o sOrder) error {
			if o.N == 0 {
				<-ctx.Done() // Shutdown's context ends: this one is cancelled
				<-release    // and ignores it a while
				b.Publish(sReceipt{1})
				close(done)
			}
			return nil
		}, topic.Name[sOrder]("orders"), orderLosses.hook())
		b.Publish(sOrder{0})
		b.Publish(sOrder{1}) // queued: discarded at the deadline
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != context.DeadlineExceeded {
			t.Errorf("Shutdown = %v, want %v", err, context.DeadlineExceeded)
		}
		close(release)
		<-done
		// The handler's goroutine discards order 1 once its function has
		// returned, after done is closed: let it, so that the losses of
		// orders are reported in the order checked below (it raced order
		// 2's Closed, and one CI run saw them the other way round).
		synctest.Wait()
		b.Publish(sReceipt{2})
		b.Publish(sOrder{2})
		b.Publish(struct{ X int }{3}) // a type never routed: only any matches it
		synctest.Wait()

		want := map[string]topic.Lost{
			"receipts": {Closed: 2},
			// Capacity one: order 0 queued, order 1 Full; then 2 receipts,
			// order 2 and the struct.
			"any":    {Full: 1, Closed: 4},
			"from":   {Closed: 2}, // its From function is not called
			"orders": {Discarded: 1, Closed: 1},
		}
		for _, st := range b.Subscriptions() {
			if w, ok := want[st.Name]; !ok || st.Lost != w {
				t.Errorf("%s (%v): lost %+v, want %+v", st.Name, st.Type, st.Lost, w)
			}
			delete(want, st.Name)
		}
		if len(want) != 0 {
			t.Errorf("not in the final snapshot: %v", want)
		}
		hWantLossesOf(t, &losses, topic.Loss[sReceipt]{Cause: topic.Closed, Value: sReceipt{1}},
			topic.Loss[sReceipt]{Cause: topic.Closed, Value: sReceipt{2}})
		hWantLossesOf(t, &orderLosses, topic.Loss[sOrder]{Cause: topic.Discarded, Value: sOrder{1}},
			topic.Loss[sOrder]{Cause: topic.Closed, Value: sOrder{2}})
	})
}

// hWantLossesOf checks the causes and values of the losses, in order.
func hWantLossesOf[T comparable](t *testing.T, l *hLosses[T], want ...topic.Loss[T]) {
	t.Helper()
	got := l.all()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].Cause == want[i].Cause && got[i].Value == want[i].Value
	}
	if !same {
		t.Errorf("losses:\n got %+v\nwant %+v", got, want)
	}
}

// During the drain, a publication from outside the handlers is delivered as
// before, to channel subscriptions and handlers alike; Subscribe and Handle
// register nothing.
func TestPublicationsFromOutsideAreDeliveredDuringTheDrain(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		gate := make(chan struct{})
		var handled []int
		b.Handle(func(_ context.Context, o sOrder) error {
			if o.N == 0 {
				<-gate // holds the drain open
			}
			handled = append(handled, o.N)
			return nil
		})
		receipts, _ := b.Subscribe(topic.Buffer[sReceipt](4))
		b.Publish(sOrder{0})
		synctest.Wait()
		result := make(chan error, 1)
		go func() { result <- b.Shutdown(context.Background()) }()
		synctest.Wait() // draining: the handler holds order 0

		b.Publish(sOrder{1})
		b.Publish(sReceipt{1})
		late, _ := b.Subscribe[sReceipt]()
		if _, ok := <-late; ok {
			t.Error("Subscribe during the drain gave an open channel")
		}
		close(gate)
		if err := <-result; err != nil {
			t.Errorf("Shutdown = %v", err)
		}
		if !slices.Equal(handled, []int{0, 1}) {
			t.Errorf("handled %v, want [0 1]", handled)
		}
		if got := takeAll(receipts); !slices.Equal(got, []sReceipt{{1}}) {
			t.Errorf("received %v during the drain, want [{1}]", got)
		}
	})
}

// A handler stopped before Shutdown, still handling its queue, is waited
// for, and its final counts are in the snapshot after Shutdown.
func TestShutdownWaitsForStoppedHandlersAndKeepsTheirCounts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		n := 0
		stop := b.Handle(func(context.Context, sOrder) error {
			time.Sleep(time.Second)
			n++
			return nil
		}, topic.Name[sOrder]("stopped"), topic.Buffer[sOrder](8))
		for i := range 3 {
			b.Publish(sOrder{i})
		}
		go stop()
		synctest.Wait()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown = %v", err)
		}
		if n != 3 {
			t.Errorf("handled %d of 3 before Shutdown returned", n)
		}
		st := b.Subscriptions()
		if len(st) != 1 || st[0].Name != "stopped" || st[0].Handler == nil || st[0].Handler.Handled != 3 {
			t.Errorf("final snapshot %+v, want the stopped handler with 3 handled", st)
		}
	})
}

// A value that reached a handler through a dead-letter source is never
// dead-lettered again: the usual re-drive (a handler of Job that also takes
// DeadLetter[Job] back) and a longer cycle over two types, with a concrete,
// an interface and an any source of dead letters, dead-letter one
// publication once and count the re-driven value as Errored.
func TestRedrivenDeadLettersDoNotLoop(t *testing.T) {
	retry := topic.RetryPolicy{Attempts: 2}
	fail := func(context.Context, sOrder) error { return errDeclined }
	redrives := map[string]func(b *topic.Broker, losses *hLosses[sOrder]){
		"DeadLetter[T]": func(b *topic.Broker, losses *hLosses[sOrder]) {
			b.Handle(fail, topic.Retry[sOrder](retry), losses.hook(), topic.Name[sOrder]("jobs"),
				topic.From(func(d topic.DeadLetter[sOrder]) (sOrder, bool) { return d.Value, true }))
		},
		"DeadLettered": func(b *topic.Broker, losses *hLosses[sOrder]) {
			b.Handle(fail, topic.Retry[sOrder](retry), losses.hook(), topic.Name[sOrder]("jobs"),
				topic.From(func(d topic.DeadLettered) (sOrder, bool) {
					o, ok := d.Letter().Value.(sOrder)
					return o, ok
				}))
		},
		"any": func(b *topic.Broker, losses *hLosses[sOrder]) {
			b.Handle(fail, topic.Retry[sOrder](retry), losses.hook(), topic.Name[sOrder]("jobs"),
				topic.From(func(x any) (sOrder, bool) {
					// The first source decides: this one takes the orders too.
					if d, ok := x.(topic.DeadLetter[sOrder]); ok {
						return d.Value, true
					}
					o, ok := x.(sOrder)
					return o, ok
				}))
		},
	}
	for name, redrive := range redrives {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				dead, _ := b.Subscribe(topic.Buffer[topic.DeadLettered](16))
				var losses hLosses[sOrder]
				redrive(&b, &losses)
				b.Publish(sOrder{7})
				synctest.Wait()
				if got := len(takeAll(dead)); got != 1 {
					t.Errorf("one publication dead-lettered %d times, want once", got)
				}
				st := hStats(t, &b, "jobs")
				if st.Handler.DeadLettered != 1 || st.Handler.Accepted != 2 || st.Lost.Errored != 1 {
					t.Errorf("accepted %d, dead-lettered %d, errored %d; want 2, 1, 1",
						st.Handler.Accepted, st.Handler.DeadLettered, st.Lost.Errored)
				}
				hWantLossesOf(t, &losses, topic.Loss[sOrder]{Cause: topic.Errored, Value: sOrder{7}})
				if st.Capacity != 2*topic.DefaultHandlerBuffer {
					t.Errorf("capacity %d, want the queue and the re-drive queue, %d", st.Capacity, 2*topic.DefaultHandlerBuffer)
				}
				_ = b.Shutdown(context.Background())
			})
		})
	}

	t.Run("a cycle over two types", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			dead, _ := b.Subscribe(topic.Buffer[topic.DeadLettered](16))
			b.Handle(fail, topic.Retry[sOrder](retry), topic.Name[sOrder]("orders"),
				topic.From(func(d topic.DeadLetter[sCharged]) (sOrder, bool) { return sOrder(d.Value), true }))
			b.Handle(func(context.Context, sCharged) error { return errDeclined },
				topic.Retry[sCharged](retry), topic.Name[sCharged]("charges"),
				topic.From(func(d topic.DeadLetter[sOrder]) (sCharged, bool) { return sCharged(d.Value), true }))
			b.Publish(sOrder{1})
			b.Publish(sCharged{2})
			synctest.Wait()
			if got := len(takeAll(dead)); got != 2 {
				t.Errorf("%d dead letters, want 2: one per publication", got)
			}
			for _, name := range []string{"orders", "charges"} {
				if st := hStats(t, &b, name); st.Handler.DeadLettered != 1 || st.Lost.Errored != 1 {
					t.Errorf("%s: dead-lettered %d, errored %d; want 1 and 1", name, st.Handler.DeadLettered, st.Lost.Errored)
				}
			}
			_ = b.Shutdown(context.Background())
		})
	})
}

// A value re-driven by a handler whose retries then succeed is handled like
// any other: the re-drive queue loses nothing and keeps its order.
func TestRedrivenValuesAreHandledInOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		failing := true
		var got []int
		b.Handle(func(_ context.Context, o sOrder) error {
			if failing && o.N < 100 {
				return errDeclined
			}
			got = append(got, o.N)
			return nil
		}, topic.Retry[sOrder](topic.RetryPolicy{Attempts: 1}),
			topic.From(func(d topic.DeadLetter[sOrder]) (sOrder, bool) {
				failing = false // the next attempts succeed
				return sOrder{d.Value.N + 100}, true
			}))
		for n := range 3 {
			b.Publish(sOrder{n})
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, []int{1, 2, 100}) {
			t.Errorf("handled %v, want [1 2 100]", got)
		}
	})
}

// A function can say that retrying is pointless: Permanent dead-letters the
// value at once, on whatever attempt, without the attempts left; the counts
// say so, and the dead letter's error reaches the one wrapped.
func TestPermanentErrorsDeadLetterAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		dead, _ := b.Subscribe(topic.Buffer[topic.DeadLetter[sOrder]](4))
		calls := map[int]int{}
		b.Handle(func(_ context.Context, o sOrder) error {
			calls[o.N]++
			if o.N == 1 && calls[o.N] == 1 {
				return errors.New("timeout") // retried: the second attempt is permanent
			}
			return topic.Permanent(fmt.Errorf("order %d: %w", o.N, errDeclined))
		}, topic.Name[sOrder]("orders"), topic.Retry[sOrder](topic.RetryPolicy{Attempts: 5, Base: time.Hour}))
		t0 := time.Now()
		b.Publish(sOrder{0})
		b.Publish(sOrder{1})
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d != time.Hour {
			t.Errorf("took %v, want one back-off of 1h", d)
		}
		got := takeAll(dead)
		if len(got) != 2 || got[0].Attempts != 1 || got[1].Attempts != 2 {
			t.Fatalf("dead letters %+v, want order 0 after 1 attempt and order 1 after 2", got)
		}
		for _, d := range got {
			var p *topic.PermanentError
			if !errors.Is(d.Err, errDeclined) || !errors.As(d.Err, &p) {
				t.Errorf("dead letter error %v: want a PermanentError wrapping errDeclined", d.Err)
			}
		}
		if st := hStats(t, &b, "orders").Handler; st.Retried != 1 || st.DeadLettered != 2 {
			t.Errorf("retried %d, dead-lettered %d; want 1 and 2", st.Retried, st.DeadLettered)
		}
		if topic.Permanent(nil) != nil {
			t.Error("Permanent(nil) is not nil")
		}
	})
}

// An at-most-once handler counts a permanent error as Errored, like any.
func TestPermanentErrorOfAnAtMostOnceHandlerIsErrored(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var losses hLosses[sOrder]
		b.Handle(func(context.Context, sOrder) error { return topic.Permanent(errDeclined) },
			topic.Name[sOrder]("once"), losses.hook())
		b.Publish(sOrder{1})
		synctest.Wait()
		hWantLossesOf(t, &losses, topic.Loss[sOrder]{Cause: topic.Errored, Value: sOrder{1}})
		_ = b.Shutdown(context.Background())
	})
}

// Done is closed by the first Shutdown call, at its start: while a handler
// still holds the drain, and for a Done channel asked for before or after.
func TestDoneIsClosedWhenShutdownBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		before := b.Done()
		if closed(before) {
			t.Fatal("Done closed before Shutdown")
		}
		release := make(chan struct{})
		b.Handle(func(context.Context, int) error { <-release; return nil })
		b.Publish(1)
		synctest.Wait()
		returned := make(chan error)
		go func() { returned <- b.Shutdown(context.Background()) }()
		synctest.Wait()
		if !closed(before) || !closed(b.Done()) {
			t.Fatal("Done not closed while Shutdown drains")
		}
		select {
		case <-returned:
			t.Fatal("Shutdown returned while a handler held a value")
		default:
		}
		close(release)
		if err := <-returned; err != nil {
			t.Fatal(err)
		}
		if b.Done() != before {
			t.Error("Done returned another channel")
		}
	})
	var b topic.Broker
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !closed(b.Done()) {
		t.Error("Done asked for after Shutdown is not closed")
	}
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A context that has ended before Shutdown is called ends first: Shutdown
// returns its error, every time, though the handler is idle and ready to
// answer the drain's probes (both were ready at once, and the drain took
// either before).
func TestShutdownWithAnEndedContextReturnsItsError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 50 {
		var b topic.Broker
		stop := b.Handle(func(context.Context, sOrder) error { return nil })
		defer stop()
		b.Publish(sOrder{})
		if err := b.Settle(context.Background()); err != nil { // its worker waits for work, or a probe
			t.Fatal(err)
		}
		if err := b.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: Shutdown with an ended context returned %v, want context.Canceled", i, err)
		}
	}
}

// The values of TestShutdownRacingPublishersLoseNothingUncounted: a tick
// reaches only its own subscription, a label only a fmt.Stringer one.
type (
	sTick  struct{ N int }
	sLabel int
)

func (l sLabel) String() string { return fmt.Sprint("label ", int(l)) }

// Shutdown returns ctx's error when ctx has ended before the call, whatever
// the handlers are doing (idle, none, busy), and nil with a live context.
func TestShutdownReturnsAnEndedContextsErrorWhateverTheHandlersDo(t *testing.T) {
	for run := range 50 {
		for _, kind := range []string{"none", "idle", "busy", "deadline"} {
			synctest.Test(t, func(t *testing.T) {
				var b topic.Broker
				switch kind {
				case "idle", "deadline":
					b.Handle(func(ctx context.Context, j handledJob) error { return nil })
					b.Publish(handledJob{1})
					synctest.Wait()
				case "busy":
					b.Handle(func(ctx context.Context, j handledJob) error { <-ctx.Done(); return nil })
					b.Publish(handledJob{1})
					synctest.Wait()
				}
				var ctx context.Context
				var cancel context.CancelFunc
				want := context.Canceled
				if kind == "deadline" {
					ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
					time.Sleep(2 * time.Millisecond)
					want = context.DeadlineExceeded
				} else {
					ctx, cancel = context.WithCancel(context.Background())
					cancel()
				}
				defer cancel()
				if err := b.Shutdown(ctx); !errors.Is(err, want) {
					t.Errorf("run %d, %s: Shutdown with an ended context returned %v, want %v", run, kind, err, want)
				}
				// A later call, with a live context, returns the outcome of the one drain.
				if err := b.Shutdown(context.Background()); !errors.Is(err, want) {
					t.Errorf("run %d, %s: a later Shutdown returned %v, want the drain's %v", run, kind, err, want)
				}
			})
		}
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			b.Handle(func(ctx context.Context, j handledJob) error { return nil })
			b.Publish(handledJob{1})
			synctest.Wait()
			if err := b.Shutdown(context.Background()); err != nil {
				t.Errorf("run %d: Shutdown with a live context returned %v", run, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := b.Shutdown(ctx); err != nil {
				t.Errorf("run %d: a later Shutdown with an ended context returned %v, want the drain's nil", run, err)
			}
		})
	}
}

// Shutdown called from a handler's function with an ended context returns
// that context's error.
func TestShutdownFromAHandlerWithAnEndedContextReturnsItsError(t *testing.T) {
	for run := range 30 {
		synctest.Test(t, func(t *testing.T) {
			var b topic.Broker
			errs := make(chan error, 1)
			b.Handle(func(_ context.Context, j handledJob) error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				errs <- b.Shutdown(ctx)
				return nil
			})
			b.Handle(func(ctx context.Context, j slowJob) error { return nil })
			b.Publish(handledJob{1})
			synctest.Wait()
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Errorf("run %d: Shutdown from a handler with an ended context returned %v", run, err)
			}
			if err := b.Shutdown(context.Background()); !errors.Is(err, context.Canceled) {
				t.Errorf("run %d: a later Shutdown returned %v, want the drain's Canceled", run, err)
			}
		})
	}
}

// Publishers racing Shutdown lose nothing uncounted: once they stop, what
// each subscription received plus what it lost (Full before the close,
// Closed after) is what was published to it, for a plain subscription
// alone on its route, whose full buffer is counted without the guard, and
// an interface one. (The plain subscription came up one to three values
// short in one round of ten to three when a drop counted without the guard
// landed after the close had frozen the Full count.)
func TestShutdownRacingPublishersLoseNothingUncounted(t *testing.T) {
	for round := range 10 {
		var b topic.Broker
		ticks, _ := b.Subscribe(topic.Name[sTick]("ticks"), topic.Buffer[sTick](2))
		labels, _ := b.Subscribe(topic.Name[fmt.Stringer]("labels"), topic.Buffer[fmt.Stringer](2))
		var published [2]atomic.Int64
		stop := make(chan struct{})
		var publishers sync.WaitGroup
		for p := range 6 {
			publishers.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if p%2 == 0 {
						b.Publish(sTick{i})
					} else {
						b.Publish(sLabel(i))
					}
					published[p%2].Add(1)
				}
			})
		}
		var received [2]atomic.Int64
		var receivers sync.WaitGroup
		receivers.Go(func() {
			for range ticks {
				received[0].Add(1)
			}
		})
		receivers.Go(func() {
			for range labels {
				received[1].Add(1)
			}
		})
		// Pacing only: the counts must add up however the races fall.
		time.Sleep(time.Duration(round%5+1) * time.Millisecond)
		if err := b.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // publications after Shutdown: Closed
		close(stop)
		publishers.Wait()
		receivers.Wait()
		for i, name := range []string{"ticks", "labels"} {
			lost := statsNamed(t, &b, name).Lost
			if got := received[i].Load() + int64(lost.Total()); got != published[i].Load() {
				t.Errorf("round %d, %s: received %d + lost %+v = %d, published %d",
					round, name, received[i].Load(), lost, got, published[i].Load())
			}
		}
	}
}

// A Shutdown cut short returns before the handlers' goroutines have
// discarded and counted what they held; Settle then waits until they have,
// and the counts are final: what was handled and what was discarded make up
// what was accepted.
func TestSettleAfterACutShutdownWaitsForTheFinalCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 500
		var b topic.Broker
		var handled atomic.Uint64
		b.Handle(func(ctx context.Context, v valA) error {
			if handled.Load() == 19 {
				<-ctx.Done() // until Shutdown is cut short
				return ctx.Err()
			}
			handled.Add(1)
			return nil
		}, topic.Name[valA]("slow"), topic.Buffer[valA](n))
		for i := range n {
			b.Publish(valA{i})
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown returned %v; want its context's deadline", err)
		}
		if err := b.Settle(context.Background()); err != nil {
			t.Fatalf("Settle after Shutdown: %v", err)
		}
		st := hStats(t, &b, "slow")
		if h := st.Handler; h.Accepted != n || h.Handled != 19 || st.Lost.Discarded != n-19 || st.Lost.Total() != n-19 {
			t.Errorf("after Settle: accepted %d, handled %d, lost %+v; want %d accepted, 19 handled, %d discarded", h.Accepted, h.Handled, st.Lost, n, n-19)
		}
	})
}
