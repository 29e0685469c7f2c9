package topic_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
)

type (
	settleIn  struct{ N int }
	settleOut struct{ N int }
)

// Settle follows a pipeline of handlers to its end: a slow handler that
// publishes to a second one, which records. When Settle returns, every value
// published before it has gone through both.
func TestSettleWaitsForAPipelineOfHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		var mu sync.Mutex
		var got []int
		b.Handle(func(_ context.Context, v settleOut) error {
			time.Sleep(time.Millisecond)
			mu.Lock()
			got = append(got, v.N)
			mu.Unlock()
			return nil
		}, topic.Buffer[settleOut](100))
		b.Handle(func(_ context.Context, v settleIn) error {
			time.Sleep(time.Second)
			b.Publish(settleOut(v))
			return nil
		}, topic.Buffer[settleIn](100))
		const n = 20
		for i := range n {
			b.Publish(settleIn{i})
		}
		if err := b.Settle(context.Background()); err != nil {
			t.Fatalf("Settle: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != n {
			t.Fatalf("after Settle, the last handler had %d values, want %d", len(got), n)
		}
	})
}

// A value being retried is in hand: Settle waits for its retries, however
// long their backoff.
func TestSettleWaitsForRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		var calls atomic.Int32
		b.Handle(func(context.Context, settleIn) error {
			if calls.Add(1) < 3 {
				return errors.New("not yet")
			}
			return nil
		}, topic.Retry[settleIn](topic.RetryPolicy{Attempts: 5, Base: time.Minute}))
		b.Publish(settleIn{})
		start := time.Now()
		if err := b.Settle(context.Background()); err != nil {
			t.Fatalf("Settle: %v", err)
		}
		if calls.Load() != 3 || time.Since(start) < 3*time.Minute {
			t.Errorf("Settle returned after %d calls and %v, want 3 calls and 3m of backoff", calls.Load(), time.Since(start))
		}
		if st := b.Subscriptions()[0].Handler; st.Handled != 1 || st.Retried != 2 {
			t.Errorf("handler stats %+v, want Handled 1, Retried 2", *st)
		}
	})
}

// A handler that follows a retained type is idle once it has read its log
// to the end, whatever the size of its queue would have been.
func TestSettleWaitsForAHandlerFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		b.Retain[settleIn](topic.Retention{Count: 1000})
		var handled atomic.Int32
		b.Handle(func(context.Context, settleIn) error {
			time.Sleep(time.Millisecond)
			handled.Add(1)
			return nil
		}, topic.Follow[settleIn](), topic.Buffer[settleIn](1))
		for i := range 500 {
			b.Publish(settleIn{i})
		}
		if err := b.Settle(context.Background()); err != nil {
			t.Fatalf("Settle: %v", err)
		}
		if handled.Load() != 500 {
			t.Errorf("after Settle, %d values handled, want 500", handled.Load())
		}
	})
}

// A function that does not return holds Settle until its context ends:
// Settle then returns the context's error.
func TestSettleReturnsWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		release := make(chan struct{})
		b.Handle(func(context.Context, settleIn) error { <-release; return nil })
		b.Publish(settleIn{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err := b.Settle(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Settle with a stuck handler: %v, want %v", err, context.DeadlineExceeded)
		}
		done, stop := context.WithCancel(context.Background())
		stop()
		if err := b.Settle(done); !errors.Is(err, context.Canceled) {
			t.Errorf("Settle with an ended context: %v, want %v", err, context.Canceled)
		}
		close(release)
		if err := b.Settle(context.Background()); err != nil {
			t.Errorf("Settle once released: %v", err)
		}
	})
}

// Settle from a handler's function would wait for itself: it panics, and the
// handler counts the panic as its function's failure.
func TestSettleFromAHandlerPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		msg := make(chan string, 1)
		b.Handle(func(ctx context.Context, _ settleIn) error {
			defer func() { msg <- fmt1(recover()) }()
			return b.Settle(ctx)
		})
		b.Publish(settleIn{})
		if got := <-msg; !strings.HasPrefix(got, "topic: Settle called from a handler") {
			t.Errorf("Settle from a handler panicked with %q", got)
		}
	})
}

func fmt1(v any) string {
	s, _ := v.(string)
	return s
}

// With no handler, or after Shutdown, Settle returns at once.
func TestSettleWithoutHandlersAndAfterShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		if err := b.Settle(context.Background()); err != nil {
			t.Errorf("Settle of an empty broker: %v", err)
		}
		ch, _ := b.Subscribe[settleIn]() // not waited for
		b.Publish(settleIn{})
		if err := b.Settle(context.Background()); err != nil || len(ch) != 1 {
			t.Errorf("Settle with a channel subscription: %v, %d queued", err, len(ch))
		}
		b.Handle(func(context.Context, settleIn) error { return nil })
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := b.Settle(context.Background()); err != nil {
			t.Errorf("Settle after Shutdown: %v", err)
		}
	})
}

// Settle from many goroutines while handlers publish to each other, under
// the race detector: each returns, and after the last every value is
// handled.
func TestSettleFromManyGoroutines(t *testing.T) {
	var b topic.Broker
	var out atomic.Int32
	b.Handle(func(context.Context, settleOut) error { out.Add(1); return nil }, topic.Buffer[settleOut](1000))
	b.Handle(func(_ context.Context, v settleIn) error { b.Publish(settleOut(v)); return nil }, topic.Buffer[settleIn](1000))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				b.Publish(settleIn{g*100 + i})
			}
			if err := b.Settle(context.Background()); err != nil {
				t.Errorf("Settle: %v", err)
			}
		})
	}
	wg.Wait()
	if err := b.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.Load() != 400 {
		t.Errorf("%d values reached the end of the pipeline, want 400", out.Load())
	}
	b.Shutdown(context.Background())
}

// An idle handler's worker, plain or following a log, waits on a receive
// alone while nothing probes it: Settle wakes it to wait for its probes
// too, and finds it idle (were it not woken, Settle would wait for ever);
// once Settle has returned and the worker has handled another value, it
// waits on the receive alone again.
func TestSettleProbesHandlersThatWaitOnAReceiveAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b topic.Broker
		defer b.Shutdown(context.Background())
		b.Retain[settleOut](topic.Retention{Count: 16})
		var handled atomic.Int64
		b.Handle(func(context.Context, settleIn) error { handled.Add(1); return nil })
		b.Handle(func(context.Context, settleOut) error { handled.Add(1); return nil }, topic.Follow[settleOut]())
		waits := func(want string) {
			t.Helper()
			synctest.Wait()
			got := b.HandlerWaits()
			if len(got) != 2 || got[0] != want || got[1] != want {
				t.Fatalf("the idle workers wait in %q, want %q for both", got, want)
			}
		}
		for want := int64(2); want <= 4; want += 2 {
			b.Publish(settleIn{})
			b.Publish(settleOut{})
			waits("chan receive")
			if err := b.Settle(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := handled.Load(); got != want {
				t.Fatalf("Settle returned with %d values handled, want %d", got, want)
			}
		}
	})
}
