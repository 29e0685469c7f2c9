package topic_test

// Adversarial review of the handlers (a helper's, 2026-12-03): Delay never
// negative; a NaN Jitter is misuse; counts published during a retry's
// back-off; runtime.Goexit in an OnLoss or From function on the handler's
// goroutine, and twice; a Context ending a DiscardOnStop handler.

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	hr2V struct{ N int }
	hr2W struct{ N int }
)

func TestRetryDelayIsNeverNegative(t *testing.T) {
	for _, p := range []topic.RetryPolicy{
		{Attempts: 100, Base: 1},
		{Attempts: 100, Base: 1 << 20, Max: math.MaxInt64},
		{Attempts: 100, Base: time.Duration(1) << 62},
		{Attempts: 100, Base: 3},
		{Attempts: 100, Base: time.Second, Jitter: 5},          // Delay is exported: outside Retry's checks
		{Attempts: 100, Base: time.Second, Jitter: math.NaN()}, // likewise
	} {
		prev := time.Duration(0)
		for n := 1; n <= 100; n++ {
			d := p.Delay(n)
			if d < 0 {
				t.Fatalf("%+v.Delay(%d) = %v, negative", p, n, d)
			}
			if p.Jitter == 0 && d < prev {
				t.Fatalf("%+v.Delay(%d) = %v, less than Delay(%d) = %v", p, n, d, n-1, prev)
			}
			prev = d
		}
	}
	if d := (topic.RetryPolicy{Attempts: 100, Base: 1}).Delay(100); d != math.MaxInt64 {
		t.Errorf("Delay(100) of 1ns doubled = %v, want the largest Duration", d)
	}
}

func TestRetryWithANaNJitterPanics(t *testing.T) {
	defer func() {
		if p := recover(); p == nil {
			t.Error("Handle with RetryPolicy{Jitter: NaN} did not panic")
		}
	}()
	var b topic.Broker
	b.Handle(func(context.Context, hr2V) error { return nil },
		topic.Retry[hr2V](topic.RetryPolicy{Attempts: 2, Jitter: math.NaN()}))
}

// A handler that backs off before a retry, its queue empty, shows the value
// it holds and its retries: in Subscriptions, and to Watch.
func TestHandlerCountsAreSeenDuringARetrysBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		var mu sync.Mutex
		var retried uint64
		stopWatch := b.Watch(time.Second, func(i topic.Incident) {
			mu.Lock()
			retried += i.Retried
			mu.Unlock()
		})
		defer stopWatch()
		calls := 0
		stop := b.Handle(func(context.Context, hr2V) error {
			calls++
			return errors.New("down")
		}, topic.Retry[hr2V](topic.RetryPolicy{Attempts: 100, Base: time.Minute, Max: time.Minute}))
		defer stop()
		b.Publish(hr2V{1})
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		st := b.Subscriptions()[0]
		// Ten retries made, the eleventh waited for (counted as it begins).
		if st.Handler.Accepted != 1 || st.Handler.Retried != 11 || calls != 11 {
			t.Errorf("after %d calls, 10 minutes of one-minute back-offs: Accepted %d, Retried %d; want 1 and 11", calls, st.Handler.Accepted, st.Handler.Retried)
		}
		mu.Lock()
		if retried == 0 {
			t.Errorf("Watch reported no retry in ten minutes of back-off")
		}
		mu.Unlock()
		b.Shutdown(canceled())
	})
}

func countCause[T any](ls []topic.Loss[T], c topic.Cause) int {
	n := 0
	for _, l := range ls {
		if l.Cause == c {
			n++
		}
	}
	return n
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// runtime.Goexit in an OnLoss function that the handler's goroutine runs
// (as t.FailNow there would) ends the handler as one in f does: nothing it
// had queued is lost silently, and it leaves Subscriptions.
func TestGoexitInAHandlersOnLossLosesNothingSilently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		gate := make(chan struct{})
		handled := 0
		var lost []topic.Loss[hr2V]
		b.Handle(func(_ context.Context, v hr2V) error {
			if v.N == 0 {
				<-gate
				return errors.New("fail")
			}
			handled++
			return nil
		}, topic.Buffer[hr2V](16), topic.OnLoss(func(l topic.Loss[hr2V]) {
			lost = append(lost, l)
			if l.Cause == topic.Errored {
				runtime.Goexit()
			}
		}))
		for i := range 5 {
			b.Publish(hr2V{i})
		}
		close(gate)
		synctest.Wait()
		if n := len(b.Subscriptions()); n != 0 {
			t.Errorf("%d subscriptions listed once the handler's goroutine ended, want 0", n)
		}
		if err := b.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if handled != 0 || len(lost) != 5 || lost[0].Cause != topic.Errored || countCause(lost, topic.Discarded) != 4 {
			t.Errorf("handled %d, reported to OnLoss %+v; want the first Errored, then 4 Discarded", handled, lost)
		}
	})
}

// The same from a From function that the handler's dead letter reaches.
func TestGoexitInAFromOfADeadLetterEndsTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		gate := make(chan struct{})
		_, cancel := b.Subscribe(topic.From(func(topic.DeadLetter[hr2V]) (hr2W, bool) {
			runtime.Goexit()
			return hr2W{}, true
		}))
		defer cancel()
		var lost []topic.Loss[hr2V]
		b.Handle(func(_ context.Context, v hr2V) error {
			<-gate
			return errors.New("fail")
		}, topic.Buffer[hr2V](16), topic.Retry[hr2V](topic.RetryPolicy{Attempts: 1}),
			topic.OnLoss(func(l topic.Loss[hr2V]) { lost = append(lost, l) }))
		for i := range 5 {
			b.Publish(hr2V{i})
		}
		close(gate)
		synctest.Wait()
		for _, s := range b.Subscriptions() {
			if s.Handler != nil {
				t.Errorf("the handler is listed after its goroutine ended: %+v", s)
			}
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(lost) != 4 || countCause(lost, topic.Discarded) != 4 {
			t.Errorf("reported to OnLoss %+v; want the 4 queued after the dead letter, Discarded", lost)
		}
	})
}

// runtime.Goexit in f, then again in the OnLoss function told of it: the
// handler still ends, so stop, Shutdown and Settle return.
func TestGoexitInFAndInItsOnLossStillEndsTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		reports := 0
		stop := b.Handle(func(context.Context, hr2V) error {
			runtime.Goexit()
			return nil
		}, topic.Buffer[hr2V](8), topic.OnLoss(func(topic.Loss[hr2V]) {
			reports++
			runtime.Goexit()
		}))
		for i := range 3 {
			b.Publish(hr2V{i})
		}
		synctest.Wait()
		stop()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := b.Settle(context.Background()); err != nil {
			t.Errorf("Settle after Shutdown: %v", err)
		}
		if reports != 1 {
			t.Errorf("%d reports to OnLoss, want 1 (it ended the goroutine)", reports)
		}
	})
}

// A Context ends a handler as its stop would: with DiscardOnStop, what it
// queued is Discarded and the call in flight has its context cancelled.
func TestContextEndsADiscardOnStopHandlerAsItsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		ctx, cancel := context.WithCancel(context.Background())
		gate := make(chan struct{})
		handled := 0
		var inFlight error
		stop := b.Handle(func(c context.Context, v hr2V) error {
			if v.N == 0 {
				<-gate
				inFlight = c.Err()
			}
			handled++
			return nil
		}, topic.DiscardOnStop[hr2V](), topic.Context[hr2V](ctx), topic.Buffer[hr2V](8))
		for i := range 5 {
			b.Publish(hr2V{i})
		}
		synctest.Wait()
		cancel()
		synctest.Wait()
		close(gate)
		stop()
		if handled != 1 || inFlight == nil {
			t.Errorf("handled %d of 5, the call in flight's context %v; want 1 and cancelled, the rest Discarded", handled, inFlight)
		}
	})
}
