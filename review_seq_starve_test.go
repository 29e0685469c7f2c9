package topic

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rsSV is the retained type of the starvation attack.
type rsSV struct{ P, I int }

// TestReviewSeqAPublisherInALoopDoesNotStarveAnother: one goroutine
// publishes a retained type in a loop, each publication holding the
// sequencing point while it sends to many subscriptions of Record[T];
// another publishes now and then, each time once the first is publishing
// again. It counts the looping publications made while one of the other's
// waited: with sync.Mutex (whose starvation mode hands the lock to a waiter
// after 1 ms) a few; a contender that is only woken to race a publisher
// that takes the lock again the moment it lets go waits for hundreds. The
// bound is on that count, not on time; the 60 s timeout only detects a hang.
func TestReviewSeqAPublisherInALoopDoesNotStarveAnother(t *testing.T) {
	var b Broker
	b.Retain[rsSV](Retention{Count: 64, NoTime: true})
	subs := 20000
	for range subs {
		_, c := b.Subscribe[Record[rsSV]](Buffer[Record[rsSV]](1))
		defer c()
	}
	var stop atomic.Bool
	var published atomic.Int64
	var hg sync.WaitGroup
	hg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			b.Publish(rsSV{0, i})
			published.Add(1)
		}
	})
	defer func() { stop.Store(true); hg.Wait() }()
	const rounds, fair = 50, 64
	deadline := time.Now().Add(60 * time.Second)
	var worst time.Duration
	for k := range rounds {
		// Wait for the looping publisher to publish twice more: it is
		// taking the lock again as it lets go of it.
		for p := published.Load(); published.Load() < p+2; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the looping publisher stalled", k)
			}
			time.Sleep(50 * time.Microsecond)
		}
		start, before := time.Now(), published.Load()
		done := make(chan struct{})
		go func() { b.Publish(rsSV{1, k}); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("round %d: the other publisher never got through (worst wait %v) beside one publishing in a loop (%d publications): starved", k, worst, published.Load())
		}
		wait := time.Since(start)
		worst = max(worst, wait)
		if n := published.Load() - before; n > fair {
			t.Fatalf("round %d: one publication waited %v, while the looping publisher published %d times (more than %d): starved", k, wait, n, fair)
		}
	}
	t.Logf("%d publications beside the loop, worst wait %v; the loop published %d", rounds, worst, published.Load())
}
