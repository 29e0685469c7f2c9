package topic_test

// Tests of a handler's retries: the delays a RetryPolicy gives, its bad
// input, and the counts a handler shows while it backs off before a retry.

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seedaa7df82c/topic"
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
	b.Handle(func(context.Context, hValue) error { return nil },
		topic.Retry[hValue](topic.RetryPolicy{Attempts: 2, Jitter: math.NaN()}))
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
		stop := b.Handle(func(context.Context, hValue) error {
			calls++
			return errors.New("down")
		}, topic.Retry[hValue](topic.RetryPolicy{Attempts: 100, Base: time.Minute, Max: time.Minute}))
		defer stop()
		b.Publish(hValue{1})
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

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
