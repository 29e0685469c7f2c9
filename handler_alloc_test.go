package topic_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/seedaa7df82c/topic"
)

// hWantAllocsPerValue measures deliver, which publishes one value and
// returns once the handler has handled it, end to end: the publication, the
// worker's receive, the call and the handler's counts. AllocsPerRun rounds
// the average down, so the total over all runs is checked as well: one
// allocation every few values would show there.
//
// Not parallel: allocations are counted for the whole process.
func hWantAllocsPerValue(t *testing.T, want uint64, deliver func()) {
	t.Helper()
	const runs = 1000
	for range 2 * 64 { // past the first value and a flush of the counts
		deliver()
	}
	if got := testing.AllocsPerRun(runs, deliver); got != float64(want) {
		t.Errorf("allocations per value = %v, want %d", got, want)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		deliver()
	}
	runtime.ReadMemStats(&after)
	if got := after.Mallocs - before.Mallocs; got != want*runs {
		t.Errorf("%d allocations for %d values, want %d", got, runs, want*runs)
	}
}

func TestAtMostOnceHandlerDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	done := make(chan int64, 1)
	stop := b.Handle(func(_ context.Context, p allocPayload) error {
		done <- p.Sum()
		return nil
	})
	defer stop()
	hWantAllocsPerValue(t, 0, func() {
		b.Publish(payload)
		<-done
	})
}

func TestSuccessfulAtLeastOnceHandlerDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	done := make(chan int64, 1)
	stop := b.Handle(func(_ context.Context, p allocPayload) error {
		done <- p.Sum()
		return nil
	}, topic.Retry[allocPayload](topic.RetryPolicy{Attempts: 3, Base: 1, Jitter: 0.5}), topic.Name[allocPayload]("audit"))
	defer stop()
	hWantAllocsPerValue(t, 0, func() {
		b.Publish(payload)
		<-done
	})
}

// A handler whose function fails is at most once: the error is counted,
// reported to no OnLoss, and costs nothing more.
func TestAtMostOnceHandlerErrorDoesNotAllocate(t *testing.T) {
	var b topic.Broker
	done := make(chan int64, 1)
	stop := b.Handle(func(_ context.Context, p allocPayload) error {
		done <- p.Sum()
		return errHandler
	})
	defer stop()
	hWantAllocsPerValue(t, 0, func() {
		b.Publish(payload)
		<-done
	})
}
